"""The dashboard's Starlette app: the JSON API under ``/api/`` and the page (see docs/ui.md).

Routes only: reading goes through the public reading API (``Store``,
``RunView``), series through :mod:`tracker.ui.series`, live reads through
:mod:`tracker.ui.live`, the run page's parts through :mod:`tracker.ui.parts`.
Every endpoint is read-only; the only files it creates in the store are derived data under ``<store>/index/``
(as every reader does; see docs/ui.md, "Security").
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tracker.core.errors import RunNotFound, StoreError, StoreUnavailable, TrackerError
from tracker.read.index import gc_paused
from tracker.ui import parts
from tracker.ui.auth import AuthMiddleware, make_auth
from tracker.ui.hosts import HostCheck
from tracker.ui.live import MetricsCache, TeamColumnsCache, read_since
from tracker.ui.logged import axes_json, axis_series
from tracker.ui.series import (
    DEFAULT_MAX_POINTS,
    MAX_POINTS_LIMIT,
    CursorError,
    decode_cursor,
    encode_cursor,
    present,
    series_json,
)

STATIC = Path(__file__).resolve().parent / "static"

_CSP = (b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors ")


def security_headers(frame_ancestors: bytes = b"'none'") -> list[tuple[bytes, bytes]]:
    """The headers of every response: scripts only from the app itself, nothing inline, framing as given.

    :param frame_ancestors: the CSP source list of who may frame the pages (``'none'``: nobody,
        and ``X-Frame-Options: DENY`` for older browsers).
    """
    headers = [(b"content-security-policy", _CSP + frame_ancestors), (b"x-content-type-options", b"nosniff"),
               (b"referrer-policy", b"no-referrer")]
    return headers + [(b"x-frame-options", b"DENY")] if frame_ancestors == b"'none'" else headers


#: Sent with every response of ``tracker ui``: no framing at all.
SECURITY_HEADERS = security_headers()


class BadRequest(Exception):
    """A bad parameter: answered with 400 and its message."""


def json_response(data: Any, status: int = 200) -> Response:
    """Strict JSON (no NaN or Infinity: callers encode them first)."""
    return Response(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS), status_code=status,
                    media_type="application/json", headers={"cache-control": "no-store"})


def error(status: int, message: str, **extra: Any) -> Response:
    """``{"error": message}`` with ``status``."""
    return json_response({"error": message, **extra}, status)


class SecurityHeaders:
    """ASGI middleware adding the security headers (default :data:`SECURITY_HEADERS`) to every HTTP response."""

    def __init__(self, app: Any, headers: list[tuple[bytes, bytes]] = SECURITY_HEADERS) -> None:
        self.app = app
        self.headers = headers

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [h for h in self.headers if h[0] not in names]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _parsed_param(request: Request, name: str, parse: Callable[[str], Any], expected: str) -> Any:
    """Query parameter ``name`` through ``parse``; ``None`` when absent or empty; 400 naming it when bad."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return parse(raw)
    except ValueError:
        raise BadRequest(f"{name}: expected {expected}, given {raw[:40]!r}") from None


def _ascii_int(raw: str) -> int:
    """``int(raw)`` for ASCII digits only (``int`` also takes "１２", " 12 " and "1_2")."""
    if not (raw.isascii() and raw.lstrip("-").isdigit()):
        raise ValueError(raw)
    return int(raw)


def _int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    value = _parsed_param(request, name, _ascii_int, f"an integer from {lo} to {hi}")
    if value is None:
        return default
    if not lo <= value <= hi:
        raise BadRequest(f"{name}: expected an integer from {lo} to {hi}, given {value}")
    return value


def _float_param(request: Request, name: str) -> float | None:
    """An optional finite number; ``None`` when absent or empty."""
    value = _parsed_param(request, name, float, "a number")
    if value is not None and not math.isfinite(value):
        raise BadRequest(f"{name}: expected a finite number, given {request.query_params.get(name, '')[:40]!r}")
    return value


