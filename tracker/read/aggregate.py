"""Runs in groups: grouping by a run field or config key, and a metric's mean and band across a group's runs.

What seeds and ablations need (DESIGN.md, "Groups and reports"): runs are
grouped by ``group``, ``job_type``, ``project``, ``tag`` (a run with several
tags is in each of their groups) or ``config.KEY`` (nested keys dotted), and
a metric is aggregated per group on a common step grid:

- the grid is the union of the group's runs' steps when it has at most
  ``max_points`` of them, else ``max_points`` buckets of equal width over the
  steps' range, each named by its first step;
- a run has a value at a grid point while the point lies within the run's own
  first and last step: its last value logged before the next grid point (its
  last value in the bucket, or the one before it when it logged none there):
  nothing is extrapolated past a run's last step nor before its first, and
  ``count`` says how many runs contributed at each point;
- the line is the ``mean`` (or ``median``) over those runs, the band ±1 std
  (ddof 0), or their min and max, or a percentile pair; ``min`` and ``max``
  are the smallest and largest value any run logged within the bucket, so a
  one-step spike stays visible when a million steps are drawn as a thousand;
- values that are NaN or infinite are not values here (a diverged run stops
  contributing where it diverged); points no run covers are left out.

Numpy only; stores are read through the reading protocol, so a folder and the
team database give the same answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import orjson

from tracker.core.errors import TrackerError
from tracker.core.text import flatten

#: How the runs without the grouping field or key are named: `tracker runs --group-by`, the pages, reports.
NO_GROUP = "(none)"

#: The forms ``by`` takes, as error messages list them.
BY_FORMS = "group, job_type, project, tag, name or config.KEY"
_FIELDS = ("group", "job_type", "project", "name")
STATS = ("mean", "median")
_NUMBERS = re.compile(r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
DEFAULT_MAX_POINTS = 1000
#: The most points a group's line may have (the dashboard's own bound for series).
MAX_POINTS_LIMIT = 100_000


def check_by(by: str | None) -> tuple[str, str] | None:
    """``by`` as ``(kind, config key)``: ``("group", "")``, ``("config", "optim.lr")``; ``None`` for no grouping.

    :raises TrackerError: a form that is not one of :data:`BY_FORMS`.
    """
    if by is None:
        return None
    if not isinstance(by, str):
        raise TrackerError(f"group by: expected one of {BY_FORMS}, given {by!r}")
    if by in _FIELDS or by == "tag":
        return by, ""
    head, sep, key = by.partition(".")
    if head == "config" and sep and key:
        return "config", key
    if by.startswith("config:") and len(by) > len("config:"):  # the dashboard's column spec
        return "config", by[len("config:"):]
    raise TrackerError(f"group by {by[:80]!r}: expected one of {BY_FORMS}")


def _config_value(info: Any, key: str) -> tuple[bool, Any]:
    config = info.config if isinstance(info.config, dict) else {}
    node: Any = config
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            flat = dict(flatten(config))
            return (True, flat[key]) if key in flat else (False, None)
    return True, node


def group_values(info: Any, by: tuple[str, str] | None) -> list[Any]:
    """The groups ``info`` belongs to under ``by`` (of :func:`check_by`): one value, or one per tag.

    A run without the field or key is in the group ``None``.
    """
    if by is None:
        return [None]
    kind, key = by
    if kind == "tag":
        return list(dict.fromkeys(info.tags)) or [None]
    if kind == "config":
        return [_hashable(_config_value(info, key)[1])]
    return [getattr(info, kind, None)]


def _hashable(value: Any) -> Any:
    """A config value usable as a group key: lists and dicts as their JSON text, NaN as ``"NaN"``."""
    if isinstance(value, (list, dict)):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:
            return repr(value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def _order(value: Any) -> tuple:
    """Groups in a stable order: numbers by value, then text (digits by value), then ``None``."""
    if value is None:
        return (3,)
    if isinstance(value, bool):
        return (0, float(value), "")
    if isinstance(value, (int, float)):
        return (0, float(value), "")
    parts = _NUMBERS.split(str(value))
    # Numbers inside text by value ("lr=0.01" before "lr=0.1", "seed-2" before "seed-10"), then the text.
    return (1, 0.0, tuple((0, float(p), "") if i % 2 else (1, 0.0, p) for i, p in enumerate(parts)), str(value))


def _present_keys(infos: Sequence[Any]) -> str:
    """What ``by`` could be for these runs, for an error message."""
    forms = []
    if any(i.group is not None for i in infos):
        forms.append("group")
    if any(i.job_type is not None for i in infos):
        forms.append("job_type")
    if any(i.project for i in infos):
        forms.append("project")
    if any(i.tags for i in infos):
        forms.append("tag")
    keys: dict[str, None] = {}
    for i in infos:
        for k, _ in flatten(i.config if isinstance(i.config, dict) else {}):
            keys.setdefault(f"config.{k}", None)
    shown = list(keys)[:30]
    forms += shown + (["..."] if len(keys) > len(shown) else [])
    return ", ".join(forms) if forms else "nothing: the runs have no group, project, tag or config"


def group_runs(infos: Iterable[Any], by: str | None) -> dict[Any, list[Any]]:
    """``{group value: [RunInfo, ...]}`` in the order of :func:`_order`, runs in the order given.

    :raises TrackerError: ``by`` is not a known form, or no run has that field or key (one line
        listing what the runs do have).
    """
    spec = check_by(by)
    infos = list(infos)
    groups: dict[Any, tuple[Any, list[Any]]] = {}
    for info in infos:
        for value in group_values(info, spec):
            groups.setdefault(value, (value, []))[1].append(info)  # (True and 1 are one key, as in Python)
    if spec is not None and infos and list(groups) == [None]:
        kind, key = spec
        what = f"config key {key!r}" if kind == "config" else ("tags" if kind == "tag" else f"a {kind}")
        raise TrackerError(f"group by {by}: no run has {what} (the runs have: {_present_keys(infos)})")
    ordered = sorted(groups.values(), key=lambda g: _order(g[0]))
    return {value: members for value, members in ordered}


def parse_band(band: Any) -> str | tuple[float, float]:
    """``"std"``, ``"minmax"`` or a percentile pair: ``(10, 90)``, ``[25, 75]`` or the text ``"p10-p90"``.

    :raises TrackerError: anything else.
    """
    if band in ("std", "minmax"):
        return band
    pair = band
    if isinstance(band, str):
        lo, sep, hi = band.partition("-")
        try:
            pair = (float(lo.strip().lstrip("p")), float(hi.strip().lstrip("p"))) if sep else None
        except ValueError:
            pair = None
    if isinstance(pair, (tuple, list)) and len(pair) == 2 and \
            all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in pair):
        lo, hi = float(pair[0]), float(pair[1])
        if 0 <= lo < hi <= 100:
            return lo, hi
    raise TrackerError(f"band: expected 'std', 'minmax' or a percentile pair such as (10, 90) or 'p10-p90', "
                       f"given {band!r}")


def _check(stat: str, band: Any, max_points: Any) -> tuple[str, str | tuple[float, float], int]:
    if stat not in STATS:
        raise TrackerError(f"stat: expected 'mean' or 'median', given {stat!r}")
    if type(max_points) is not int or not 1 <= max_points <= MAX_POINTS_LIMIT:
        raise TrackerError(f"max_points: expected an int from 1 to {MAX_POINTS_LIMIT}, given {max_points!r}")
    return stat, parse_band(band), max_points


def _prepared(steps: Any, values: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """A run's finite values with their steps, in step order (repeated steps in log order); ``None``: none."""
    s = np.asarray(steps, dtype=np.int64)
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v)
    if not keep.all():
        s, v = s[keep], v[keep]
    if s.size == 0:
        return None
    if s.size > 1 and (s[1:] < s[:-1]).any():
        order = np.argsort(s, kind="stable")
        s, v = s[order], v[order]
    return s, v


