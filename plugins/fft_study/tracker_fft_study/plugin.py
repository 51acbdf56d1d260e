"""Hook implementations of the FFT study plugin (entry point ``fft_study``).

Schemas ``fft.loss_point``, ``fft.params``, ``fft.heatmap``, ``fft.landscape``
and ``fft.trace``; one summarizer per question a study asks; and the
``tracker fft report`` command. Options come from ``[plugins.fft_study]`` of
tracker.toml:

- ``prune_threshold`` (float in (0, 1], default 0.5): a gate below it counts
  as pruned.
- ``report_dpi`` (int in [50, 600], default 110): resolution of report figures.

A bad option is a warning and the defaults apply; the plugin keeps working.
"""

from __future__ import annotations

import warnings
from typing import Any

import click

from tracker import (
    Config,
    Schema,
    Summarizer,
    Summary,
    TrackerError,
    TrackerWarning,
    hookimpl,
)

from . import study
from .cli import fft_group
from .record import FFTHeatmap, FFTLandscape, FFTLossPoint, FFTParams, FFTTrace
from .config import SETTINGS


@hookimpl
def tracker_configure(config: Config) -> None:
    """Read ``[plugins.fft_study]``.

    A bad key or value is warned about, naming the file, the key and what is
    allowed, and the defaults are used: a typo in a report option must not
    stop the fft.* schemas from logging.
    """
    try:
        SETTINGS.load(config.plugin_config("fft_study"))
    except ValueError as err:
        SETTINGS.load({})
        where = config.file or "tracker.toml"
        warnings.warn(f"tracker: plugin 'fft_study': {where}: {err}; using the defaults",
                      TrackerWarning, stacklevel=2)


@hookimpl
def tracker_schemas() -> list[Schema]:
    """The five ``fft.*`` schemas."""
    return [
        Schema("fft.loss_point", FFTLossPoint,
               description="one evaluation of a model: total loss, mel/spectral/Welch errors"),
        Schema("fft.params", FFTParams,
               description="parameter counts of a model; total and memory are derived"),
        Schema("fft.heatmap", FFTHeatmap,
               description="gates (and twiddle magnitudes) per stage x butterfly"),
        Schema("fft.landscape", FFTLandscape,
               description="loss over a grid of two parameters"),
        Schema("fft.trace", FFTTrace,
               description="how a model was trained and its final errors"),
    ]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    """Per-model table, loss-curve statistics, gates per stage, landscape minimum."""
    return [
        Summarizer("fft.models", "fft.params", summarize_models,
                   description="per model: params, memory, steps, best loss, final errors"),
        Summarizer("fft.loss_curves", "fft.loss_point", summarize_loss_curves,
                   description="per model: first, best and last total loss, improvement"),
        Summarizer("fft.gates", "fft.heatmap", summarize_gates,
                   description="per model and stage: mean gate and share pruned"),
        Summarizer("fft.landscape_min", "fft.landscape", summarize_landscapes,
                   description="per landscape: minimum loss and where it lies"),
    ]


@hookimpl
def tracker_commands(cli: click.Group) -> None:
    """Add the ``tracker fft`` group (``tracker fft report``)."""
    cli.add_command(fft_group)


def _other_table(run: Any, schema: str) -> Any:
    try:
        return run.table(schema)
    except TrackerError:
        return None


def summarize_models(table: Any, run: Any) -> Summary:
    """One row per model from ``fft.params``, with its ``fft.trace`` and loss points."""
    rows = study.model_rows(table, _other_table(run, "fft.loss_point"),
                            _other_table(run, "fft.trace"))
    notes = ["memory_bytes = 4 bytes per parameter; best_total_loss ignores NaN points",
             "train_steps and final errors come from fft.trace, else from the last loss point"]
    return Summary("FFT models", rows, notes=notes)


def summarize_loss_curves(table: Any) -> Summary:
    """First, best and last total loss of each model, ordered by step."""
    rows = study.loss_curve_rows(table)
    notes = ["improvement = (first - last) / |first|"]
    finite = [r for r in rows if r["best"] == r["best"]]
    if finite:
        top = min(finite, key=lambda r: r["best"])
        notes.append(f"lowest loss: {top['model_id'] or '(default)'} "
                     f"({top['best']:.4g} at step {top['best_step']})")
    return Summary("FFT loss curves", rows, notes=notes)


def summarize_gates(table: Any) -> Summary:
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


def summarize_landscapes(table: Any) -> Summary:
    """Minimum of each loss landscape and the grid point where it lies."""
    return Summary("FFT loss landscape", study.landscape_rows(table),
                   notes=["x_at_min and y_at_min are the grid point of the lowest loss"])