def _names_param(request: Request, name: str) -> list[str] | None:
    raw = request.query_params.getlist(name)
    if not raw:
        return None
    return [n for r in raw for n in r.split(",") if n]


def listing_etag(body: bytes) -> str:
    """A weak ETag of a runs listing's bytes (weak: the clock-driven fields are not in them)."""
    import hashlib

    return 'W/"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def _etags(header: str) -> set[str]:
    """The entity tags of an ``If-None-Match`` header (weak comparison: ``W/`` or not, the same tag)."""
    out = set()
    for part in header.split(","):
        part = part.strip()
        if part:
            out.add(part if part.startswith("W/") else "W/" + part)
    return out


class Api:
    """The endpoints over one store."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.cache = MetricsCache()
        self.stats = parts.StatsCache()
        self.team = TeamColumnsCache()

    # --- helpers ----------------------------------------------------------------------------

    def view(self, ref: str) -> Any:
        """The run with id ``ref`` or a unique prefix of one.

        :raises BadRequest: for a string that is not a run id.
        :raises RunNotFound: for an unknown id or an ambiguous prefix (listing the candidates).
        """
        if not parts.is_run_id(ref):
            raise BadRequest(f"invalid run id {ref[:80]!r}: expected 1 to 64 characters from A-Z a-z 0-9 _ -")
        ids = self.store.run_ids()
        if ref not in ids:
            matches = [i for i in ids if i.startswith(ref)]
            if not matches:
                raise RunNotFound(f"no run {ref!r} in this store")
            if len(matches) > 1:
                shown = ", ".join(matches[:10]) + (" ..." if len(matches) > 10 else "")
                raise RunNotFound(f"{ref!r} is ambiguous: {len(matches)} runs match ({shown})", matches)
            ref = matches[0]
        return self.store.run(ref)

    def columns(self, view: Any, names: list[str] | None, since: dict[str, int] | None, *,
                times: bool = True) -> tuple[dict[str, np.ndarray], dict[str, int], list]:
        """The run's ``metrics`` columns (after the cursor ``since``), the cursor to resume from, problems.

        A store that keeps columns of its own (the team database: ``view.metric_columns``) reads
        them, only the metrics of ``names`` (and ``time`` only when ``times``); a folder reads its
        segments from byte offsets.
        """
        read = getattr(view, "metric_columns", None)
        if read is not None:
            if since is None:
                return (*self.team.read(view, names, times), [])
            cols, cursor = read(names, since, times=times)
            return cols, cursor, []
        if since is not None:
            return read_since(view.path, since)
        return self.cache.read(view.path)

    # --- endpoints ----------------------------------------------------------------------------

    def runs(self, request: Request) -> Response:
        """``GET /api/runs?project=&status=&tag=&q=&stats=a,b&default=1``, with an ETag (304 when unchanged)."""
        # Thousands of rows and no cycles: the collector's passes over them cost a sixth of the request.
        with gc_paused():
            return self._runs(request)

    def _runs(self, request: Request) -> Response:
        q = request.query_params
        tags = [t for t in q.getlist("tag") if t]
        stats = _names_param(request, "stats") or []
        if len(stats) > 50:
            raise BadRequest(f"stats: expected at most 50 metric names, given {len(stats)}")
        status = q.get("status") or None
        if status is not None and status not in parts.STATUSES:
            raise BadRequest(f"status: expected one of {', '.join(parts.STATUSES)}, given {status[:40]!r}")
        catalog = getattr(self.store, "catalog", None)
        # One listing gives infos and per-metric figures alike (the store's derived catalog).
        entries = catalog() if catalog is not None else None
        infos = [e.info for e in entries] if entries is not None else self.store.runs()
        out = parts.runs_listing(infos, project=q.get("project") or None, status=status, tags=tags,
                                 text=q.get("q") or None)
        # default=1: the statistics of the default metric come in the same answer (one load, not two).
        if q.get("default") == "1" and out["default_metric"] and out["default_metric"] not in stats:
            stats = [*stats, out["default_metric"]]
        # Rows are made strict one by one: the catalog says which infos hold no NaN or infinity,
        # and those (most) are taken as they are.
        plain = {e.info.id for e in entries if e.finite} if entries is not None else set()
        out["runs"] = [row if row["id"] in plain else parts.strict(row) for row in out["runs"]]
        if entries is not None:  # the runs list's alert badge (issue 34): records per schema from the catalog
            alerts = {e.info.id: e.schemas.get("alert", 0) for e in entries}
            for row in out["runs"]:
                row["alerts"] = alerts.get(row["id"], 0)
        if stats:
            by_id = {e.info.id: e for e in entries} if entries is not None else None
            for row in out["runs"]:
                if by_id is not None:
                    entry = by_id.get(row["id"])
                    figures = parts.catalog_stats(entry.metrics if entry is not None else {}, stats)
                else:
                    figures = self.stats.get(self.store, row["id"], stats)
                row["stats"] = parts.strict(figures)
        out["store"] = str(self.store.path)
        if not out["total"] and getattr(self.store, "empty_hint", None):
            out["hint"] = self.store.empty_hint  # a team database no run has reached yet: how runs get there
        rows = out.pop("runs")
        rest = parts.strict(out)
        # The ETag covers what the listing says, not the clock: a running run's duration (until now)
        # and "now" are left out of it, so an idle page's polls are answered 304 with no body. The
        # page draws running durations from created_at and its own clock.
        running = [row for row in rows if row.get("status") == "running" and "duration" in row]
        live = [row.pop("duration") for row in running]
        tag = listing_etag(orjson.dumps({"runs": rows, **rest}, option=orjson.OPT_NON_STR_KEYS))
        if tag in _etags(request.headers.get("if-none-match", "")):
            return Response(status_code=304, headers={"etag": tag, "cache-control": "no-cache"})
        for row, d in zip(running, live, strict=True):
            row["duration"] = d
        response = json_response({"runs": rows, **rest, "now": time.time()})
        response.headers["etag"] = tag
        response.headers["cache-control"] = "no-cache"
        return response

    def run(self, request: Request) -> Response:
        """``GET /api/runs/{id}[?parts=a,b]``: the parts of the run page (see :mod:`tracker.ui.parts`)."""
        names = _names_param(request, "parts")
        if names is not None:
            known = parts.part_names()
            unknown = [n for n in names if n not in known]
            if unknown:
                raise BadRequest(f"parts: expected names from {', '.join(known)}, given {unknown[0][:40]!r}")
        view = self.view(request.path_params["id"])
        detail = parts.run_detail(view, self, names)
        return json_response(parts.strict(detail))

    def metrics(self, request: Request) -> Response:
        """``GET /api/runs/{id}/metrics?names=&x=step|time&max_points=&since=&x_min=&x_max=``.

        ``x_min`` / ``x_max`` (in the unit of ``x``) keep only the records with
        ``x_min <= x <= x_max`` before downsampling, so ``max_points`` applies to the range.
        """
        view = self.view(request.path_params["id"])
        names = _names_param(request, "names")
        x = request.query_params.get("x", "step") or "step"
        if x not in ("step", "time", "defined"):
            raise BadRequest(f"x: expected 'step', 'time' or 'defined', given {x[:40]!r}")
        max_points = _int_param(request, "max_points", DEFAULT_MAX_POINTS, 1, MAX_POINTS_LIMIT)
        x_min = _float_param(request, "x_min")
        x_max = _float_param(request, "x_max")
        if x_min is not None and x_max is not None and x_min > x_max:
            raise BadRequest(f"x_min: expected a number at most x_max ({x_max!r}), given {x_min!r}")
        since = request.query_params.get("since")
        cursor = None
        if since is not None:
            try:
                cursor = decode_cursor(since)
            except CursorError as exc:
                raise BadRequest(str(exc)) from None
        if cursor is None and hasattr(view, "metric_columns"):
            # The team database: a series drawn before is kept while the run's change stamp holds.
            key = (view.id, None if names is None else tuple(names), x, max_points, x_min, x_max)
            series, offsets, n, problems, axes = self.team.series(
                view, key, lambda: self._series(view, names, x, max_points, x_min, x_max, None))
        else:
            series, offsets, n, problems, axes = self._series(view, names, x, max_points, x_min, x_max, cursor)
        info = view.refresh()
        body = {"series": series, "cursor": encode_cursor(offsets), "x": x, "axes": axes, "status": info.status,
                "records": n, "problems": problems[:20]}
        return json_response(parts.strict(body))

    def _series(self, view: Any, names: list[str] | None, x: str, max_points: int, x_min: float | None,
                x_max: float | None, since: dict[str, int] | None) -> tuple[dict[str, Any], dict[str, int], int, list,
                                                                       dict[str, str]]:
        """The downsampled series of the run's metrics, the cursor after them, their record count, problems,
        and the x-axis of each metric drawn against another (``x=defined``)."""
        # x=defined: the metrics define_metric gave an x-axis are drawn against it, the others by step.
        axes = axes_json(view) if x == "defined" else {}
        wanted = names if names is None or not axes else list(dict.fromkeys(
            [*names, *(axes[n] for n in names if n in axes)]))
        cols, offsets, problems = self.columns(view, wanted, since, times=x == "time")
        axes = {k: v for k, v in axes.items() if v in cols}
        xs = cols["time"] if x == "time" else cols["step"]
        in_range = None
        if x_min is not None or x_max is not None:
            in_range = np.ones(xs.shape, dtype=bool)
            if x_min is not None:
                in_range &= xs >= x_min
            if x_max is not None:
                in_range &= xs <= x_max
        series = {}
        for name, col in cols.items():
            if name in ("step", "time") or (names is not None and name not in names):
                continue
            if name in axes:
                against = axis_series(cols, name, axes[name], x_min, x_max, max_points)
                if against is not None:
                    series[name] = against
                continue
            keep = present(col)
            if in_range is not None:
                keep &= in_range
            if not keep.any():
                continue
            whole = keep.all()
            series[name] = series_json(xs if whole else xs[keep], col if whole else col[keep], max_points, x != "time")
        return series, offsets, int(cols["step"].size), problems, axes

    def panels(self, request: Request) -> Response:
        """``GET /api/runs/{id}/panels[?names=a,b]``: the plugins' figures for the schemas of the run."""
        view = self.view(request.path_params["id"])
        names = _names_param(request, "names")
        return json_response(parts.strict({"panels": parts.panels_of(view, names)}))

    def compare(self, request: Request) -> Response:
        """``GET /api/compare?runs=a,b``: info, config diff and summaries side by side."""
        refs = _names_param(request, "runs") or []
        if len(refs) < 2:
            raise BadRequest(f"runs: expected at least two run ids separated by commas, given {len(refs)}")
        if len(refs) > 20:
            raise BadRequest(f"runs: expected at most 20 runs, given {len(refs)}")
        views = [self.view(r) for r in refs]
        return json_response(parts.strict(parts.compare(views)))