def _grid(runs: list[tuple[np.ndarray, np.ndarray]], max_points: int) -> np.ndarray:
    """The grid points (each a bucket's first step): the union of the steps, or ``max_points`` buckets."""
    union = None
    if all(s.size <= max_points or int(np.count_nonzero(s[1:] != s[:-1])) < max_points for s, _ in runs):
        union = np.unique(np.concatenate([s for s, _ in runs]))
        if union.size > max_points:
            union = None
    if union is not None:
        return union
    lo = min(int(s[0]) for s, _ in runs)
    hi = max(int(s[-1]) for s, _ in runs)
    width = hi - lo + 1
    if width < 2**53 // max_points:
        return np.unique(lo + (np.arange(max_points, dtype=np.int64) * width) // max_points)
    # Steps reach ±2**53: k * width would overflow int64, so these few edges are worked out in Python's ints.
    return np.unique(np.array([lo + k * width // max_points for k in range(max_points)], dtype=np.int64))


def _buckets(runs: list[tuple[np.ndarray, np.ndarray]], edges: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per run (rows) and grid point (columns): its value there, and the min and max it logged in the bucket.

    All runs at once: each value's bucket, the last value of each (run, bucket), then carried forward to the
    buckets of the run's own range that it logged nothing in. NaN where a run has no value.
    """
    n, k = len(runs), edges.size
    sizes = np.fromiter((s.size for s, _ in runs), dtype=np.int64, count=n)
    steps = np.concatenate([s for s, _ in runs])
    vals = np.concatenate([v for _, v in runs])
    row = np.repeat(np.arange(n, dtype=np.int64), sizes)
    key = row * k + (np.searchsorted(edges, steps, "right") - 1)  # non-decreasing: runs in order, steps sorted
    change = np.flatnonzero(key[1:] != key[:-1])
    firsts = np.concatenate(([0], change + 1))
    lasts = np.concatenate((change, [key.size - 1]))
    cells = key[firsts]
    values = np.full(n * k, np.nan)
    values[cells] = vals[lasts]
    lows = np.full(n * k, np.nan)
    highs = np.full(n * k, np.nan)
    lows[cells] = np.minimum.reduceat(vals, firsts)
    highs[cells] = np.maximum.reduceat(vals, firsts)
    values, lows, highs = values.reshape(n, k), lows.reshape(n, k), highs.reshape(n, k)
    # Carried forward within each run's range: from the bucket of its first value to that of its last.
    logged = ~np.isnan(values)
    at = np.where(logged, np.arange(k), 0)
    np.maximum.accumulate(at, axis=1, out=at)
    rows = np.arange(n)[:, None]
    ends = np.concatenate((np.flatnonzero(np.diff(row)), [row.size - 1]))
    last_cell = key[ends] - np.arange(n) * k
    inside = np.cumsum(logged, axis=1) > 0
    inside &= np.arange(k) <= last_cell[:, None]
    carried = np.where(inside, values[rows, at], np.nan)
    lows = np.where(logged, lows, carried)
    highs = np.where(logged, highs, carried)
    return carried, lows, highs


def aggregate_series(series: Iterable[tuple[Any, Any]], *, stat: str = "mean", band: Any = "std",
                     max_points: int = DEFAULT_MAX_POINTS) -> dict[str, Any] | None:
    """One group's line and band from its runs' ``(steps, values)`` (the rules of this module's docstring).

    :returns: ``{"n", "step", "count", stat, "std", "lo", "hi", "min", "max"}`` (numpy arrays, one
        entry per grid point), or ``None`` when no run has a finite value.
    """
    stat, band, max_points = _check(stat, band, max_points)
    runs = [p for p in (_prepared(s, v) for s, v in series) if p is not None]
    if not runs:
        return None
    edges = _grid(runs, max_points)
    values, lows, highs = _buckets(runs, edges)
    count = np.count_nonzero(~np.isnan(values), axis=0)
    keep = count > 0
    if not keep.all():
        edges, values, lows, highs, count = edges[keep], values[:, keep], lows[:, keep], highs[:, keep], count[keep]
    center = np.nanmean(values, axis=0) if stat == "mean" else np.nanmedian(values, axis=0)
    std = np.nanstd(values, axis=0)
    if band == "std":
        lo, hi = center - std, center + std
    elif band == "minmax":
        lo, hi = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
    else:
        lo, hi = np.nanpercentile(values, band, axis=0)
    return {"n": len(runs), "step": edges, "count": count.astype(np.int64), stat: center, "std": std,
            "lo": lo, "hi": hi, "min": np.nanmin(lows, axis=0), "max": np.nanmax(highs, axis=0)}


def metric_series(view: Any, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """A run's ``(steps, values)`` of one metric, the records that hold it (through the reading protocol).

    A store that keeps columns of its own (the team database's ``metric_columns``) reads only that one.
    """
    read = getattr(view, "metric_columns", None)
    cols = read([metric], times=False)[0] if read is not None else view.metrics()
    col = cols.get(metric)
    steps = cols.get("step")
    if col is None or steps is None:
        return np.empty(0, dtype=np.int64), np.empty(0)
    return np.asarray(steps, dtype=np.int64), np.asarray(col, dtype=np.float64)


def view_of(store: Any, info: Any) -> Any:
    """The view of a run listed just now: made from its id (no search of the store's ids per run) and holding
    the listing's info (not read again from the run's segments)."""
    make = getattr(store, "_view", None)
    view = make(info.id) if make is not None else store.run(info.id)
    if getattr(view, "_info", False) is None:
        view._info = info
    return view


def run_series(store: Any, info: Any, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """A listed run's ``(steps, values)`` of ``metric`` (:func:`metric_series` of :func:`view_of`)."""
    return metric_series(view_of(store, info), metric)


def selected_infos(store: Any, runs: Iterable[Any] | None) -> list[Any]:
    """The runs to aggregate: every run of the store (``None``), or each given id, prefix, name or RunInfo.

    :raises RunNotFound: a run that is not there.
    """
    if runs is None:
        return list(store.runs())
    if isinstance(runs, str):
        runs = [runs]
    out: dict[str, Any] = {}
    for ref in runs:
        info = ref if hasattr(ref, "config") and hasattr(ref, "tags") else store.run(str(ref)).info
        out.setdefault(info.id, info)
    return list(out.values())


def _logged(store: Any, infos: list[Any], metric: str,
            entries: Iterable[Any] | None = None) -> tuple[set[str] | None, list[str]]:
    """Which of ``infos`` logged ``metric`` (from the catalog's figures when the store keeps them) and every
    metric name they logged; ``(None, names)`` when the store cannot tell without reading the runs."""
    catalog = getattr(store, "catalog", None)
    names: dict[str, None] = {}
    if catalog is None and entries is None:
        for i in infos:
            names.update(dict.fromkeys(i.last_metrics))
        return None, sorted(names)
    ids = {i.id for i in infos}
    have = set()
    for entry in entries if entries is not None else catalog():
        if entry.info.id in ids:
            names.update(dict.fromkeys(entry.metrics))
            if metric in entry.metrics:
                have.add(entry.info.id)
    return have, sorted(names)


def aggregate(store: Any, metric: str, by: str | None = "group", runs: Iterable[Any] | None = None,
              stat: str = "mean", band: Any = "std", max_points: int = DEFAULT_MAX_POINTS,
              series: Any = None, entries: Iterable[Any] | None = None) -> dict[Any, dict[str, Any]]:
    """``store.aggregate``: per group, ``metric``'s line and band across the group's runs.

    :param store: a reader of the reading protocol (a folder or the team database).
    :param by: ``group``, ``job_type``, ``project``, ``tag``, ``name``, ``config.KEY``, or ``None`` (one group,
        keyed ``None``, of every run).
    :param runs: run ids, prefixes, names or RunInfos (default: every run of the store).
    :param stat: ``"mean"`` or ``"median"``: the line.
    :param band: ``"std"`` (±1 std, ddof 0), ``"minmax"``, or a percentile pair such as ``(10, 90)``.
    :param max_points: the most grid points per group.
    :param series: ``fn(store, info, metric) -> (steps, values)`` instead of :func:`run_series` (a cache).
    :param entries: the store's catalog entries, when the caller has them (not listed again).
    :returns: ``{group value: {"n", "step", "count", stat, "std", "lo", "hi", "min", "max", "runs"}}``: ``n`` the
        group's runs that logged the metric, ``runs`` their ids, arrays per grid point. Groups none of whose
        runs logged the metric are left out.
    :raises TrackerError: a bad ``by``, ``stat``, ``band`` or ``max_points``, a ``by`` no run has, or a metric
        none of the runs logged (each one line naming what there is).
    """
    _check(stat, band, max_points)
    if not isinstance(metric, str) or not metric:
        raise TrackerError(f"metric: expected a metric name, given {metric!r}")
    infos = selected_infos(store, runs)
    groups = group_runs(infos, by)
    have, names = _logged(store, infos, metric, entries)
    if have is not None and not have:
        raise TrackerError(f"metric {metric!r}: none of the {len(infos)} runs logged it (metrics logged: "
                           f"{', '.join(names[:30]) or 'none'}{', ...' if len(names) > 30 else ''})")
    read = series or run_series
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    out: dict[Any, dict[str, Any]] = {}
    for value, members in groups.items():
        used, pairs = [], []
        for info in members:
            if have is not None and info.id not in have:
                continue
            if info.id not in cache:
                cache[info.id] = read(store, info, metric)
            s, v = cache[info.id]
            if v.size and np.isfinite(v).any():
                used.append(info.id)
                pairs.append((s, v))
        line = aggregate_series(pairs, stat=stat, band=band, max_points=max_points)
        if line is not None:
            line["runs"] = used
            out[value] = line
    if not out:
        raise TrackerError(f"metric {metric!r}: none of the {len(infos)} runs has a finite value of it "
                           f"(metrics logged: {', '.join(names[:30]) or 'none'})")
    return out


def last_values(infos: Sequence[Any], metric: str) -> list[float]:
    """The finite last values of ``metric`` of the runs that have one."""
    out = []
    for info in infos:
        v = info.last_metrics.get(metric)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
    return out


def group_table(infos: Sequence[Any], by: str | None, metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One row per group: ``{"group", "n", "runs", "metrics": {name: {"mean", "std", "n", "min", "max"}}}``.

    Each metric's figures are over the last values of the group's runs that logged it (``n`` of them; std with
    ddof 0; all ``None`` when none did), as ``tracker runs --group-by`` and the dashboard's group rows show them.

    :raises TrackerError: as :func:`group_runs`, or a metric none of the runs logged.
    """
    groups = group_runs(infos, by)
    logged = {k for i in infos for k in i.last_metrics}
    for m in metrics:
        if m not in logged:
            names = sorted(logged)
            raise TrackerError(f"metric {m!r}: none of the {len(infos)} runs logged it (metrics logged: "
                               f"{', '.join(names[:30]) or 'none'}{', ...' if len(names) > 30 else ''})")
    rows = []
    for value, members in groups.items():
        figures = {}
        for m in metrics:
            vals = np.asarray(last_values(members, m))
            figures[m] = {"mean": float(vals.mean()) if vals.size else None,
                          "std": float(vals.std()) if vals.size else None, "n": int(vals.size),
                          "min": float(vals.min()) if vals.size else None,
                          "max": float(vals.max()) if vals.size else None}
        rows.append({"group": value, "n": len(members), "runs": [i.id for i in members], "metrics": figures})
    return rows


__all__ = ["BY_FORMS", "DEFAULT_MAX_POINTS", "NO_GROUP", "STATS", "aggregate", "aggregate_series", "check_by",
           "group_runs", "group_table", "group_values", "last_values", "metric_series", "parse_band", "run_series",
           "selected_infos", "view_of"]
