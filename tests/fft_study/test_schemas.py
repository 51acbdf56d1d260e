"""The fft.* schemas through tracker: good records round-trip, bad ones are SchemaErrors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tracker_fft_study import FFTHeatmap, FFTParams, learned_model_params

import tracker

COUNTS = dict(twiddles=10, gates=5, freq_mask=0, denoiser=0, unitary=0, mel_filters=0,
              q8_packed=0)

GOOD = {
    "fft.loss_point": [
        dict(total_loss=0.41, mel_err=0.2, spec_err=0.1, welch_err=0.05, mean_gate=0.7),
        dict(model_id="m", total_loss=math.nan, mel_err=math.nan, spec_err=0, welch_err=1,
             mean_gate=math.nan),
        dict(model_id="m", total_loss=-1.5, mel_err=np.float32(0.5), spec_err=np.float64(0.0),
             welch_err=0.0, mean_gate=1),
    ],
    "fft.params": [
        dict(model_id="m", variant="butterfly", n_fft=2, **COUNTS),
        dict(model_id="m", variant="b", n_fft=np.int64(1024), **COUNTS, total_params=15,
             memory_bytes=60),
    ],
    "fft.heatmap": [
        dict(model_id="m", stages=3, butterflies=4, gates=[0.0] * 6 + [1.0] * 6),
        dict(model_id="m", stages=1, butterflies=2, gates=np.array([0.5, 0.25]),
             freq_mask=[1.0, -2.0, 0.0], twiddle_mag=(0.0, 3.0)),
    ],
    "fft.landscape": [
        dict(model_id="m", x_label="a", y_label="b", x=[0.0, 1.0, 2.0], y=[5.0, 6.0],
             z=[[1.0, 2.0, 3.0], [4.0, math.inf, math.nan]]),
        dict(model_id="m", x_label="a", y_label="b", x=[1.0], y=[2.0], z=np.array([[0.5]])),
    ],
    "fft.trace": [
        dict(model_id="m", variant="v", n_fft=512, batch=1, train_steps=0, final_mel_err=0.0,
             final_spec_err=math.nan),
    ],
}

# (schema, fields, field named in the error, text of the error)
BAD = [
    ("fft.loss_point", dict(GOOD["fft.loss_point"][0], mel_err=-0.1),
     "mel_err", "expected a number >= 0 (or NaN), given -0.1"),
    ("fft.loss_point", dict(GOOD["fft.loss_point"][0], mean_gate=1.5),
     "mean_gate", "expected a number in [0, 1] (or NaN), given 1.5"),
    ("fft.loss_point", dict(GOOD["fft.loss_point"][0], spec_err="0.1"),
     "spec_err", "expected a float, given str '0.1'"),
    ("fft.loss_point", {k: v for k, v in GOOD["fft.loss_point"][0].items() if k != "welch_err"},
     "welch_err", "expected a value (required field)"),
    ("fft.params", dict(model_id="m", variant="v", n_fft=48, **COUNTS),
     "n_fft", "expected a power of two >= 2, given 48"),
    ("fft.params", dict(model_id="m", variant="v", n_fft=1, **COUNTS),
     "n_fft", "expected a power of two >= 2, given 1"),
    ("fft.params", dict(model_id="m", variant="v", n_fft=64.0, **COUNTS),
     "n_fft", "expected an int, given float 64.0"),
    ("fft.params", dict(model_id="m", variant="v", n_fft=64, **{**COUNTS, "denoiser": -3}),
     "denoiser", "expected an int >= 0, given -3"),
    ("fft.params", dict(model_id="m", variant="v", n_fft=64, **COUNTS, total_params=16),
     "total_params", "expected the sum of the counts = 15, given 16"),
    ("fft.params", dict(model_id="m", variant="v", n_fft=64, **COUNTS, memory_bytes=15),
     "memory_bytes", "expected 4 * total_params = 60, given 15"),
    ("fft.heatmap", dict(model_id="m", stages=3, butterflies=4, gates=[0.5] * 10),
     "gates", "expected stages*butterflies = 12 values, given 10"),
    ("fft.heatmap", dict(model_id="m", stages=1, butterflies=2, gates=[0.5, -0.01]),
     "gates", "item 1: expected a number in [0, 1], given -0.01"),
    ("fft.heatmap", dict(model_id="m", stages=1, butterflies=2, gates=[math.nan, 0.5]),
     "gates", "item 0: expected a number in [0, 1], given nan"),
    ("fft.heatmap", dict(model_id="m", stages=0, butterflies=2, gates=[]),
     "stages", "expected an int > 0, given 0"),
    ("fft.heatmap", dict(model_id="m", stages=1, butterflies=2, gates=[1, 1],
                         twiddle_mag=[1.0]),
     "twiddle_mag", "expected stages*butterflies = 2 values, given 1"),
    ("fft.heatmap", dict(model_id="m", stages=1, butterflies=2, gates=[1, 1],
                         twiddle_mag=[1.0, -1.0]),
     "twiddle_mag", "item 1: expected a number >= 0, given -1.0"),
    ("fft.heatmap", dict(model_id="m", stages=1, butterflies=2, gates=[1, 1],
                         freq_mask=[math.inf]),
     "freq_mask", "item 0: expected a finite number, given inf"),
    ("fft.landscape", dict(GOOD["fft.landscape"][0], z=[[1.0, 2.0, 3.0]]),
     "z", "expected len(y) = 2 rows, given 1 rows"),
    ("fft.landscape", dict(GOOD["fft.landscape"][0], z=[[1.0, 2.0, 3.0], [1.0, 2.0]]),
     "z", "expected rows of len(x) = 3 values, given 2 in row 1"),
    ("fft.landscape", dict(GOOD["fft.landscape"][0], x=[], z=[[], []]),
     "x", "expected a non-empty list, given []"),
    ("fft.landscape", dict(GOOD["fft.landscape"][0], y=[math.nan, 1.0]),
     "y", "item 0: expected a finite number, given nan"),
    ("fft.trace", dict(GOOD["fft.trace"][0], n_fft=100),
     "n_fft", "expected a power of two >= 2, given 100"),
    ("fft.trace", dict(GOOD["fft.trace"][0], batch=0),
     "batch", "expected an int > 0, given 0"),
    ("fft.trace", dict(GOOD["fft.trace"][0], train_steps=-1),
     "train_steps", "expected an int >= 0, given -1"),
    ("fft.trace", dict(GOOD["fft.trace"][0], final_spec_err=-2.0),
     "final_spec_err", "expected a number >= 0 (or NaN), given -2.0"),
]


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple, np.ndarray)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


@pytest.mark.parametrize(("schema", "fields"),
                         [(s, f) for s, cases in GOOD.items() for f in cases])
def test_good_records_round_trip(run, tracker_store, schema, fields):
    run.log_record(schema, step=3, **fields)
    (rec,) = tracker.open_store(tracker_store).run(run.id).records(schema)
    assert rec.step == 3
    for name, value in fields.items():
        assert _same(np.asarray(value).tolist() if isinstance(value, np.ndarray) else value,
                     rec.data[name]), name


@pytest.mark.parametrize(("schema", "fields", "field", "message"), BAD,
                         ids=[f"{s}-{f}-{i}" for i, (s, _, f, _) in enumerate(BAD)])
def test_bad_records_are_schema_errors(run, tracker_store, schema, fields, field, message):
    with pytest.raises(tracker.SchemaError) as caught:
        run.log_record(schema, **fields)
    err = caught.value
    assert err.schema == schema
    assert f"schema {schema!r}" in str(err)
    assert f"{field}: {message}" in str(err)
    assert field in [p[0] for p in err.problems]
    # Nothing of the refused record was written, and the run goes on.
    run.log_record("fft.trace", **GOOD["fft.trace"][0])
    view = tracker.open_store(tracker_store).run(run.id)
    assert [r.schema for r in view.records() if r.schema.startswith("fft.")] == ["fft.trace"]


def test_every_problem_of_a_record_is_named(run):
    with pytest.raises(tracker.SchemaError) as caught:
        run.log_record("fft.params", model_id="m", variant="v", n_fft=12,
                       **{**COUNTS, "gates": -1})
    text = str(caught.value)
    assert "n_fft: expected a power of two >= 2, given 12" in text
    assert "gates: expected an int >= 0, given -1" in text


def test_params_derived_fields_are_stored(run, tracker_store):
    run.log_record("fft.params", model_id="m", variant="learned", n_fft=64,
                   **learned_model_params(64, 40))
    table = tracker.open_store(tracker_store).run(run.id).table("fft.params")
    total = 384 + 192 + 128 + 256 + 40 * 33
    assert list(table["total_params"]) == [total]  # optional int: a list column
    assert list(table["memory_bytes"]) == [4 * total]
    (row,) = table.rows()
    assert isinstance(row, FFTParams) and row.total_params == total


def test_log_record_takes_instances(run, tracker_store):
    heat = FFTHeatmap(model_id="m", stages=1, butterflies=2, gates=[0.25, 0.75])
    run.log_record("fft.heatmap", heat, step=4)
    (row,) = tracker.open_store(tracker_store).run(run.id).table("fft.heatmap").rows()
    assert row == heat


def test_step_and_time_are_not_fields(run):
    with pytest.raises(tracker.SchemaError, match="step"):
        run.log_record("fft.trace", {**GOOD["fft.trace"][0], "step": 1})


def test_classes_compute_and_check_derived_fields_directly():
    p = FFTParams(model_id="m", variant="v", n_fft=8, **COUNTS)
    assert (p.total_params, p.memory_bytes) == (15, 60)
    with pytest.raises(ValueError, match="total_params: expected the sum of the counts = 15"):
        FFTParams(model_id="m", variant="v", n_fft=8, **COUNTS, total_params=14)