def _aggregate(api: Api, request: Request) -> Response:
    """``GET /api/aggregate?metrics=a,b&by=KEY&runs=id,id`` (or the runs page's ``project=&status=&tag=&q=``)
    ``&stat=mean|median&band=std|minmax|pLO-pHI&max_points=N``: per metric, one line and band per group."""
    from tracker.read.aggregate import group_runs, parse_band
    from tracker.ui.groups import MAX_METRICS, MAX_RUNS, SeriesCache, aggregate_doc, matches, select_runs

    q = request.query_params
    metrics = _names_param(request, "metrics") or []
    if not metrics or len(metrics) > MAX_METRICS:
        raise BadRequest(f"metrics: expected 1 to {MAX_METRICS} metric names separated by commas, given {len(metrics)}")
    stat = q.get("stat") or "mean"
    if stat not in ("mean", "median"):
        raise BadRequest(f"stat: expected 'mean' or 'median', given {stat[:40]!r}")
    status = q.get("status") or None
    if status is not None and status not in parts.STATUSES:
        raise BadRequest(f"status: expected one of {', '.join(parts.STATUSES)}, given {status[:40]!r}")
    refs = _names_param(request, "runs")
    for ref in refs or ():
        if not parts.is_run_id(ref):
            raise BadRequest(f"runs: invalid run id {ref[:80]!r}")
    max_points = _int_param(request, "max_points", 1000, 1, 10_000)
    tags = [t for t in q.getlist("tag") if t]
    catalog = getattr(api.store, "catalog", None)
    with gc_paused():
        entries = catalog() if catalog is not None else None
        infos = select_runs(api.store, entries, refs, lambda infos: [
            i for i in infos if matches(i, q.get("project") or None, status, tags, q.get("q") or None)])
        if len(infos) > MAX_RUNS:
            raise BadRequest(f"runs: at most {MAX_RUNS} runs are aggregated, these filters keep {len(infos)}")
        by, band = q.get("by") or None, q.get("band") or "std"
        try:  # what makes nothing drawable is a bad request: a key no run has, a band that does not parse
            parse_band(band)
            group_runs(infos, by)
        except TrackerError as exc:
            raise BadRequest(str(exc)) from None
        if getattr(api, "series", None) is None:
            api.series = SeriesCache()
        kept = {e.info.id: e for e in entries} if entries is not None else {}
        doc = aggregate_doc(api.store, infos, metrics, by, stat=stat, band=band, max_points=max_points,
                            cache=api.series, figures=kept)
    return json_response(parts.strict(doc))


