"""What the dashboard's endpoints return, as plain data: listing, the run page's parts, panels, compare.

The run page is a list of parts (:data:`RUN_PARTS`): each is a name and a
function of the :class:`tracker.RunView` whose result goes into
``GET /api/runs/{id}`` under that name. A part that raises gives
``{"error": "..."}`` under its name and the other parts still come. To add a
section to the run page, add a part here (:func:`add_run_part`) and a
section in ``static/sections.js`` (see docs/ui.md).
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError
from tracker.core.figures import figures_json
from tracker.core.format import RUN_ID_RE
from tracker.core.text import flatten

STATUSES = ("running", "finished", "failed", "crashed", "stopped")
_NONFINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def is_run_id(ref: str) -> bool:
    """Whether ``ref`` may name a run folder (the store's own rule: ``[A-Za-z0-9_-]{1,64}``)."""
    return isinstance(ref, str) and bool(RUN_ID_RE.match(ref))


_PLAIN = frozenset((str, int, bool, type(None)))


def strict(value: Any) -> Any:
    """``value`` with numpy numbers as Python ones and NaN/infinities as the store writes them."""
    t = type(value)
    if t in _PLAIN:
        return value
    if t is dict:
        # Plain values (most of a listing) are taken with one type test, without a call.
        plain = _PLAIN
        return {k if type(k) is str else str(k):
                v if type(v) in plain or (type(v) is float and v - v == 0.0) else strict(v)
                for k, v in value.items()}
    if t is list:
        plain = _PLAIN
        return [v if type(v) in plain or (type(v) is float and v - v == 0.0) else strict(v) for v in value]
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        return "NaN" if math.isnan(value) else _NONFINITE[float(value)]
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    if isinstance(value, (str, int, bool)):
        return value
    if type(value).__module__ == "numpy":
        if getattr(value, "ndim", None) == 0:
            return strict(value.item())
        if hasattr(value, "tolist"):
            return strict(value.tolist())
    return str(value)


def info_json(info: Any) -> dict[str, Any]:
    """A RunInfo as plain data, with ``duration`` (until now for a running run)."""
    import time

    out = info.to_dict(copy=False)  # the caller encodes it (strict) into a new document
    if info.status == "running" and info.created_at is not None:
        out["duration"] = time.time() - info.created_at
    return out


def catalog_stats(figures: dict[str, dict[str, Any]], names: list[str]) -> dict[str, dict[str, Any]]:
    """``{name: {"min", "max", "last", "count", "min_step", "max_step", "last_step"}}`` from catalog figures."""
    keys = ("min", "max", "last", "count", "min_step", "max_step", "last_step")
    return {k: {f: figures[k][f] for f in keys} for k in names if k in figures}


class StatsCache:
    """Min, max and last of metrics per run, remembered until the run's segments change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[Any, dict[str, dict[str, Any]]]] = {}

    @staticmethod
    def _signature(run_dir: Any) -> tuple:
        try:
            with os.scandir(run_dir) as it:
                return tuple(sorted((e.name, e.stat().st_size) for e in it if e.name.endswith(".jsonl")))
        except OSError:
            return ()

    def get(self, store: Any, run_id: str, names: list[str]) -> dict[str, dict[str, Any]]:
        """``{name: {"min", "max", "last"}}`` of the metrics of ``names`` that the run has."""
        import numpy as np

        from tracker.ui.series import present

        sig = self._signature(store.runs_dir / run_id)
        with self._lock:
            hit = self._runs.get(run_id)
        if hit is None or hit[0] != sig:
            try:
                from tracker.store import RunView

                cols = RunView(store.path, run_id, host=store._host).metrics()
            except Exception:  # noqa: BLE001 - a run that cannot be read shows no stats
                cols = {}
            stats = {}
            for k, col in cols.items():
                if k in ("step", "time"):
                    continue
                vals = col[present(col)]
                finite = vals[np.isfinite(vals)]
                stats[k] = {"min": float(finite.min()) if finite.size else None,
                            "max": float(finite.max()) if finite.size else None,
                            "last": float(vals[-1]) if vals.size else None}
            hit = (sig, stats)
            with self._lock:
                self._runs[run_id] = hit
        return {k: v for k, v in hit[1].items() if k in names}


# --- the run page -------------------------------------------------------------------------------

def _summaries(view: Any, api: Any) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [s.to_dict() for s in view.summarize()]


def _metric_names(view: Any, api: Any) -> list[str]:
    figures = getattr(view, "metric_stats", None)
    if figures is not None:
        # From the segments' derived figures: the page's first request reads no column.
        return list(figures())
    cols, _, _ = api.cache.read(view.path)
    from tracker.ui.series import present

    return [k for k, c in cols.items() if k not in ("step", "time") and present(c).any()]


def _problems(view: Any, api: Any) -> list[dict[str, Any]]:
    # A store with columns of its own (the team database) met its damaged lines when it was synced.
    problems = [] if hasattr(view, "metric_columns") else api.cache.read(view.path)[2]
    seen = [{"segment": os.path.basename(p.path), "line": p.line, "kind": p.kind, "message": p.message}
            for p in view.problems]
    return (problems + seen)[:50]


def writers_seen(run_dir: Any) -> list[dict[str, Any]]:
    """The run's writers as its segments tell them (``<host>-<pid>-<hex>.jsonl``), with the time of
    each one's last line: what a crashed run's page says about who was logging, where."""
    from tracker.read.segment import read_segment, segment_paths

    out = []
    try:
        paths = segment_paths(Path(run_dir))
    except TrackerError:
        return out
    for path in paths:
        seg = read_segment(path)
        out.append(writer_json(path.stem, (seg.last or {}).get("time") or seg.mtime, seg.size))
    return out


def writer_json(writer: str, last_written: float | None, size: int) -> dict[str, Any]:
    """One writer of a run: its id, host and process (from the id), when its last line was written, its bytes."""
    host, _, _ = writer.rpartition("-")
    host, _, pid = host.rpartition("-")
    return {"writer": writer, "host": host or None, "pid": int(pid) if pid.isdigit() else None,
            "last_written": last_written, "bytes": size}


def _info(view: Any, api: Any) -> dict[str, Any]:
    out = info_json(view.info)
    if out.get("status") == "crashed":
        # What is known of a run whose writer died: when it last logged, by which host and process.
        # The team database keeps its writers in a table; a folder has them as segment files.
        of_view = getattr(view, "writers_seen", None)
        out["writers_seen"] = of_view() if of_view is not None else writers_seen(view.path)
    return out


def _build(view: Any, api: Any) -> dict[str, int] | None:
    """How much of the run's JSONL has no derived data yet (stat calls only): the page's progress line."""
    from tracker.core.urls import is_database_url
    from tracker.read.index.cold import cold_bytes

    path = getattr(api.store, "path", None)
    # Only a folder builds derived data as it is read; the team database has nothing to build.
    if path is None or not hasattr(api.store, "catalog") or is_database_url(str(path)):
        return None
    return cold_bytes(path, view.id)


#: The parts of ``GET /api/runs/{id}``, in order: ``(name, fn(view, api))``.
RUN_PARTS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("info", _info),
    ("build", _build),
    ("schemas", lambda view, api: view.schemas()),
    ("metric_names", _metric_names),
    ("summaries", _summaries),
    ("panels", lambda view, api: [p for p in panel_list(view)]),
    ("problems", _problems),
]


def _capture(name: str) -> Callable[[Any, Any], Any]:
    # Issue 17: the capture sections' data (tracker/capture/web.py), read only when a run has such records.
    def part(view: Any, api: Any) -> Any:
        from tracker.ui import capture as web

        return getattr(web, name)(view)

    return part


RUN_PARTS[-1:-1] = [("artifacts", _capture("artifacts_json")), ("images", _capture("images_json")),
                    ("system", _capture("system_figures"))]


def _logged(name: str) -> Callable[[Any, Any], Any]:
    # W&B-style values: strings logged beside the metrics, logged tables, define_metric's x-axes (ui/logged.py).
    def part(view: Any, api: Any) -> Any:
        from tracker.ui import logged

        return getattr(logged, name)(view)

    return part


def _alerts(view: Any, api: Any) -> list[dict[str, Any]]:
    # The run's alerts (run.alert and the watcher's rules), read only when it holds some.
    from tracker.alerts.record import read_alerts

    return read_alerts(view) if "alert" in view.schemas() else []


RUN_PARTS[-1:-1] = [("texts", _logged("texts_json")), ("tables", _logged("tables_json")),
                    ("axes", _logged("axes_json")), ("alerts", _alerts)]


def add_run_part(name: str, fn: Callable[[Any, Any], Any], *, before: str | None = None) -> None:
    """Add a part to the run endpoint (a later name replaces an earlier one of the same name).

    :param name: the key in the JSON; the page's section of the same id reads it.
    :param fn: ``fn(view, api) -> plain data``; ``api.store`` is the store.
    :param before: the name of the part it goes before (default: at the end).
    """
    global RUN_PARTS
    parts = [p for p in RUN_PARTS if p[0] != name]
    at = next((i for i, p in enumerate(parts) if p[0] == before), len(parts))
    parts.insert(at, (name, fn))
    RUN_PARTS = parts


def part_names() -> list[str]:
    """The names of the run page's parts, in order."""
    return [name for name, _ in RUN_PARTS]


def run_detail(view: Any, api: Any, names: list[str] | None = None) -> dict[str, Any]:
    """The parts of the run page (``names``, or every one); a part that raises is ``{"error": ...}``.

    The page asks first for the parts its header and charts need, then for each of the
    others on its own, so that a slow part never holds back the rest.
    """
    out: dict[str, Any] = {"id": view.id}
    for name, fn in RUN_PARTS:
        if names is not None and name not in names:
            continue
        try:
            out[name] = fn(view, api)
        except Exception as exc:  # noqa: BLE001 - one broken part never hides the others
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


# --- panels -------------------------------------------------------------------------------------

def registered_panels(host: Any) -> list[tuple[str, Any]]:
    """``(plugin, Panel)`` for every panel the plugins offer."""
    panels = getattr(host, "panels", None)
    if isinstance(panels, dict):
        owners = getattr(host, "panel_owner", {})
        return [(owners.get(name, ""), p) for name, p in panels.items()]
    return []


def panel_list(view: Any) -> list[dict[str, Any]]:
    """The panels that apply to the run (their schema is present), without figures."""
    present = set(view.schemas())
    return [{"name": p.name, "title": p.title or p.name, "schema": p.schema, "plugin": plugin}
            for plugin, p in registered_panels(view.host) if p.schema in present]


def panels_of(view: Any, names: list[str] | None = None) -> list[dict[str, Any]]:
    """Each panel of the run (of ``names``, or every one) with its figures as JSON.

    A panel whose function raised has ``"error"`` instead of ``"figures"``.
    """
    out = []
    tables: dict[str, Any] = {}
    present = set(view.schemas())
    for plugin, p in registered_panels(view.host):
        if p.schema not in present or (names is not None and p.name not in names):
            continue
        item = {"name": p.name, "title": p.title or p.name, "schema": p.schema, "plugin": plugin}
        try:
            table = tables.get(p.schema)
            if table is None:
                table = tables[p.schema] = view.table(p.schema)
            item["figures"] = figures_json(p.fn(table, view), p.name)
        except Exception as exc:  # noqa: BLE001 - a broken panel shows its error; the others render
            item["error"] = f"{type(exc).__name__}: {exc}"
        out.append(item)
    return out


# --- compare ------------------------------------------------------------------------------------

_ABSENT = object()


def compare(views: list[Any]) -> dict[str, Any]:
    """Runs' info, the config keys that differ (dotted), and summaries side by side with the best marked."""
    from tracker.read.compare import compare_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        side = compare_runs(views)
    infos = [v.info for v in views]
    flats = [dict(flatten(i.config or {})) for i in infos]
    keys = list(dict.fromkeys(k for f in flats for k in f))
    diff, same = {}, {}
    for k in keys:
        values = [f.get(k, _ABSENT) for f in flats]
        if all(v is not _ABSENT for v in values) and all(_same(v, values[0]) for v in values):
            same[k] = values[0]
        else:
            diff[k] = [None if v is _ABSENT else v for v in values]
    sections = [s for s in side["sections"] if s["title"] != "Config"]
    return {"runs": [info_json(i) for i in infos], "config_diff": diff, "config_same": same,
            "sections": sections}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b
