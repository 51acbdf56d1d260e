"""Data frames of a run's records and of a store's runs, for pandas, polars or Arrow.

:func:`record_frame` gives one row per record of one schema: ``step``,
``time`` (epoch seconds), then the schema's fields in the schema's order
(``metrics``: one column per metric name in order of first appearance, NaN
where a record lacks it). Numeric columns are the reader's numpy arrays,
handed to the library without a copy (pandas, polars and Arrow all take a
float64 or int64 array as it is). :func:`run_frame` gives one row per run from
the run catalog: its info, ``config.KEY`` and ``summary.KEY`` (nested keys
dotted) and ``metric.NAME.last|min|max|count``.

Each library is an optional extra (``tracker-core[pandas]``, ``[polars]``,
``[arrow]``), imported only here and only when asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from tracker.core.errors import TrackerError

LIBRARIES = {"pandas": "pandas", "polars": "polars", "arrow": "pyarrow"}
RUN_COLUMNS = ("id", "name", "project", "status", "created_at", "ended_at", "tags", "group", "job_type")
METRIC_FIGURES = ("last", "min", "max", "count")


def library_module(library: str) -> Any:
    """The module of ``library`` (``"pandas"``, ``"polars"`` or ``"arrow"``).

    :raises TrackerError: an unknown library, or one that is not installed (naming the extra to install).
    """
    module = LIBRARIES.get(library) if isinstance(library, str) else None
    if module is None:
        raise TrackerError(f"unknown data frame library {library!r}: expected one of {', '.join(LIBRARIES)}")
    try:
        return __import__(module)
    except ImportError:
        raise TrackerError(f"data frames with {library} need {module}, which is not installed: "
                           f'pip install "tracker-core[{library}]"') from None


def _frame(library: str, columns: dict[str, Any]) -> Any:
    """``columns`` (numpy arrays or lists of equal length) as a frame of ``library``, numpy arrays not copied."""
    mod = library_module(library)
    if library == "pandas":
        return mod.DataFrame({k: _pandas_column(v) for k, v in columns.items()}, copy=False)
    if library == "polars":
        return mod.DataFrame({k: _typed(mod, v, polars=True) for k, v in columns.items()})
    return mod.table({k: _typed(mod, v, polars=False) for k, v in columns.items()})


def _pandas_column(values: Any) -> Any:
    if isinstance(values, list) and any(isinstance(v, (list, dict)) for v in values):
        import numpy as np

        out = np.empty(len(values), dtype=object)
        out[:] = values  # lists and dicts stay whole values, never spread into a second axis
        return out
    return values


def _typed(mod: Any, values: Any, polars: bool) -> Any:
    """A polars Series or Arrow array of ``values``; mixed kinds (a number here, text there) as JSON text."""
    if not isinstance(values, list):
        return mod.Series(values) if polars else mod.array(values)
    kinds = {type(v) for v in values if v is not None}
    if float in kinds and kinds <= {int, float}:
        values = [None if v is None else float(v) for v in values]  # 1 and 0.1: one float column
    try:
        return mod.Series(values) if polars else mod.array(values)
    except Exception:  # noqa: BLE001 - each library has its own error for values of several kinds
        text = [v if v is None or isinstance(v, str) else orjson.dumps(v, option=orjson.OPT_SERIALIZE_NUMPY).decode()
                for v in values]
        return mod.Series(text, dtype=mod.Utf8) if polars else mod.array(text, mod.string())


def record_frame(view: Any, schema: str = "metrics", library: str = "pandas") -> Any:
    """One row per record of ``schema`` in the run ``view``, in log order.

    :param view: a :class:`tracker.RunView` (or any reader with ``metrics()`` and ``table()``).
    :param library: ``"pandas"``, ``"polars"`` or ``"arrow"``.
    :raises TrackerError: the library is not installed (naming the ``pip install``), or an unknown one.
    """
    library_module(library)  # the clear error first, before any reading
    if schema == "metrics":
        columns = dict(view.metrics())
    else:
        columns = dict(view.table(schema).columns)
    columns = {"step": columns.pop("step"), "time": columns.pop("time"), **columns}
    return _frame(library, columns)


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = value


def run_rows(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """One flat row per catalog entry: info, ``config.KEY``, ``summary.KEY``, ``metric.NAME.FIGURE``."""
    rows = []
    for e in entries:
        info = e.info
        row: dict[str, Any] = {k: getattr(info, k) for k in RUN_COLUMNS}
        row["tags"] = list(info.tags or [])
        for part in ("config", "summary"):
            value = getattr(info, part, None)
            if isinstance(value, dict):
                for k, v in value.items():
                    _flatten(f"{part}.{k}", v, row)
        for name, figures in e.metrics.items():
            for f in METRIC_FIGURES:
                v = figures.get(f)
                row[f"metric.{name}.{f}"] = v if f == "count" or v is None else float(v)
        rows.append(row)
    return rows


def run_frame(store: Any, project: str | None = None, status: str | None = None,
              library: str = "pandas") -> Any:
    """One row per run of ``store`` (newest first), from its run catalog.

    Columns: ``id``, ``name``, ``project``, ``status``, ``created_at``,
    ``ended_at``, ``tags``, ``group``, ``job_type``, then ``config.KEY``, ``summary.KEY`` and
    ``metric.NAME.last|min|max|count`` (missing where a run lacks them).

    :raises TrackerError: the library is not installed (naming the ``pip install``), or an unknown one.
    """
    library_module(library)
    rows = run_rows(store.catalog(project=project, status=status))
    names: dict[str, None] = dict.fromkeys(RUN_COLUMNS)
    groups: dict[str, dict[str, None]] = {"config": {}, "summary": {}, "metric": {}}
    for row in rows:
        for k in row:
            if k not in names:
                groups[k.split(".", 1)[0]].setdefault(k, None)
    order = [*names, *groups["config"], *groups["summary"], *groups["metric"]]
    columns = {k: [row.get(k) for row in rows] for k in order}
    return _frame(library, columns)


__all__ = ["LIBRARIES", "library_module", "record_frame", "run_frame", "run_rows"]
