"""The dashboard's Starlette app: the JSON API under ``/api/`` and the page (see docs/ui.md).

Routes only: reading goes through the public reading API (``Store``,
``RunView``), series through :mod:`tracker.ui.series`, live reads through
:mod:`tracker.ui.live`, the run page's parts through :mod:`tracker.ui.parts`.
Every endpoint is read-only and never creates a file inside the store.
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

from ..errors import RunNotFound, StoreError, TrackerError
from ..index import gc_paused
from . import parts
from .hosts import HostCheck
from .live import MetricsCache, read_since
from .series import (
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


class Api:
    """The endpoints over one store."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.cache = MetricsCache()
        self.stats = parts.StatsCache()

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

    # --- endpoints ----------------------------------------------------------------------------

    def runs(self, request: Request) -> Response:
        """``GET /api/runs?project=&status=&tag=&q=&stats=a,b``."""
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
        out["now"] = time.time()
        rows = out.pop("runs")
        return json_response({"runs": rows, **parts.strict(out)})

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
        if x not in ("step", "time"):
            raise BadRequest(f"x: expected 'step' or 'time', given {x[:40]!r}")
        max_points = _int_param(request, "max_points", DEFAULT_MAX_POINTS, 1, MAX_POINTS_LIMIT)
        x_min = _float_param(request, "x_min")
        x_max = _float_param(request, "x_max")
        if x_min is not None and x_max is not None and x_min > x_max:
            raise BadRequest(f"x_min: expected a number at most x_max ({x_max!r}), given {x_min!r}")
        since = request.query_params.get("since")
        if since is not None:
            try:
                offsets = decode_cursor(since)
            except CursorError as exc:
                raise BadRequest(str(exc)) from None
            cols, offsets, problems = read_since(view.path, offsets)
        else:
            cols, offsets, problems = self.cache.read(view.path)
        xs = cols["step"] if x == "step" else cols["time"]
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
            keep = present(col)
            if in_range is not None:
                keep &= in_range
            if not keep.any():
                continue
            series[name] = series_json(xs[keep], col[keep], max_points, x == "step")
        info = view.refresh()
        body = {"series": series, "cursor": encode_cursor(offsets), "x": x, "status": info.status,
                "records": int(cols["step"].size), "problems": problems[:20]}
        return json_response(parts.strict(body))

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


def _blob(api: Api, request: Request) -> Response:
    """``GET /api/runs/{id}/blobs/{sha256}[?download=1]``: a stored file or image the run names.

    Only a blob that one of the run's records names is served, from its
    content address inside the store, after its bytes were hashed and found
    equal to that name: an unknown hash is a 404, a damaged or
    missing blob a 500 naming it. ``download=1`` asks the browser to save it.
    """
    from ..capture.web import checked_blob

    sha = request.path_params["sha"]
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise BadRequest(f"not a sha256 (64 lowercase hex digits): {sha[:80]!r}")
    view = api.view(request.path_params["id"])
    try:
        path, meta = checked_blob(view, sha)
    except StoreError as exc:
        return error(500, str(exc))
    except TrackerError as exc:
        return error(404, str(exc))
    disposition = "attachment" if request.query_params.get("download") else "inline"
    return FileResponse(path, media_type=meta["media_type"], filename=meta["name"] or sha,
                        content_disposition_type=disposition,
                        headers={"cache-control": "private, max-age=31536000, immutable",
                                 "x-content-type-options": "nosniff"})


def create_app(store: Any = None, *, hosts: tuple[str, ...] = (), frame_ancestors: bytes = b"'none'") -> Starlette:
    """The dashboard as an ASGI app over ``store``.

    :param store: a :class:`tracker.Store`, a store folder, or ``None`` for the
        store of ``TRACKER_STORE`` / tracker.toml / ``./.tracker``. A folder
        that does not exist yet is served as an empty store.
    :param hosts: names the ``Host`` header may give besides the loopback ones (see :mod:`.hosts`).
    :param frame_ancestors: who may frame the pages (CSP source list; ``tracker.show`` lets local
        notebook pages do it, ``tracker ui`` nobody).
    """
    from .. import Store, open_store

    if store is None:
        store = open_store()
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
        Route("/api/compare", endpoint(api.compare)),
        Mount("/static", StaticFiles(directory=STATIC, follow_symlink=False), name="static"),
        Route("/{path:path}", page),
    ]
    app = Starlette(routes=routes)
    app.state.api = api
    app.add_middleware(HostCheck, hosts=hosts)
    app.add_middleware(SecurityHeaders, headers=security_headers(frame_ancestors))
    return app
