"""What the dashboard shows of groups of runs: ``GET /api/aggregate``, as plain data (no web framework here).

The runs page and the compare page ask for one or more metrics of a set of
runs (ids, or the runs page's own filters) grouped by ``group``, ``job_type``,
``project``, ``tag`` or ``config.KEY``; each group comes back as its line,
band, per-bucket min/max and the number of runs at each step
(:mod:`tracker.read.aggregate`). A run's series of a metric is kept in memory
while the run's figures of that metric (count, last step, last value) stay the
same, so a page that polls, or another page over the same runs, reads no run
twice; the cache holds at most :data:`SeriesCache.max_points` values.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from tracker.core.errors import RunNotFound, TrackerError
from tracker.read.aggregate import NO_GROUP, aggregate, group_runs, parse_band, run_series

#: The most metrics one request may ask for, and the most runs a page aggregates.
MAX_METRICS = 12
MAX_RUNS = 20_000


class SeriesCache:
    """Each run's ``(steps, values)`` of a metric, kept while the catalog's figures of it are unchanged.

    :param max_points: the most values kept over every run and metric (least recently used go first).
    """

    def __init__(self, max_points: int = 4_000_000) -> None:
        self.max_points = max_points
        self._kept: OrderedDict[tuple[str, str], tuple[Any, np.ndarray, np.ndarray]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def reader(self, entries: dict[str, Any]) -> Any:
        """``fn(store, info, metric)`` for :func:`tracker.read.aggregate.aggregate`, through the cache.

        :param entries: per run id, its catalog entry (whose per-metric figures say a series changed).
        """
        def read(store: Any, info: Any, metric: str) -> tuple[np.ndarray, np.ndarray]:
            entry = entries.get(info.id)
            f = entry.metrics.get(metric) if entry is not None else None
            sig = None if f is None else (f.get("count"), f.get("last_step"), repr(f.get("last")), info.status)
            key = (info.id, metric)
            with self._lock:
                hit = self._kept.get(key)
                if hit is not None and sig is not None and hit[0] == sig and info.status != "running":
                    self._kept.move_to_end(key)
                    return hit[1], hit[2]
            steps, values = run_series(store, info, metric)
            if sig is not None:
                self._put(key, sig, steps, values)
            return steps, values

        return read

    def _put(self, key: tuple[str, str], sig: Any, steps: np.ndarray, values: np.ndarray) -> None:
        size = int(values.size)
        if size > self.max_points // 4:
            return  # one huge run would push out hundreds of small ones
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._size -= int(old[2].size)
            self._kept[key] = (sig, steps, values)
            self._size += size
            while self._size > self.max_points and self._kept:
                _, dropped = self._kept.popitem(last=False)
                self._size -= int(dropped[2].size)


def _floats(values: np.ndarray) -> list[float | None]:
    out = values.tolist()
    if not np.isfinite(values).all():
        out = [v if math.isfinite(v) else None for v in out]
    return out


def group_label(value: Any) -> str:
    """A group's value as the page shows it (``None``: the runs without the field or key)."""
    if value is None:
        return NO_GROUP
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def groups_json(agg: dict[Any, dict[str, Any]], stat: str) -> list[dict[str, Any]]:
    """The groups of an aggregate as the chart draws them: ``x``, ``y``, ``y_min``/``y_max``, band, n, std."""
    out = []
    for value, g in agg.items():
        out.append({"key": value, "label": group_label(value), "n": g["n"], "runs": g["runs"],
                    "x": g["step"].tolist(), "y": _floats(g[stat]), "std": _floats(g["std"]),
                    "lo": _floats(g["lo"]), "hi": _floats(g["hi"]), "y_min": _floats(g["min"]),
                    "y_max": _floats(g["max"]), "count": g["count"].tolist()})
    return out


def aggregate_doc(store: Any, infos: Sequence[Any], metrics: list[str], by: str | None, *, stat: str = "mean",
                  band: Any = "std", max_points: int = 1000, cache: SeriesCache | None = None,
                  figures: dict[str, Any] | None = None) -> dict[str, Any]:
    """``GET /api/aggregate``'s answer: per metric its groups, or the one-line reason it has none.

    :param figures: per run id, its catalog entry (lets ``cache`` tell a series that changed).
    :raises TrackerError: a bad ``by`` or one no run has, a bad ``band`` (a 400: nothing can be drawn).
    """
    band = parse_band(band)
    out: dict[str, Any] = {"by": by, "stat": stat, "band": band if isinstance(band, str) else list(band),
                           "runs": len(infos), "metrics": {}, "errors": {}}
    groups = group_runs(infos, by)
    out["groups"] = [{"key": k, "label": group_label(k), "n": len(v)} for k, v in groups.items()]
    if not infos:
        return out
    read = cache.reader(figures or {}) if cache is not None else None
    for metric in metrics:
        try:
            agg = aggregate(store, metric, by, list(infos), stat, band, max_points, series=read,
                            entries=list(figures.values()) if figures else None)
        except TrackerError as exc:  # this metric has nothing to draw; the others still do
            out["errors"][metric] = str(exc)
            continue
        out["metrics"][metric] = groups_json(agg, stat)
    return out


def matches(info: Any, project: str | None, status: str | None, tags: list[str], text: str | None) -> bool:
    """Whether a run passes the runs page's filters (as ``GET /api/runs`` applies them)."""
    if (project is not None and info.project != project) or (status is not None and info.status != status):
        return False
    if tags and not all(t in info.tags for t in tags):
        return False
    if text:
        needle = text.casefold()
        hay = [info.id, info.name or "", info.project or "", *info.tags, str(info.notes or ""), info.group or "",
               info.job_type or ""]
        return any(needle in str(h).casefold() for h in hay)
    return True


def select_runs(store: Any, entries: list[Any] | None, refs: list[str] | None, listing: Any) -> list[Any]:
    """The runs of a request: the given ids (or unique prefixes) in that order, else the listing's (filtered).

    :param listing: ``fn(infos) -> infos`` applying the request's filters (the runs page's).
    :raises RunNotFound: an id that is not there.
    """
    infos = [e.info for e in entries] if entries is not None else store.runs()
    if refs is None:
        return listing(infos)
    by_id = {i.id: i for i in infos}
    out: dict[str, Any] = {}
    for ref in refs:
        info = by_id.get(ref)
        if info is None:
            matches = [i for i in by_id if i.startswith(ref)]
            if len(matches) != 1:
                raise RunNotFound(f"no run {ref!r} in this store" if not matches else
                                  f"{ref!r} is ambiguous: {len(matches)} runs match", matches)
            info = by_id[matches[0]]
        out.setdefault(info.id, info)
    return list(out.values())


__all__ = ["MAX_METRICS", "MAX_RUNS", "SeriesCache", "aggregate_doc", "group_label", "groups_json", "matches",
           "select_runs"]
