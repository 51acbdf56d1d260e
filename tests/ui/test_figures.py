"""The figure vocabulary of panels: JSON shapes and clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tracker
from tracker.core.figures import FigureError, figures_json


def test_line_chart_with_series_and_bands():
    fig = tracker.LineChart("loss", [tracker.Series("a", np.array([1.0, math.nan, 3.0]), x=np.array([0, 1, 2])),
                                     tracker.Series("b", [4, 5], kind="points")],
                            x_label="step", log_y=True, bands=[tracker.Band(0, 1, "FULL")])
    out = fig.to_json()
    assert out["type"] == "line" and out["log_y"] is True and out["x_label"] == "step"
    assert out["series"][0] == {"name": "a", "x": [0.0, 1.0, 2.0], "y": [1.0, None, 3.0], "kind": "line",
                                "color": None}
    assert out["series"][1]["x"] == [0.0, 1.0]
    assert out["bands"] == [{"start": 0.0, "end": 1.0, "label": "FULL", "color": None}]


def test_heatmap_marks_and_shapes():
    out = tracker.Heatmap("gates", np.arange(6.0).reshape(2, 3), marked=[(1, 2)], mark_label="pruned").to_json()
    assert out["z"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and out["x"] == [0, 1, 2] and out["y"] == [0, 1]
    assert out["marked"] == [[1, 2]] and out["mark_label"] == "pruned"
    with pytest.raises(FigureError, match="outside the 2x3 grid"):
        tracker.Heatmap("g", [[1, 2, 3], [4, 5, 6]], marked=[(2, 0)]).to_json()
    with pytest.raises(FigureError, match="row 1 has 2 values"):
        tracker.Heatmap("g", [[1, 2, 3], [4, 5]]).to_json()


def test_bar_chart_and_table_from_summary():
    bar = tracker.BarChart("bytes", ["fc1", "fc2"], {"fp32": [400, 800], "int8": [100, 200]}, log_y=True).to_json()
    assert bar["categories"] == ["fc1", "fc2"] and [s["name"] for s in bar["series"]] == ["fp32", "int8"]
    with pytest.raises(FigureError, match="one per category"):
        tracker.BarChart("b", ["a"], {"x": [1, 2]}).to_json()
    summary = tracker.Summary("Layers", [{"layer": "fc1", "err": math.inf}], notes=["worst: fc1"])
    table = tracker.TableFigure.from_summary(summary).to_json()
    assert table == {"type": "table", "title": "Layers", "columns": ["layer", "err"],
                     "rows": [{"layer": "fc1", "err": "Infinity"}], "notes": ["worst: fc1"], "wide": False}


def test_bad_values_name_what_is_wrong():
    with pytest.raises(FigureError, match=r"series 'a' y\[1\]: expected a number, given str"):
        tracker.LineChart("t", [tracker.Series("a", [1.0, "x"])]).to_json()
    with pytest.raises(FigureError, match="x has 3 values, y has 2"):
        tracker.Series("a", [1, 2], x=[0, 1, 2]).to_json()
    with pytest.raises(FigureError, match="returned dict, expected a list of figures"):
        figures_json({}, "p")
    with pytest.raises(FigureError, match="returned str, expected a figure"):
        figures_json(["nope"], "p")


def test_figures_import_no_web_framework():
    import subprocess
    import sys

    code = "import sys, tracker; tracker.LineChart; assert 'starlette' not in sys.modules, 'starlette imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_new_figure_options_and_their_errors():
    import pytest

    from tracker.core.figures import FigureError

    line = tracker.LineChart("cpu", [tracker.Series("cpu", [1, 2], x=[10.0, 20.0])], x_time=True, x_range=(5, 25),
                             wide=True).to_json()
    assert line["x_time"] is True and line["x_range"] == [5.0, 25.0] and line["wide"] is True
    with pytest.raises(FigureError, match="x_range"):
        tracker.LineChart("cpu", [tracker.Series("cpu", [1])], x_range=(2, 1)).to_json()
    heat = tracker.Heatmap("h", [[1, 2]], origin="lower", value_label="count").to_json()
    assert heat["origin"] == "lower" and heat["value_label"] == "count"
    with pytest.raises(FigureError, match="origin"):
        tracker.Heatmap("h", [[1]], origin="left").to_json()
    bars = tracker.BarChart("b", ["a"], {"x": [1]}, note="mean of the last 100").to_json()
    assert bars["note"] == "mean of the last 100"


def test_heatmap_cell_aspect_is_a_positive_number_or_none() -> None:
    from tracker.core.figures import FigureError, Heatmap

    assert Heatmap("t", [[1.0, 2.0]]).to_json()["cell_aspect"] is None
    assert Heatmap("t", [[1.0, 2.0]], cell_aspect=1).to_json()["cell_aspect"] == 1.0
    with pytest.raises(FigureError, match="cell_aspect: expected a positive number"):
        Heatmap("t", [[1.0]], cell_aspect=0).to_json()
