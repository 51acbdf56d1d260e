"""What each MCP tool answers, as plain strict-JSON data: runs, one run, metrics, comparisons, SQL, alerts, sweeps.

Every list is capped: a capped answer says ``"truncated": true`` and gives
``"total"``. Nothing here writes to the store (the derived data under
``<store>/index/`` aside, as every reader). Errors are tracker errors with
the tracker's message; the server turns them into the SDK's tool errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from tracker.core.errors import TrackerError

MAX_LIMIT = 500
MAX_POINTS = 2000
MAX_TEXT = 4000
SUMMARY_ROWS = 50


def strict(doc: Any) -> Any:
    """``doc`` as strict JSON data: NaN and infinities as the store's strings, numpy values as numbers."""
    from tracker.core.format import encode_nonfinite

    return orjson.loads(orjson.dumps(_encode(doc, encode_nonfinite), option=orjson.OPT_SERIALIZE_NUMPY |
                                     orjson.OPT_NON_STR_KEYS))


def _encode(doc: Any, enc: Any) -> Any:
    if isinstance(doc, dict):
        return {str(k): _encode(v, enc) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_encode(v, enc) for v in doc]
    if isinstance(doc, np.generic):
        doc = doc.item()
    if isinstance(doc, str) and len(doc) > MAX_TEXT:
        return doc[:MAX_TEXT] + f"... ({len(doc) - MAX_TEXT} more characters cut)"
    return enc(doc)


def _limit(limit: Any, default: int, top: int = MAX_LIMIT) -> int:
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= top:
        raise TrackerError(f"limit: expected an int from 1 to {top}, given {limit!r}")
    return limit


def capped(key: str, items: list[Any], limit: int) -> dict[str, Any]:
    """``{key: items[:limit], "total": n, "truncated": n > limit}``."""
    return {key: items[:limit], "total": len(items), "truncated": len(items) > limit}


class _Entry:
    """A run as listed: its info, and records per schema when the store's catalog gives them."""

    def __init__(self, info: Any, schemas: dict[str, int] | None = None) -> None:
        self.info, self.schemas = info, schemas or {}


def entries(store: Any, project: str | None = None, status: str | None = None, tag: str | None = None) -> list[Any]:
    """The store's catalog entries, or (a store without a catalog: the team store) its infos."""
    catalog = getattr(store, "catalog", None)
    if catalog is not None:
        return catalog(project, status, tag)
    return [_Entry(info) for info in store.runs(project, status, tag)]


def _run_row(entry: Any) -> dict[str, Any]:
    info = entry.info
    return {"id": info.id, "name": info.name, "project": info.project, "status": info.status,
            "created_at": info.created_at, "ended_at": info.ended_at, "tags": list(info.tags),
            "last_step": info.last_step, "records": info.records, "alerts": entry.schemas.get("alert", 0),
            "last_metrics": dict(info.last_metrics)}


def list_runs(store: Any, project: str | None = None, status: str | None = None, tag: str | None = None,
              limit: int | None = 50) -> dict[str, Any]:
    """Runs newest first (id, name, project, status, times, tags, last step, alerts, last metric values)."""
    n = _limit(limit, 50)
    found = entries(store, project, status, tag)
    return strict({"runs": [_run_row(e) for e in found[:n]], "total": len(found), "truncated": len(found) > n})


def get_run(store: Any, run: str) -> dict[str, Any]:
    """One run: info, config, summary, notes, error, per-metric figures, records per schema, summaries."""
    view = store.run(run)
    info = view.info
    summaries = []
    for s in view.summarize():
        rows = list(s.rows)
        summaries.append({"title": s.title, "schema": getattr(s, "schema", None), "rows": rows[:SUMMARY_ROWS],
                          "total": len(rows), "truncated": len(rows) > SUMMARY_ROWS, "notes": list(s.notes)})
    return strict({"id": info.id, "name": info.name, "project": info.project, "status": info.status,
                   "created_at": info.created_at, "ended_at": info.ended_at, "tags": list(info.tags),
                   "notes": info.notes, "error": info.error, "config": info.config, "summary": info.summary,
                   "last_step": info.last_step, "records": info.records, "metrics": view.metric_stats(),
                   "schemas": view.schema_counts(), "summaries": summaries})


