"""Summaries of a run's ``fft.*`` records: one summarizer per question a study asks.

- ``fft.models`` (of ``fft.params``): per model, params, memory, steps, best
  loss and final errors, joined with the run's ``fft.trace`` and
  ``fft.loss_point`` records;
- ``fft.loss_curves`` (of ``fft.loss_point``): first, best and last total loss;
- ``fft.gates`` (of ``fft.heatmap``): mean gate and share pruned per stage;
- ``fft.landscape_min`` (of ``fft.landscape``): the minimum and where it lies.

The row building lives in :mod:`tracker_fft_study.study`, shared with the report.
"""

from __future__ import annotations

from tracker import RunView, Summarizer, Summary, Table, TrackerError

from . import study
from .config import SETTINGS

__all__ = [
    "SUMMARIZERS",
    "summarize_gates",
    "summarize_landscapes",
    "summarize_loss_curves",
    "summarize_models",
]


def _other_table(run: RunView, schema: str) -> Table | None:
    try:
        return run.table(schema)
    except TrackerError:
        return None


def summarize_models(table: Table, run: RunView) -> Summary:
    """One row per model from ``fft.params``, with its ``fft.trace`` and loss points."""
    rows = study.model_rows(table, _other_table(run, "fft.loss_point"),
                            _other_table(run, "fft.trace"))
    notes = ["memory_bytes = 4 bytes per parameter; best_total_loss ignores NaN points",
             "train_steps and final errors come from fft.trace, else from the last loss point"]
    return Summary("FFT models", rows, notes=notes)


def summarize_loss_curves(table: Table) -> Summary:
    """First, best and last total loss of each model, ordered by step."""
    rows = study.loss_curve_rows(table)
    notes = ["improvement = (first - last) / |first|"]
    finite = [r for r in rows if r["best"] == r["best"]]
    if finite:
        top = min(finite, key=lambda r: r["best"])
        notes.append(f"lowest loss: {top['model_id'] or '(default)'} "
                     f"({top['best']:.4g} at step {top['best_step']})")
    return Summary("FFT loss curves", rows, notes=notes)


def summarize_gates(table: Table) -> Summary:
    """Mean gate and pruned share per stage, from each model's latest heatmap."""
    threshold = SETTINGS.prune_threshold
    rows = study.gate_rows(table, threshold)
    notes = [f"pruned = gate < {threshold:g}, in each model's latest fft.heatmap"]
    for model in dict.fromkeys(r["model_id"] for r in rows):
        mine = [r for r in rows if r["model_id"] == model]
        pruned, total = sum(r["pruned"] for r in mine), sum(r["butterflies"] for r in mine)
        notes.append(f"{model or '(default)'}: {pruned} of {total} gates pruned "
                     f"({pruned / total:.1%})")
    return Summary("FFT gates per stage", rows, notes=notes)


def summarize_landscapes(table: Table) -> Summary:
    """Minimum of each loss landscape and the grid point where it lies."""
    return Summary("FFT loss landscape", study.landscape_rows(table),
                   notes=["x_at_min and y_at_min are the grid point of the lowest loss"])


#: The summarizers the plugin offers.
SUMMARIZERS = [
    Summarizer("fft.models", "fft.params", summarize_models,
               description="per model: params, memory, steps, best loss, final errors"),
    Summarizer("fft.loss_curves", "fft.loss_point", summarize_loss_curves,
               description="per model: first, best and last total loss, improvement"),
    Summarizer("fft.gates", "fft.heatmap", summarize_gates,
               description="per model and stage: mean gate and share pruned"),
    Summarizer("fft.landscape_min", "fft.landscape", summarize_landscapes,
               description="per landscape: minimum loss and where it lies"),
]
