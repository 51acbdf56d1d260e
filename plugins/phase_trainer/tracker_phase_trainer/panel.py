"""Dashboard panel of the phase trainer (``tracker ui``): loss over steps on FULL / PREDICT / CORRECT bands."""

from __future__ import annotations

from typing import Any

import numpy as np

from tracker import Band, BarChart, LineChart, Panel, RunView, Series, Table

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


def loss_panel(table: Table, run: RunView) -> list[Any]:
    """The loss per step with each phase's stretch shaded, and the mean loss per phase."""
    order = np.argsort(table["step"], kind="stable")
    steps = table["step"][order]
    loss = table["loss"][order]
    phases = [table["phase"][i] for i in order]
    chart = LineChart("Loss over steps by phase", [Series("loss", loss, x=steps)], x_label="step",
                      y_label="loss", bands=phase_bands(steps, phases))
    names = [p for p in PHASE_COLORS if p in phases]
    phase_arr = np.asarray(phases, dtype=object)
    means = [float(np.nanmean(loss[phase_arr == p])) for p in names]
    counts = [int(np.sum(phase_arr == p)) for p in names]
    bars = BarChart("Mean loss per phase", [f"{p} ({n} steps)" for p, n in zip(names, counts, strict=True)],
                    [Series("mean loss", means)], y_label="loss")
    return [chart, bars]


PANELS = [Panel("phase.loss", "phase.step", loss_panel, title="Loss by phase")]
