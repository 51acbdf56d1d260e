"""What the run page shows of W&B-style logging: text values, logged tables, and define_metric's x-axes.

- ``texts``: the strings logged with ``run.log`` (``text`` records), by key, in log order;
- ``tables``: the ``table`` records (``wandb.Table``), by name, the rows of each
  (at most :data:`MAX_ROWS`); an image cell is a reference whose bytes the blob
  endpoint serves, drawn as a thumbnail;
- ``axes``: for each metric that ``define_metric(name, step_metric=...)`` gave
  an x-axis, that metric's name. ``GET /api/runs/{id}/metrics?x=defined``
  draws each such metric against its axis: the axis metric's value in the
  same record, or the last one logged before it (W&B's ``step_sync``).
"""

from __future__ import annotations

import fnmatch
from typing import Any

import numpy as np

from tracker.ui.series import present, series_json

#: Rows of one logged table sent to the page (the page says how many there are).
MAX_ROWS = 200


def texts_json(view: Any, api: Any = None) -> dict[str, list[dict[str, Any]]]:
    """Text values by key, each list in log order: ``{"step", "time", "value"}``."""
    if "text" not in view.schemas():
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for r in view.records("text"):
        out.setdefault(r.data.get("name", ""), []).append({"step": r.step, "time": r.time,
                                                           "value": r.data.get("value", "")})
    return out


def tables_json(view: Any, api: Any = None) -> dict[str, list[dict[str, Any]]]:
    """Logged tables by name, each list in log order: ``{"step", "time", "columns", "rows", "total"}``."""
    if "table" not in view.schemas():
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for r in view.records("table"):
        d = r.data
        rows = d.get("data") or []
        out.setdefault(d.get("name", ""), []).append({"step": r.step, "time": r.time, "columns": d.get("columns", []),
                                                      "rows": rows[:MAX_ROWS], "total": len(rows)})
    return out


def axes_json(view: Any, api: Any = None) -> dict[str, str]:
    """``{metric: step_metric}`` for the run's metrics that define_metric gave another metric as x-axis.

    A definition names a metric or a glob (``"val/*"``); the last that matches
    a metric wins. The axis must be a metric of the run other than the metric itself.
    """
    if "metric_axis" not in view.schemas():
        return {}
    defined = [(r.data.get("name", ""), r.data.get("step_metric", "")) for r in view.records("metric_axis")]
    figures = getattr(view, "metric_stats", None)
    names = list(figures()) if figures is not None else [k for k in view.metrics() if k not in ("step", "time")]
    have = set(names)
    out: dict[str, str] = {}
    for name in names:
        axis = None
        for pattern, step_metric in defined:
            if fnmatch.fnmatchcase(name, pattern):
                axis = step_metric
        if axis is not None and axis != name and axis in have:
            out[name] = axis
    return out


def axis_column(column: np.ndarray) -> np.ndarray:
    """An axis metric's value at every record: its own, or the last one logged before (NaN before the first)."""
    logged = present(column)
    idx = np.where(logged, np.arange(column.size), -1)
    np.maximum.accumulate(idx, out=idx)
    out = np.full(column.size, np.nan)
    ok = idx >= 0
    out[ok] = column[idx[ok]]
    return out


def axis_series(cols: dict[str, np.ndarray], name: str, axis: str, x_min: float | None, x_max: float | None,
                max_points: int) -> dict[str, Any] | None:
    """Metric ``name`` against metric ``axis`` (see :func:`axis_column`), within ``x_min``..``x_max``.

    ``None`` when no record of ``name`` has an axis value in the range.
    """
    xs = axis_column(cols[axis])
    keep = present(cols[name]) & ~np.isnan(xs)
    if x_min is not None:
        keep &= xs >= x_min
    if x_max is not None:
        keep &= xs <= x_max
    if not keep.any():
        return None
    return series_json(xs[keep], cols[name][keep], max_points, False)