def _report(api: Api, request: Request) -> Response:
    """``GET /api/report?runs=id,id`` (or ``project=&status=&tag=&q=``) ``&by=KEY&metrics=a,b&title=T``: the report
    file of ``tracker report`` for what a page shows, sent as an attachment (saved, never shown in the app)."""
    import re

    from tracker.ui.groups import matches, select_runs
    from tracker.ui.report import MAX_RUNS, build

    q = request.query_params
    refs = _names_param(request, "runs")
    for ref in refs or ():
        if not parts.is_run_id(ref):
            raise BadRequest(f"runs: invalid run id {ref[:80]!r}")
    status = q.get("status") or None
    if status is not None and status not in parts.STATUSES:
        raise BadRequest(f"status: expected one of {', '.join(parts.STATUSES)}, given {status[:40]!r}")
    metrics = _names_param(request, "metrics")
    title = (q.get("title") or "").strip()[:200] or None
    tags = [t for t in q.getlist("tag") if t]
    catalog = getattr(api.store, "catalog", None)
    with gc_paused():
        entries = catalog() if catalog is not None else None
        infos = select_runs(api.store, entries, refs, lambda infos: [
            i for i in infos if matches(i, q.get("project") or None, status, tags, q.get("q") or None)])
        if not infos:
            raise BadRequest("no run to report: the filters keep none")
        if len(infos) > MAX_RUNS:
            raise BadRequest(f"{len(infos)} runs: a report holds at most {MAX_RUNS}; filter or select fewer")
        try:
            text = build(api.store, infos, by=q.get("by") or None, metrics=metrics, title=title,
                         environment=q.get("environment") != "0", entries=entries)
        except StoreError:
            raise
        except TrackerError as exc:  # a key no run has, a metric none logged: what was asked cannot be drawn
            raise BadRequest(str(exc)) from None
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", title or "report").strip("-.")[:60] or "report"
    return Response(text.encode(), media_type="text/html; charset=utf-8", headers={
        "content-disposition": f'attachment; filename="{name}.html"', "cache-control": "no-store",
        # Were it ever shown from here, it would run nothing: the app's pages keep their own policy.
        "content-security-policy": "default-src 'none'; sandbox"})


