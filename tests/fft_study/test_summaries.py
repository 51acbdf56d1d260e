"""Every summarizer's numbers, on a run whose values are checked by hand (see conftest)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from tracker_fft_study import plugin, study
from tracker_fft_study.config import SETTINGS

import tracker
from tracker.cli import make_cli


def _summary(tracker_store, run_id, name) -> tracker.Summary:
    found = [s for s in tracker.open_store(tracker_store).run(run_id).summarize() if s.summarizer == name]
    assert len(found) == 1, [s.summarizer for s in found]
    return found[0]


def _nan_equal(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got[key]), key
        else:
            assert got[key] == pytest.approx(value), key
            assert type(got[key]) is type(value), key


def test_every_summarizer_runs_on_a_study(tracker_store, study_run):
    names = [s.summarizer for s in tracker.open_store(tracker_store).run(study_run).summarize()]
    for name in ("fft.models", "fft.loss_curves", "fft.gates", "fft.landscape_min"):
        assert name in names


def test_loss_curves(tracker_store, study_run):
    summary = _summary(tracker_store, study_run, "fft.loss_curves")
    a, b = summary.rows
    _nan_equal(a, {"model_id": "a", "points": 4, "first": 2.0, "best": 0.5, "best_step": 20,
                   "last": 0.8, "last_step": 30, "improvement": 0.6, "nan_points": 1})
    _nan_equal(b, {"model_id": "b", "points": 1, "first": 3.0, "best": 3.0, "best_step": 5,
                   "last": 3.0, "last_step": 5, "improvement": 0.0, "nan_points": 0})
    assert "lowest loss: a (0.5 at step 20)" in summary.notes


def test_models_table(tracker_store, study_run):
    rows = {r["model_id"]: r for r in _summary(tracker_store, study_run, "fft.models").rows}
    assert list(rows) == ["a", "c", "b"]  # params first, then loss-only models
    assert rows["a"] == {"model_id": "a", "variant": "gated", "n_fft": 64, "total_params": 704,
                         "memory_bytes": 2816, "train_steps": 30, "best_total_loss": 0.5,
                         "best_step": 20, "final_mel_err": 0.11, "final_spec_err": 0.22}
    assert rows["c"] == {"model_id": "c", "variant": "exact", "n_fft": 8, "total_params": 24,
                         "memory_bytes": 96, "train_steps": None, "best_total_loss": None,
                         "best_step": None, "final_mel_err": None, "final_spec_err": None}
    # No params and no trace: final errors come from its last loss point.
    assert rows["b"] == {"model_id": "b", "variant": None, "n_fft": None, "total_params": None,
                         "memory_bytes": None, "train_steps": None, "best_total_loss": 3.0,
                         "best_step": 5, "final_mel_err": 0.7, "final_spec_err": 0.8}


def test_gates_per_stage_from_the_latest_heatmap(tracker_store, study_run):
    summary = _summary(tracker_store, study_run, "fft.gates")
    assert summary.rows == [
        {"model_id": "a", "step": 10, "stage": 0, "butterflies": 4, "mean_gate": 0.5,
         "min_gate": 0.1, "pruned": 2, "pruned_share": 0.5},
        {"model_id": "a", "step": 10, "stage": 1, "butterflies": 4,
         "mean_gate": pytest.approx(0.6), "min_gate": 0.3, "pruned": 1, "pruned_share": 0.25},
    ]
    assert "a: 3 of 8 gates pruned (37.5%)" in summary.notes


def test_prune_threshold_from_config(make_tracker_host, tracker_store, study_run):
    make_tracker_host(plugin, names=["fft_study"],
                      config=tracker.Config(plugins={"fft_study": {"prune_threshold": 0.6}}))
    try:
        summary = _summary(tracker_store, study_run, "fft.gates")
    finally:
        SETTINGS.load({})
    assert [r["pruned"] for r in summary.rows] == [2, 2]
    assert summary.notes[0] == "pruned = gate < 0.6, in each model's latest fft.heatmap"


def test_landscape_minimum(tracker_store, study_run):
    (row,) = _summary(tracker_store, study_run, "fft.landscape_min").rows
    assert row == {"model_id": "a", "step": 30, "x_label": "w0", "y_label": "w1", "grid": "2x3",
                   "min_loss": 0.5, "x_at_min": 1.0, "y_at_min": 2.0, "max_finite_loss": 4.0}


def test_summaries_through_the_cli_as_json(host, tracker_store, study_run):
    result = CliRunner().invoke(make_cli(host), ["summary", study_run, "--schema",
                                                 "fft.landscape", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    text = json.dumps(doc)
    assert "fft.landscape_min" in text and '"min_loss": 0.5' in text


def test_models_with_only_params(run, tracker_store):
    run.log_record("fft.params", model_id="m", variant="v", n_fft=4, twiddles=8, gates=0,
                   freq_mask=0, denoiser=0, unitary=0, mel_filters=0, q8_packed=0)
    run.finish()
    (row,) = _summary(tracker_store, run.id, "fft.models").rows
    assert (row["total_params"], row["best_total_loss"], row["train_steps"]) == (8, None, None)


def _loss(run, step, value, model="m"):
    run.log_record("fft.loss_point", step=step, model_id=model, total_loss=value, mel_err=0,
                   spec_err=0, welch_err=0, mean_gate=1)


def test_loss_curve_edge_cases(run, tracker_store):
    for step in (0, 1):
        _loss(run, step, math.nan, "all_nan")
    _loss(run, 0, 0.0, "zero_first")
    _loss(run, 1, 1.0, "zero_first")
    _loss(run, 2, 1.0, "repeat")
    _loss(run, 2, 0.25, "repeat")  # repeated step: both kept, log order among equals
    _loss(run, 1, 4.0, "repeat")
    run.finish()
    rows = {r["model_id"]: r for r in _summary(tracker_store, run.id, "fft.loss_curves").rows}
    assert math.isnan(rows["all_nan"]["best"]) and rows["all_nan"]["best_step"] is None
    assert math.isnan(rows["all_nan"]["improvement"]) and rows["all_nan"]["nan_points"] == 2
    assert math.isnan(rows["zero_first"]["improvement"])
    repeat = rows["repeat"]
    assert (repeat["first"], repeat["last"], repeat["points"]) == (4.0, 0.25, 3)
    assert repeat["improvement"] == pytest.approx(0.9375)


def test_landscape_all_nan_and_study_helpers_on_empty_tables(run, tracker_store):
    run.log_record("fft.landscape", model_id="m", x_label="x", y_label="y", x=[0.0, 1.0],
                   y=[0.0], z=[[math.nan, math.nan]])
    run.finish()
    (row,) = _summary(tracker_store, run.id, "fft.landscape_min").rows
    assert math.isnan(row["min_loss"]) and row["x_at_min"] is None and row["y_at_min"] is None
    assert math.isnan(row["max_finite_loss"])
    empty = tracker.open_store(tracker_store).run(run.id).table("fft.loss_point")
    assert len(empty) == 0
    assert study.loss_curve_rows(empty) == []
    assert study.model_rows(empty, empty, empty) == []
    assert study.gate_rows(empty) == []
    assert study.landscape_rows(empty) == []


def test_param_breakdown_uses_each_models_latest_params(tracker_store, study_run):
    params = tracker.open_store(tracker_store).run(study_run).table("fft.params")
    assert study.param_breakdown_rows(params) == [
        {"model_id": "a", "variant": "gated", "twiddles": 384, "gates": 192, "freq_mask": 128,
         "denoiser": 0, "unitary": 0, "mel_filters": 0, "q8_packed": 0, "total_params": 704},
        {"model_id": "c", "variant": "exact", "twiddles": 24, "gates": 0, "freq_mask": 0,
         "denoiser": 0, "unitary": 0, "mel_filters": 0, "q8_packed": 0, "total_params": 24},
    ]
