"""Property tests of the summary numbers against plain numpy, on in-memory columns."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tracker_fft_study import study


class Columns:
    """The part of tracker.Table the study functions read: len() and columns by name."""

    def __init__(self, **columns) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns["step"])

    def __getitem__(self, name: str):
        return self.columns[name]


loss_values = st.one_of(st.floats(-1e6, 1e6), st.just(math.nan), st.just(math.inf))
points = st.lists(st.tuples(st.sampled_from(["a", "b", ""]), st.integers(0, 50), loss_values),
                  min_size=1, max_size=40)


@settings(max_examples=80, deadline=None)
@given(points)
def test_loss_curve_rows_match_numpy(records):
    table = Columns(step=np.array([s for _, s, _ in records], dtype=np.int64),
                    model_id=[m for m, _, _ in records],
                    total_loss=np.array([v for _, _, v in records], dtype=np.float64))
    rows = study.loss_curve_rows(table)
    assert [r["model_id"] for r in rows] == list(dict.fromkeys(m for m, _, _ in records))
    for row in rows:
        mine = [(s, i, v) for i, (m, s, v) in enumerate(records) if m == row["model_id"]]
        ordered = [v for _, _, v in sorted(mine)]  # by step, then log order
        values = np.array(ordered)
        assert row["points"] == len(mine)
        assert row["nan_points"] == int(np.isnan(values).sum())
        assert _same(row["first"], ordered[0]) and _same(row["last"], ordered[-1])
        if np.all(np.isnan(values)):
            assert math.isnan(row["best"]) and row["best_step"] is None
        else:
            assert row["best"] == np.nanmin(values)
            best_steps = [s for s, _, v in mine if v == row["best"]]
            assert row["best_step"] == min(best_steps)
            assert row["best"] <= min(v for v in ordered if not math.isnan(v))
        if math.isfinite(ordered[0]) and math.isfinite(ordered[-1]) and ordered[0] != 0:
            assert _same(row["improvement"], (ordered[0] - ordered[-1]) / abs(ordered[0]))
        else:
            assert math.isnan(row["improvement"])


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 16), st.floats(0.01, 1.0), st.data())
def test_gate_rows_match_numpy(stages, butterflies, threshold, data):
    gates = data.draw(st.lists(st.floats(0, 1), min_size=stages * butterflies,
                               max_size=stages * butterflies))
    table = Columns(step=np.array([7]), model_id=["m"], stages=np.array([stages]),
                    butterflies=np.array([butterflies]), gates=[gates])
    rows = study.gate_rows(table, threshold)
    grid = np.array(gates).reshape(stages, butterflies)
    assert [r["stage"] for r in rows] == list(range(stages))
    for row, stage in zip(rows, grid, strict=True):
        assert row["pruned"] == int(np.sum(stage < threshold))
        assert row["pruned_share"] == row["pruned"] / butterflies
        assert row["mean_gate"] == float(stage.mean()) and row["min_gate"] == stage.min()


grid_value = st.one_of(st.floats(-1e3, 1e3), st.just(math.nan), st.just(math.inf))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_landscape_minimum_matches_numpy(nx, ny, data):
    z = np.array(data.draw(st.lists(grid_value, min_size=nx * ny, max_size=nx * ny)))
    z = z.reshape(ny, nx)
    x, y = np.arange(nx) * 0.5, np.arange(ny) - 2.0
    table = Columns(step=np.array([0]), model_id=["m"], x_label=["x"], y_label=["y"],
                    x=[list(x)], y=[list(y)], z=[z.tolist()])
    (row,) = study.landscape_rows(table)
    assert row["grid"] == f"{ny}x{nx}"
    if np.all(np.isnan(z)):
        assert math.isnan(row["min_loss"]) and row["x_at_min"] is None
        return
    assert row["min_loss"] == np.nanmin(z)
    i, j = int(row["y_at_min"] + 2.0), int(row["x_at_min"] / 0.5)
    assert z[i, j] == np.nanmin(z)