def _blob(api: Api, request: Request) -> Response:
    """``GET /api/runs/{id}/blobs/{sha256}[?download=1]``: a stored file or image the run names.

    Only a blob that one of the run's records names is served, from its
    content address inside the store, after its bytes were hashed and found
    equal to that name: an unknown hash is a 404, a damaged or
    missing blob a 500 naming it. ``download=1`` asks the browser to save it.
    """
    from tracker.ui.capture import checked_blob

    sha = request.path_params["sha"]
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise BadRequest(f"not a sha256 (64 lowercase hex digits): {sha[:80]!r}")
    view = api.view(request.path_params["id"])
    try:
        path, meta = checked_blob(view, sha)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        return error(500, str(exc))
    except TrackerError as exc:
        return error(404, str(exc))
    disposition = "attachment" if request.query_params.get("download") else "inline"
    headers = {"cache-control": "private, max-age=31536000, immutable", "x-content-type-options": "nosniff"}
    return FileResponse(path, media_type=meta["media_type"], filename=meta["name"] or sha,
                        content_disposition_type=disposition, headers=headers)


def _console(api: Api, request: Request) -> Response:
    """``GET /api/runs/{id}/console[?since=CURSOR][&tail=N]``: the run's console lines (see :mod:`.provenance`)."""
    from tracker.ui.provenance import CursorError, console_doc

    view = api.view(request.path_params["id"])
    tail = _parsed_param(request, "tail", _ascii_int, "a number of lines from 0 to 1000000")
    if tail is not None and not 0 <= tail <= 1_000_000:
        raise BadRequest(f"tail: expected a number of lines from 0 to 1000000, given {tail}")
    since = request.query_params.get("since") or None
    host = getattr(api.store, "host", None) or getattr(api.store, "_host", None)
    try:
        return json_response(console_doc(view, host, since, tail))
    except CursorError as exc:
        raise BadRequest(str(exc)) from None


