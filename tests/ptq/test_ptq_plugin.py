"""The ptq plugin through a real run: entry point, validation, and every summary's numbers."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from tracker_ptq import layer_record, quantize

import tracker

LAYER = dict(name="fc1", shape=[4, 3], scale=0.02, w_min=-1.0, w_max=1.27, max_abs_err=0.009,
             mse=1e-5, bytes_fp32=64, bytes_int8=28)


def summaries(tracker_store, run_id):
    return {s.summarizer: s for s in tracker.open_store(tracker_store).run(run_id).summarize("ptq.layer")}


def test_plugin_is_loaded_from_its_entry_point(tracker_store):
    info = {p.name: p for p in tracker.list_plugins()}["ptq"]
    assert info.status == "ok"
    assert info.distribution == "tracker-ptq"
    assert info.schemas == ["ptq.layer"]
    assert info.summarizers == ["ptq.layers", "ptq.totals"]


@pytest.mark.parametrize(("changes", "field", "expected"), [
    ({"shape": [4, 0]}, "shape", "item 1: expected an int > 0, given 0"),
    ({"shape": [4, 3, 1]}, "shape", "expected 2 items, given 3"),
    ({"shape": [4.0, 3.0]}, "shape", "int"),
    ({"scale": 0.0}, "scale", "expected a number > 0, given 0.0"),
    ({"scale": "0.1"}, "scale", "float"),
    ({"bytes_int8": 2.5}, "bytes_int8", "int"),
    ({"w_min": 2.0}, "w_min", "at most w_max"),
    ({"mse": math.nan}, "mse", "expected a number >= 0, given nan"),
])
def test_bad_records_are_schema_errors_and_nothing_is_written(tracker_store, changes, field, expected):
    with tracker.start_run(project="ptq", store=tracker_store) as run:
        with pytest.raises(tracker.SchemaError) as info:
            run.log_record("ptq.layer", {**LAYER, **changes})
        run.log_record("ptq.layer", LAYER)
    message = str(info.value)
    assert "ptq.layer" in message and f"{field}:" in message and expected in message
    assert "given" in message
    assert len(tracker.open_store(tracker_store).run(run.id).table("ptq.layer")) == 1


def test_default_scheme_and_numpy_values_are_accepted(tracker_store):
    fields = {k: v for k, v in LAYER.items()}
    fields.update(shape=np.array([4, 3]), scale=np.float32(0.02), bytes_fp32=np.int64(64))
    with tracker.start_run(project="ptq", store=tracker_store) as run:
        run.log_record("ptq.layer", fields)
    (rec,) = tracker.open_store(tracker_store).run(run.id).table("ptq.layer").rows()
    assert rec.scheme == "symmetric_per_tensor_int8" and rec.shape == [4, 3]


def test_summaries_of_hand_made_records(tracker_store):
    with tracker.start_run(project="ptq", store=tracker_store) as run:
        run.log_record("ptq.layer", LAYER)
        run.log_record("ptq.layer", {**LAYER, "name": "fc2", "shape": [2, 4], "scale": 0.01,
                                     "max_abs_err": 0.02, "bytes_fp32": 40, "bytes_int8": 16})
        run.log_record("ptq.layer", {**LAYER, "max_abs_err": 0.004, "bytes_int8": 40,
                                     "scheme": "symmetric_per_channel_int8"})
        # fc1 re-quantised per tensor: replaces the first record, with an error exactly at scale/2.
        run.log_record("ptq.layer", {**LAYER, "max_abs_err": 0.01})
    got = summaries(tracker_store, run.id)
    layers, totals = got["ptq.layers"], got["ptq.totals"]

    assert [(r["layer"], r["scheme"]) for r in layers.rows] == [
        ("fc1", "symmetric_per_tensor_int8"), ("fc2", "symmetric_per_tensor_int8"),
        ("fc1", "symmetric_per_channel_int8")]
    fc1, fc2, fc1_pc = layers.rows
    assert fc1["max_abs_err"] == 0.01 and fc1["bound"] == 0.01 and fc1["over_bound"] is False
    assert fc2["over_bound"] is True and fc2["bound"] == 0.005
    assert fc2["shape"] == "2x4" and fc2["ratio"] == 40 / 16
    assert fc1_pc["over_bound"] is False and fc1_pc["ratio"] == 64 / 40
    assert any("fc2 (symmetric_per_tensor_int8)" in n and "over scale/2" in n
               for n in layers.notes)
    assert any(n.startswith("largest error: fc2") for n in layers.notes)
    assert any("1 earlier record" in n for n in layers.notes)

    per_tensor, per_channel = totals.rows
    assert per_tensor == {"scheme": "symmetric_per_tensor_int8", "layers": 2,
                          "bytes_fp32": 64 + 40, "bytes_int8": 28 + 16,
                          "compression_ratio": (64 + 40) / (28 + 16), "worst_layer": "fc2",
                          "worst_max_abs_err": 0.02, "over_bound": "fc2"}
    assert per_channel == {"scheme": "symmetric_per_channel_int8", "layers": 1,
                           "bytes_fp32": 64, "bytes_int8": 40, "compression_ratio": 1.6,
                           "worst_layer": "fc1", "worst_max_abs_err": 0.004, "over_bound": "none"}


def test_summaries_of_a_quantised_model(tracker_store):
    rng = np.random.default_rng(0)
    layers = {"fc1": (rng.normal(size=(32, 16)), rng.normal(size=32)),
              "fc2": (rng.normal(size=(10, 32)) * 0.1, rng.normal(size=10))}
    with tracker.start_run(project="ptq", store=tracker_store) as run:
        for name, (w, b) in layers.items():
            run.log_record("ptq.layer", layer_record(quantize(name, w, b), w))
        # A scale far too small clips almost every weight: flagged.
        w = layers["fc2"][0]
        run.log_record("ptq.layer", layer_record(quantize("fc2_clipped", w, scale=1e-4), w))
    got = summaries(tracker_store, run.id)
    rows = {r["layer"]: r for r in got["ptq.layers"].rows}
    for name, (w, _b) in layers.items():
        scale = np.float32(np.abs(w).max() / 127)
        deq = np.clip(np.round(w / np.float64(scale)), -127, 127) * np.float64(scale)
        assert rows[name]["scale"] == pytest.approx(float(scale), rel=1e-12)
        assert rows[name]["max_abs_err"] == pytest.approx(np.abs(deq - w).max(), rel=1e-9)
        assert rows[name]["mse"] == pytest.approx(np.mean((deq - w) ** 2), rel=1e-9)
        assert rows[name]["bytes_fp32"] == 4 * w.size
        assert rows[name]["bytes_int8"] == w.size and rows[name]["ratio"] == 4.0
        assert rows[name]["over_bound"] is False
    assert rows["fc2_clipped"]["over_bound"] is True
    assert rows["fc2_clipped"]["max_abs_err"] == pytest.approx(
        np.abs(layers["fc2"][0]).max() - 127 * np.float64(np.float32(1e-4)))
    (total,) = got["ptq.totals"].rows
    int8 = sum(w.size for w, _ in layers.values()) + 320
    assert (total["bytes_fp32"], total["bytes_int8"]) == (4 * int8, int8)
    assert total["compression_ratio"] == 4.0
    assert total["over_bound"] == "fc2_clipped" and total["worst_layer"] == "fc2_clipped"


def test_cli_summary_as_json(tracker_store):
    w = np.random.default_rng(1).normal(size=(8, 8))
    with tracker.start_run(project="ptq", store=tracker_store) as run:
        run.log_record("ptq.layer", layer_record(quantize("fc", w), w))
    out = subprocess.run([sys.executable, "-m", "tracker", "--store", str(tracker_store), "summary",
                          run.id, "--schema", "ptq.layer", "--format", "json"],
                         capture_output=True, text=True, check=True)
    by_name = {s["summarizer"]: s for s in json.loads(out.stdout)["summaries"]}
    (total,) = by_name["ptq.totals"]["rows"]
    assert total["bytes_fp32"] == 4 * 64 and total["bytes_int8"] == 64
    assert total["compression_ratio"] == 4.0
    assert by_name["ptq.layers"]["rows"][0]["layer"] == "fc"
