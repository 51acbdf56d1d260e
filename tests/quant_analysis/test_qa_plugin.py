"""The quant_analysis plugin through a real run: entry point, validation, every summary's numbers."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from tracker_quant_analysis import calibrate_per_channel, calibrate_per_tensor, error_record

import tracker

ERROR = dict(tensor="w", bits=8, granularity="per_tensor", mode="symmetric", mse=1e-5, mae=2e-3,
             max_error=4e-3, sqnr_db=40.0, outlier_rate=0.01, num_samples=100,
             theoretical_max_error=4e-3)


def summaries(tracker_store, run_id):
    return {s.summarizer: s for s in tracker.open_store(tracker_store).run(run_id).summarize("quant.error")}


def test_plugin_is_loaded_from_its_entry_point(tracker_store):
    info = {p.name: p for p in tracker.list_plugins()}["quant_analysis"]
    assert info.status == "ok"
    assert info.distribution == "tracker-quant-analysis"
    assert info.schemas == ["quant.error"]
    assert info.summarizers == ["quant.errors", "quant.granularity"]


@pytest.mark.parametrize(("changes", "field", "expected"), [
    ({"bits": 1}, "bits", "expected an int in [2, 16], given 1"),
    ({"bits": 8.0}, "bits", "int"),
    ({"granularity": "per_row"}, "granularity", "'per_tensor', 'per_channel'"),
    ({"mode": "asym"}, "mode", "'symmetric', 'asymmetric'"),
    ({"sqnr_db": math.nan}, "sqnr_db", "other than NaN (infinities allowed), given nan"),
    ({"outlier_rate": 1.01}, "outlier_rate", "[0, 1]"),
    ({"num_samples": -3}, "num_samples", "int >= 0"),
    ({"tensor": 3}, "tensor", "str"),
])
def test_bad_records_are_schema_errors_and_nothing_is_written(tracker_store, changes, field, expected):
    with tracker.start_run(project="quant", store=tracker_store) as run:
        with pytest.raises(tracker.SchemaError) as info:
            run.log_record("quant.error", {**ERROR, **changes})
        run.log_record("quant.error", ERROR)
    message = str(info.value)
    assert "quant.error" in message and f"{field}:" in message and expected in message
    assert "given" in message
    assert len(tracker.open_store(tracker_store).run(run.id).table("quant.error")) == 1


def test_infinite_sqnr_round_trips(tracker_store):
    with tracker.start_run(project="quant", store=tracker_store) as run:
        run.log_record("quant.error", error_record("zeros", np.zeros(8),
                                                   calibrate_per_tensor(np.zeros(8))))
    (rec,) = tracker.open_store(tracker_store).run(run.id).table("quant.error").rows()
    assert rec.sqnr_db == math.inf and rec.mse == 0


def theory(bits):
    return 6.02 * bits + 1.76


def test_summaries_of_hand_made_records(tracker_store):
    with tracker.start_run(project="quant", store=tracker_store) as run:
        run.log_record("quant.error", ERROR)
        run.log_record("quant.error", {**ERROR, "granularity": "per_channel", "mse": 2.5e-6,
                                       "max_error": 2e-3, "sqnr_db": 46.0})
        run.log_record("quant.error", {**ERROR, "tensor": "act", "bits": 4, "mode": "asymmetric",
                                       "mse": 0.01, "max_error": 0.5, "sqnr_db": 20.0,
                                       "theoretical_max_error": 0.1, "outlier_rate": 0.2})
        run.log_record("quant.error", {**ERROR, "tensor": "z", "mse": 0.0, "mae": 0.0,
                                       "max_error": 0.0, "sqnr_db": math.inf})
        # w analysed again per tensor: replaces the first record.
        run.log_record("quant.error", {**ERROR, "sqnr_db": 41.0})
    got = summaries(tracker_store, run.id)
    errors, gran = got["quant.errors"], got["quant.granularity"]

    rows = {(r["tensor"], r["granularity"]): r for r in errors.rows}
    assert list(rows) == [("w", "per_tensor"), ("w", "per_channel"), ("act", "per_tensor"),
                          ("z", "per_tensor")]
    w = rows[("w", "per_tensor")]
    assert w["sqnr_db"] == 41.0
    assert w["theoretical_sqnr_db"] == pytest.approx(theory(8))
    assert w["gap_db"] == pytest.approx(theory(8) - 41.0)
    assert w["bound"] == 4e-3 and w["over_bound"] is False  # exactly at the bound
    act = rows[("act", "per_tensor")]
    assert act["gap_db"] == pytest.approx(theory(4) - 20.0)
    assert act["over_bound"] is True and act["outlier_rate"] == 0.2 and act["bits"] == 4
    assert rows[("z", "per_tensor")]["sqnr_db"] == math.inf
    assert rows[("z", "per_tensor")]["gap_db"] == -math.inf
    assert errors.notes[0] == (f"worst tensor: act (4-bit per_tensor asymmetric), SQNR 20.00 dB, "
                               f"{theory(4) - 20:.2f} dB below theory")
    assert any("over its bound" in n and "act (4-bit" in n for n in errors.notes)
    assert any("1 earlier record" in n for n in errors.notes)

    (row,) = gran.rows
    assert row == {"tensor": "w", "bits": 8, "mode": "symmetric", "mse_per_tensor": 1e-5,
                   "mse_per_channel": 2.5e-6, "mse_ratio": pytest.approx(4.0),
                   "sqnr_per_tensor_db": 41.0, "sqnr_per_channel_db": 46.0, "gain_db": 5.0}
    assert gran.notes[0] == "per channel lowers the MSE in 1 of 1 comparisons"


def test_summaries_of_analysed_weights(tracker_store):
    rng = np.random.default_rng(3)
    scales = np.array([1.0, 0.1, 0.01, 0.001])[:, None]
    w = rng.normal(size=(4, 64)) * scales
    with tracker.start_run(project="quant", store=tracker_store) as run:
        for bits in (4, 8):
            run.log_record("quant.error", error_record("w", w, calibrate_per_tensor(w, bits)))
            run.log_record("quant.error", error_record("w", w, calibrate_per_channel(w, 4, bits)))
    got = summaries(tracker_store, run.id)
    rows = {(r["bits"], r["granularity"]): r for r in got["quant.errors"].rows}
    for bits in (4, 8):
        qmax = 2 ** (bits - 1) - 1
        for granularity, peak in (("per_tensor", np.abs(w).max()),
                                  ("per_channel", np.abs(w).max(axis=1, keepdims=True))):
            deq = np.clip(np.round(w / (peak / qmax)), -qmax, qmax) * (peak / qmax)
            err = deq - w
            sqnr = 10 * np.log10(np.mean(w**2) / np.mean(err**2))
            row = rows[(bits, granularity)]
            assert row["mse"] == pytest.approx(np.mean(err**2))
            assert row["max_error"] == pytest.approx(np.abs(err).max())
            assert row["sqnr_db"] == pytest.approx(sqnr)
            assert row["gap_db"] == pytest.approx(theory(bits) - sqnr)
            assert row["bound"] == pytest.approx(np.max(peak) / qmax / 2)
            assert row["over_bound"] is False
    worst = min(rows.values(), key=lambda r: r["sqnr_db"])
    assert (worst["bits"], worst["granularity"]) == (4, "per_tensor")
    assert got["quant.errors"].notes[0].startswith("worst tensor: w (4-bit per_tensor symmetric)")
    gran = {r["bits"]: r for r in got["quant.granularity"].rows}
    for bits in (4, 8):
        pt, pc = rows[(bits, "per_tensor")], rows[(bits, "per_channel")]
        assert gran[bits]["mse_ratio"] == pytest.approx(pt["mse"] / pc["mse"])
        assert gran[bits]["gain_db"] == pytest.approx(pc["sqnr_db"] - pt["sqnr_db"])
        assert gran[bits]["gain_db"] > 0  # the largest channel has the same error both ways


def test_granularity_summary_without_pairs_and_with_exact_tensors(tracker_store):
    with tracker.start_run(project="quant", store=tracker_store) as run:
        run.log_record("quant.error", ERROR)
    assert summaries(tracker_store, run.id)["quant.granularity"].rows == []
    with tracker.start_run(project="quant", store=tracker_store) as run:
        exact = {**ERROR, "mse": 0.0, "sqnr_db": math.inf}
        run.log_record("quant.error", exact)
        run.log_record("quant.error", {**exact, "granularity": "per_channel"})
    (row,) = summaries(tracker_store, run.id)["quant.granularity"].rows
    assert row["mse_ratio"] == 1.0 and row["gain_db"] == 0.0
    assert summaries(tracker_store, run.id)["quant.errors"].notes[0].startswith("worst tensor: none")


def test_cli_summary_as_json(tracker_store):
    w = np.random.default_rng(1).normal(size=(4, 16))
    with tracker.start_run(project="quant", store=tracker_store) as run:
        rec = error_record("w", w, calibrate_per_tensor(w, 8))
        run.log_record("quant.error", rec)
    out = subprocess.run([sys.executable, "-m", "tracker", "--store", str(tracker_store), "summary",
                          run.id, "--schema", "quant.error", "--format", "json"],
                         capture_output=True, text=True, check=True)
    by_name = {s["summarizer"]: s for s in json.loads(out.stdout)["summaries"]}
    (row,) = by_name["quant.errors"]["rows"]
    assert row["sqnr_db"] == rec.sqnr_db and row["mse"] == rec.mse
    assert row["theoretical_sqnr_db"] == pytest.approx(theory(8))


def test_the_panel_and_the_summary_agree_on_gap_db_and_series_are_told_apart(tmp_path) -> None:
    """gap_db is theory minus measured in both; each tensor its own colour (issue 35)."""
    from tracker_quant_analysis.panel import sqnr_panel
    from tracker_quant_analysis.summary import summarize_errors

    import tracker

    with tracker.start_run(project="q", store=tmp_path / "s", system_metrics=False) as run:
        for tensor in ("conv", "fc", "emb", "head"):
            for gran in ("per_tensor", "per_channel"):
                for bits in (4, 8):
                    sqnr = 6.02 * bits + 1.76 - (6.0 if gran == "per_tensor" else 2.0)
                    run.log_record("quant.error", tensor=tensor, bits=bits, granularity=gran, mode="symmetric",
                                   mse=1e-3, mae=0.01, max_error=0.02, sqnr_db=sqnr, outlier_rate=0.0,
                                   num_samples=100, theoretical_max_error=0.02)
    view = tracker.open_store(tmp_path / "s").run(run.id)
    table = view.table("quant.error")
    chart, figure = sqnr_panel(table, view)
    summary = {(r["tensor"], r["granularity"], r["bits"]): r["gap_db"] for r in summarize_errors(table).rows}
    for row in figure.rows:
        assert row["gap_db"] == pytest.approx(summary[(row["tensor"], row["granularity"], row["bits"])])
        assert row["gap_db"] > 0  # below theory: positive, as the summary says it
    measured = [s for s in chart.series if not s.name.startswith("theoretical")]
    colours = {s.name.split(" · ")[0]: s.color for s in measured}
    assert len(set(colours.values())) == 4 and chart.wide and figure.wide