def _environment(api: Api, request: Request) -> Response:
    """``GET /api/runs/{id}/environment[?diff=1]``: the run's environment, its packages (and diff)."""
    from tracker.ui.provenance import environment_doc

    view = api.view(request.path_params["id"])
    return json_response(parts.strict(environment_doc(view, api.store.blobs, request.query_params.get("diff") == "1")))


def _diff(api: Api, request: Request) -> Response:
    """``GET /api/diff?runs=a,b``: why two runs differ (config, packages, git, Python, platform, GPU, host, command)."""
    from tracker.ui.provenance import diff_doc

    refs = _names_param(request, "runs") or []
    if len(refs) != 2:
        raise BadRequest(f"runs: expected two run ids separated by a comma, given {len(refs)}")
    a, b = (api.view(r) for r in refs)
    return json_response(parts.strict(diff_doc(a, b, api.store.blobs)))


def _artifacts(api: Any, request: Request) -> Response:
    """``GET /api/artifacts``, ``/api/artifact?ref=``, ``/api/lineage?ref=&depth=`` (:mod:`tracker.ui.artifacts`)."""
    from tracker.ui.artifacts import NotFound, artifact_doc, artifacts_doc, lineage_doc

    q = request.query_params
    try:
        if request.url.path == "/api/artifacts":
            return json_response(parts.strict(artifacts_doc(api.store, q.get("type") or None,
                                                            q.get("project") or None)))
        ref = q.get("ref")
        if not ref:
            raise BadRequest("ref: expected an artifact (NAME or NAME:VERSION) or, for lineage, a run")
        if request.url.path == "/api/lineage":
            depth = _int_param(request, "depth", 3, 1, 20)
            return json_response(parts.strict(lineage_doc(api.store, ref, depth)))
        return json_response(parts.strict(artifact_doc(api.store, ref)))
    except NotFound as exc:
        return error(404, str(exc))


def _sweeps(api: Any, request: Request) -> Response:
    """``GET /api/sweeps`` and ``GET /api/sweeps/{id}`` (see :mod:`tracker.sweeps.web`)."""
    from tracker.core.urls import is_database_url
    from tracker.sweeps.web import sweep_doc, sweeps_doc

    url = getattr(api.store, "url", None)
    # The team database: its sweeps are the studies stored in it (--storage postgresql://, or [team] url).
    storage = url if is_database_url(url) else None
    root = None if storage is not None else getattr(api.store, "path", None)
    sweep_id = request.path_params.get("id")
    status, doc = sweep_doc(root, sweep_id, storage) if sweep_id is not None else (200, sweeps_doc(root, storage))
    return json_response(parts.strict(doc), status)


