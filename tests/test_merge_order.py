"""Metric names of a run with several writers come in order of first appearance, whatever the writers' ids."""

from __future__ import annotations

import numpy as np

from tracker.read.columns import merge_columns


def _part(t0: float, names: list[str], n: int = 3) -> tuple[dict[str, np.ndarray], int]:
    cols = {"step": np.arange(n, dtype=np.int64), "time": t0 + np.arange(n, dtype=np.float64)}
    cols.update({k: np.ones(n) for k in names})
    return cols, n


def test_names_follow_the_writer_that_logged_first_not_the_segment_order() -> None:
    early, late = _part(100.0, ["loss", "only_first"]), _part(200.0, ["loss", "extra"])
    # Segments come sorted by file name: a later writer whose id sorts first must not move its names first.
    for parts in ([early, late], [late, early]):
        cols, n = merge_columns(parts)
        assert list(cols) == ["step", "time", "loss", "only_first", "extra"] and n == 6
        assert cols["time"].tolist() == [100.0, 101.0, 102.0, 200.0, 201.0, 202.0]
