"""Dashboard panels of the FFT study (``tracker ui``): loss per model, gate heatmaps, the loss landscape."""

from __future__ import annotations

from typing import Any

import numpy as np

from tracker import Heatmap, LineChart, Panel, RunView, Series, Table

from .config import SETTINGS


def loss_panel(table: Table, run: RunView) -> list[Any]:
    """Total loss over steps, one line per model, on a log scale."""
    models = np.asarray(table["model_id"], dtype=object)
    steps, loss = table["step"], table["total_loss"]
    series = [Series(str(m) or "(model)", loss[models == m], x=steps[models == m]) for m in dict.fromkeys(models)]
    return [LineChart("Total loss per model", series, x_label="step", y_label="total loss", log_y=True)]


def _latest(table: Table) -> list[Any]:
    """Each model's latest record, in order of first appearance."""
    latest: dict[str, Any] = {}
    for row in table.rows():
        latest[row.model_id] = row
    return list(latest.values())


def gates_panel(table: Table, run: RunView) -> list[Any]:
    """Each model's latest gates, stage by butterfly, pruned gates (below the threshold) marked."""
    threshold = SETTINGS.prune_threshold
    figures = []
    for row in _latest(table):
        z = np.asarray(row.gates, dtype=float).reshape(row.stages, row.butterflies)
        pruned = [(int(s), int(b)) for s, b in zip(*np.nonzero(z < threshold), strict=True)]
        figures.append(Heatmap(f"{row.model_id or 'model'}: gates ({len(pruned)} of {z.size} pruned)", z,
                               x_label="butterfly", y_label="stage", marked=pruned,
                               mark_label=f"pruned (gate < {threshold:g})", vmin=0.0, vmax=1.0,
                               value_label="gate"))
    return figures


def landscape_panel(table: Table, run: RunView) -> list[Any]:
    """Each model's latest loss landscape, its lowest point marked."""
    figures = []
    for row in _latest(table):
        z = np.asarray(row.z, dtype=float)
        finite = np.where(np.isfinite(z), z, np.inf)
        r, c = np.unravel_index(int(np.argmin(finite)), z.shape)
        figures.append(Heatmap(f"{row.model_id or 'model'}: loss landscape (min {z[r, c]:.4g})", z,
                               x=[round(v, 4) for v in row.x], y=[round(v, 4) for v in row.y],
                               x_label=row.x_label, y_label=row.y_label, marked=[(int(r), int(c))],
                               mark_label=f"minimum at ({row.x[c]:.3g}, {row.y[r]:.3g})",
                               log=bool(np.nanmin(z) > 0), origin="lower", value_label="loss",
                               cell_aspect=1.0))  # a plane of two parameters: square cells
    return figures


PANELS = [
    Panel("fft.losses", "fft.loss_point", loss_panel, title="Loss per model"),
    Panel("fft.gates", "fft.heatmap", gates_panel, title="Gate heatmaps"),
    Panel("fft.landscape", "fft.landscape", landscape_panel, title="Loss landscape"),
]
