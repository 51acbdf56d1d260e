"""The gradstats plugin's dashboard panel: norms per layer over steps, and the summary as a table."""

from __future__ import annotations

from typing import Any

import numpy as np

from tracker import BarChart, LineChart, Panel, RunView, Series, Table, TableFigure


def norms_panel(table: Table, run: RunView) -> list[Any]:
    """The gradient norm of each layer over steps (log scale), the last zero share per layer, the summary."""
    from .plugin import summarize_layers

    layers = np.asarray(table["layer"], dtype=object)
    names = list(dict.fromkeys(table["layer"]))
    lines = [Series(name, table["norm"][layers == name], x=table["step"][layers == name]) for name in names]
    zeros = [float(table["zero_fraction"][layers == name][-1]) for name in names]
    return [LineChart("Gradient norm per layer", lines, x_label="step", y_label="norm", log_y=True),
            BarChart("Share of zero gradients (last)", names, [Series("zero fraction", zeros)]),
            TableFigure.from_summary(summarize_layers(table))]


PANELS = [Panel("grad.norms", "grad.norm", norms_panel, title="Gradient norms")]