#: What a downsampled series holds, said in every ``get_metrics`` answer.
SAMPLING = ("A series of more records than max_points is cut into max_points buckets of consecutive records, "
            "as the dashboard draws it: the first and the last record are points of their own, as logged (the "
            "last point is where the run ended); every other point is a bucket: x its first step, y the mean "
            "of its values, y_min and y_max their min and max (a one-step spike survives). NaN is null.")


def get_metrics(store: Any, run: str, names: list[str] | None = None, max_points: int | None = 200) -> dict[str, Any]:
    """Metric series against step, downsampled as the dashboard does (:mod:`tracker.ui.series`): the first and
    last records kept as logged, every other point a bucket's first step, mean, min and max; NaN as null."""
    from tracker.ui.series import present, series_json

    points = _limit(max_points, 200, MAX_POINTS)
    view = store.run(run)
    cols = view.metrics()
    steps = cols.get("step", np.zeros(0))
    available = [k for k in cols if k != "step"]
    wanted = available if not names else list(names)
    unknown = [n for n in wanted if n not in cols or n == "step"]
    if unknown:
        raise TrackerError(f"run {view.id} has no metric {', '.join(map(repr, unknown))} "
                           f"(it has: {', '.join(available) or 'none'})")
    series = {}
    for name in wanted:
        y = cols[name]
        keep = present(y)
        x, yv = steps[keep], y[keep]
        s = series_json(x, yv, points, True)
        s["points_logged"] = int(yv.size)
        s["downsampled"] = int(yv.size) > points
        series[name] = s
    return {"run": view.id, "max_points": points, "sampling": SAMPLING, "series": series}


def compare_runs(store: Any, runs: list[str]) -> dict[str, Any]:
    """Each run's config and last metric values, and the config keys whose values differ."""
    if not isinstance(runs, list) or len(runs) < 2:
        raise TrackerError("compare_runs: give at least two runs")
    if len(runs) > 20:
        raise TrackerError(f"compare_runs: at most 20 runs, given {len(runs)}")
    views = [store.run(r) for r in runs]
    flat = [_flatten(v.info.config) for v in views]
    keys = sorted({k for f in flat for k in f})
    diff = {k: [f.get(k) for f in flat] for k in keys if len({orjson.dumps(f.get(k)) for f in flat}) > 1}
    return strict({"runs": [{"id": v.info.id, "name": v.info.name, "project": v.info.project,
                             "status": v.info.status, "config": v.info.config,
                             "last_metrics": {k: s.get("last") for k, s in v.metric_stats().items()}}
                            for v in views], "config_diff": diff})


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict) and v:
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def query(store: Any, sql: str, limit: int | None = 100) -> dict[str, Any]:
    """Read-only SQL over the store's views, as ``tracker query`` runs it; rows capped at ``limit``."""
    from tracker.query.rows import run_query_capped

    n = _limit(limit, 100, 1000)
    columns, rows, total = run_query_capped(store, sql, n)
    return strict({"columns": columns, "rows": rows, "total": total, "truncated": total > n})


def list_alerts(store: Any, run: str | None = None, limit: int | None = 100) -> dict[str, Any]:
    """Alerts of one run (or of every run), newest first: time, run, level, title, text, suppressed, condition."""
    from tracker.alerts.record import store_alerts

    n = _limit(limit, 100)
    items = store_alerts(store, run)[::-1]
    return strict(capped("alerts", items, n))


def list_sweeps(store: Any) -> dict[str, Any]:
    """Sweeps of the store: each sweep's trials (runs tagged ``sweep:<id>``), their states and project."""
    from pathlib import Path

    sweeps: dict[str, dict[str, Any]] = {}
    folder = Path(getattr(store, "path", "")) / "sweeps"
    if folder.is_dir():
        for p in sorted(folder.iterdir()):
            if p.is_dir():
                sweeps[p.name] = {"id": p.name, "trials": 0, "states": {}, "projects": []}
    for e in entries(store):
        for t in e.info.tags:
            if t.startswith("sweep:"):
                s = sweeps.setdefault(t[6:], {"id": t[6:], "trials": 0, "states": {}, "projects": []})
                s["trials"] += 1
                s["states"][e.info.status] = s["states"].get(e.info.status, 0) + 1
                if e.info.project not in s["projects"]:
                    s["projects"].append(e.info.project)
    items = list(sweeps.values())
    return strict({**capped("sweeps", items, MAX_LIMIT),
                   "note": "" if items else "no sweeps in this store (tracker sweep create makes one)"})
