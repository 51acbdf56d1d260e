"""Dashboard panel of the phase trainer (``tracker ui``): loss over steps on FULL / PREDICT / CORRECT bands."""

from __future__ import annotations

from typing import Any

import numpy as np

from tracker import Band, BarChart, LineChart, Panel, RunView, Series, Table

from .summary import LOSS_WINDOW

#: One colour per phase, the same in every run.
PHASE_COLORS = {"FULL": "#3b82f6", "PREDICT": "#f59e0b", "CORRECT": "#10b981"}


def phase_bands(steps: np.ndarray, phases: list[str]) -> list[Band]:
    """One band per stretch of consecutive records in the same phase, from its first step to the next stretch's."""
    bands: list[Band] = []
    start = 0
    for i in range(1, len(phases) + 1):
        if i == len(phases) or phases[i] != phases[start]:
            end = steps[i] if i < len(phases) else steps[i - 1]
            bands.append(Band(float(steps[start]), float(end), phases[start], color=PHASE_COLORS.get(phases[start])))
            start = i
    return bands


def _spans_decades(values: np.ndarray) -> bool:
    """Whether positive values span more than two decades (a linear axis would draw them flat)."""
    pos = values[np.isfinite(values) & (values > 0)]
    return pos.size > 1 and bool(pos.max() / pos.min() > 100)


def loss_panel(table: Table, run: RunView) -> list[Any]:
    """The loss per step with each phase's stretch shaded, and the mean loss per phase.

    The chart is on a log axis when the loss spans more than two decades (a loss that falls
    from 1 to 0.001 would be flat after its first steps on a linear one). The bars are the
    summary's ``loss_mean`` exactly: the mean over the last LOSS_WINDOW records of each phase
    in log order, NaN left out (the note under them says so).
    """
    steps_all = np.asarray(table["step"])
    loss_all = np.asarray(table["loss"], dtype=np.float64)
    order = np.argsort(steps_all, kind="stable")
    steps = steps_all[order]
    loss = loss_all[order]
    phases = [table["phase"][i] for i in order]
    chart = LineChart("Loss over steps by phase", [Series("loss", loss, x=steps)], x_label="step",
                      y_label="loss", bands=phase_bands(steps, phases), log_y=_spans_decades(loss), wide=True)
    logged = np.asarray([table["phase"][i] for i in range(len(loss_all))], dtype=object)
    names = [p for p in PHASE_COLORS if p in phases]
    means, labels = [], []
    for p in names:
        index = np.flatnonzero(logged == p)
        window = loss_all[index[-LOSS_WINDOW:]]
        kept = window[~np.isnan(window)]
        means.append(float(np.mean(kept)) if kept.size else float("nan"))
        labels.append(f"{p} (last {window.size} of {index.size} steps)")
    bars = BarChart("Mean loss per phase", labels, [Series("mean loss", means)], y_label="loss",
                    log_y=_spans_decades(np.asarray(means)),
                    note=f"mean over the last {LOSS_WINDOW} steps of each phase, NaN left out "
                         "(the summary's loss_mean)")
    return [chart, bars]


PANELS = [Panel("phase.loss", "phase.step", loss_panel, title="Loss by phase")]