def create_app(store: Any = None, *, hosts: tuple[str, ...] = (), frame_ancestors: bytes = b"'none'",
               auth: Any = None) -> Starlette:
    """The dashboard as an ASGI app over ``store``.

    :param store: a :class:`tracker.Store`, a store folder, a ``postgresql://`` URL (the team
        database, read through the same reading protocol), or ``None`` for the
        store of ``TRACKER_STORE`` / tracker.toml / ``./.tracker``. A folder
        that does not exist yet is served as an empty store.
    :param hosts: names the ``Host`` header may give besides the loopback ones (see :mod:`.hosts`).
    :param frame_ancestors: who may frame the pages (CSP source list; ``tracker.show`` lets local
        notebook pages do it, ``tracker ui`` nobody).
    :param auth: who gets in (see :mod:`.auth`): ``None`` (anyone who reaches it: loopback only),
        ``"token"`` (a random token, ``app.state.auth.token``), a users file, or a :class:`.auth.Auth`.
    """
    from tracker.core.urls import is_database_url
    from tracker.store import Store, open_store

    if store is None or is_database_url(store):
        store = open_store(store)  # a postgresql:// URL opens the team database
    elif isinstance(store, (str, os.PathLike)):
        store = Store(store)
    api = Api(store)

    def endpoint(method: Any) -> Any:
        def call(request: Request) -> Response:
            try:
                return method(request)
            except BadRequest as exc:
                return error(400, str(exc))
            except RunNotFound as exc:
                return error(404, str(exc), candidates=list(getattr(exc, "candidates", None) or []))
            except StoreUnavailable as exc:
                return error(503, str(exc))
            except StoreError as exc:
                return error(500, f"the store cannot be read: {exc}")
            except TrackerError as exc:
                return error(500, str(exc))
            except Exception as exc:  # noqa: BLE001 - the page shows the message; never a stack trace
                return error(500, f"{type(exc).__name__}: {exc}")

        return call

    index = STATIC / "index.html"

    def page(request: Request) -> Response:
        path = request.url.path
        if path == "/api" or path.startswith("/api/"):
            return error(404, f"no endpoint {path[:200]}")
        return FileResponse(index, headers={"cache-control": "no-cache"})

    routes = [
        Route("/api/runs", endpoint(api.runs)),
        Route("/api/runs/{id}", endpoint(api.run)),
        Route("/api/runs/{id}/metrics", endpoint(api.metrics)),
        Route("/api/runs/{id}/panels", endpoint(api.panels)),
        Route("/api/runs/{id}/blobs/{sha}", endpoint(lambda request: _blob(api, request))),
        Route("/api/runs/{id}/console", endpoint(lambda request: _console(api, request))),
        Route("/api/runs/{id}/environment", endpoint(lambda request: _environment(api, request))),
        Route("/api/compare", endpoint(api.compare)),
        Route("/api/diff", endpoint(lambda request: _diff(api, request))),
        Route("/api/aggregate", endpoint(lambda request: _aggregate(api, request))),
        Route("/api/report", endpoint(lambda request: _report(api, request))),
        Route("/api/sweeps", endpoint(lambda request: _sweeps(api, request))),
        *(Route(p, endpoint(lambda request: _artifacts(api, request))) for p in
          ("/api/artifacts", "/api/artifact", "/api/lineage")),
        Route("/api/sweeps/{id}", endpoint(lambda request: _sweeps(api, request))),
        Mount("/static", StaticFiles(directory=STATIC, follow_symlink=False), name="static"),
        Route("/{path:path}", page),
    ]
    app = Starlette(routes=routes)
    app.state.api = api
    app.state.auth = make_auth(auth)
    if app.state.auth is not None:  # inside the Host check: a foreign Host is refused before any login
        app.add_middleware(AuthMiddleware, auth=app.state.auth)
    app.add_middleware(HostCheck, hosts=hosts)
    app.add_middleware(SecurityHeaders, headers=security_headers(frame_ancestors))
    return app
