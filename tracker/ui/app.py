"""The dashboard's Starlette app: the JSON API under ``/api/`` and the page (see docs/ui.md).

Routes only: reading goes through the public reading API (``Store``,
``RunView``), series through :mod:`tracker.ui.series`, live reads through
:mod:`tracker.ui.live`, the run page's parts through :mod:`tracker.ui.parts`;
the capabilities' endpoints (groups, reports, blobs, provenance, artifacts,
sweeps) are in :mod:`tracker.ui.routes`, the Media panel's in :mod:`tracker.ui.media`, the parameters they all parse in
:mod:`tracker.ui.params`.
The dashboard's endpoints are read-only (``tracker server`` adds the writing ones under ``/api/v1/``,
:mod:`tracker.ui.server`, for holders of an API key); the only files they create in the store are derived data
under ``<store>/index/``
(as every reader does; see docs/ui.md, "Security").
"""

from __future__ import annotations

import os
import time
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
from tracker.ui import media, parts, remote_read, routes
from tracker.ui.auth import AuthMiddleware, make_auth
from tracker.ui.hosts import HostCheck
from tracker.ui.live import MetricsCache, TeamColumnsCache, read_since
from tracker.ui.logged import axes_json, axis_series
from tracker.ui.params import (
    BadRequest,
    error,
    float_param,
    int_param,
    json_response,
    names_param,
)
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
        from tracker.ui.runlist import RunList, TeamChoices

        self.runlist = RunList(store)
        self.team_choices = TeamChoices()

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
        """``GET /api/runs?project=&status=&tag=&q=&group=&job_type=&sort=&limit=&cursor=&offset=&stats=a,b&default=1``:
        a page of runs (every run the filters keep without ``limit``), with an ETag (304 when unchanged)."""
        # Thousands of rows and no cycles: the collector's passes over them cost a sixth of the request.
        with gc_paused():
            return self._runs(request)

    def _runs(self, request: Request) -> Response:
        from tracker.ui.runlist import runs_doc

        out = runs_doc(self, request)
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
        names = names_param(request, "parts")
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
        names = names_param(request, "names")
        x = request.query_params.get("x", "step") or "step"
        if x not in ("step", "time", "defined"):
            raise BadRequest(f"x: expected 'step', 'time' or 'defined', given {x[:40]!r}")
        max_points = int_param(request, "max_points", DEFAULT_MAX_POINTS, 1, MAX_POINTS_LIMIT)
        x_min = float_param(request, "x_min")
        x_max = float_param(request, "x_max")
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
        names = names_param(request, "names")
        return json_response(parts.strict({"panels": parts.panels_of(view, names)}))

    def compare(self, request: Request) -> Response:
        """``GET /api/compare?runs=a,b``: info, config diff and summaries side by side."""
        refs = names_param(request, "runs") or []
        if len(refs) < 2:
            raise BadRequest(f"runs: expected at least two run ids separated by commas, given {len(refs)}")
        if len(refs) > 20:
            raise BadRequest(f"runs: expected at most 20 runs, given {len(refs)}")
        views = [self.view(r) for r in refs]
        return json_response(parts.strict(parts.compare(views)))


def create_app(store: Any = None, *, hosts: tuple[str, ...] = (), frame_ancestors: bytes = b"'none'",
               auth: Any = None, remote: Any = None) -> Starlette:
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
    :param remote: ``tracker server``'s :class:`.server.Remote` (keys, writing under ``/api/v1/``), or ``None``.
    """
    from tracker.core.urls import is_database_url
    from tracker.store import Store, open_store

    if store is None or is_database_url(store):
        store = open_store(store)  # a postgresql:// URL opens the team database
    elif isinstance(store, (str, os.PathLike)):
        store = Store(store)
    api = Api(store)
    api.frame_ancestors = frame_ancestors.decode()

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

    v1: list = []
    if remote is not None:
        from tracker.ui.server import routes as v1_routes

        v1 = v1_routes(remote)
    table = [
        *v1,
        Route("/api/runs", endpoint(api.runs)),
        Route("/api/runs/{id}", endpoint(api.run)),
        Route("/api/runs/{id}/metrics", endpoint(api.metrics)),
        Route("/api/runs/{id}/panels", endpoint(api.panels)),
        Route("/api/runs/{id}/blobs/{sha}", endpoint(lambda request: routes.blob(api, request))),
        Route("/api/runs/{id}/media", endpoint(lambda request: media.media(api, request))),
        Route("/api/runs/{id}/media/{sha}", endpoint(lambda request: media.blob(api, request))),
        Route("/api/runs/{id}/console", endpoint(lambda request: routes.console(api, request))),
        Route("/api/runs/{id}/environment", endpoint(lambda request: routes.environment(api, request))),
        Route("/api/compare", endpoint(api.compare)),
        Route("/api/diff", endpoint(lambda request: routes.diff(api, request))),
        Route("/api/aggregate", endpoint(lambda request: routes.aggregate(api, request))),
        Route("/api/report", endpoint(lambda request: routes.report(api, request))),
        Route("/api/sweeps", endpoint(lambda request: routes.sweeps(api, request))),
        *(Route(p, endpoint(lambda request: routes.artifacts(api, request))) for p in
          ("/api/artifacts", "/api/artifact", "/api/lineage")),
        Route("/api/sweeps/{id}", endpoint(lambda request: routes.sweeps(api, request))),
        *remote_read.read_routes(endpoint, api),  # /api/v1/...: what open_store("https://...") reads
        *([Route("/api/v1/{rest:path}", lambda request: error(404, f"no endpoint {request.method} "
                                                                   f"{request.url.path[:200]}"),
                 methods=["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"])] if remote is not None else []),
        Mount("/static", StaticFiles(directory=STATIC, follow_symlink=False), name="static"),
        Route("/{path:path}", page),
    ]
    lifespan = None
    if remote is not None:
        import contextlib

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> Any:
            yield
            remote.close()  # the server's open runs end as crashed, the spool's last pass is done

    app = Starlette(routes=table, lifespan=lifespan)
    app.state.api = api
    app.state.auth = make_auth(auth)
    app.state.remote = remote
    if app.state.auth is not None:  # inside the Host check: a foreign Host is refused before any login
        app.add_middleware(AuthMiddleware, auth=app.state.auth)
    if remote is not None:  # API keys, before the login: a valid key opens the API whatever --auth says
        from tracker.ui.keyauth import KeyGate

        app.add_middleware(KeyGate, keys=remote.keys)
    app.add_middleware(HostCheck, hosts=hosts)
    app.add_middleware(SecurityHeaders, headers=security_headers(frame_ancestors))
    return app
