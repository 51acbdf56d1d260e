"""The reading endpoints of `tracker server` (`/api/v1/...`, a read key): what `open_store("https://...")` asks.

Each answers from the reading protocol of the store the server serves, so a
folder and the team database (PostgreSQL and its bucket) answer alike
(:mod:`tracker.remote.wire` is their JSON):

- ``GET /api/v1/runs?project=&status=&tag=&q=&group=&job_type=&sort=&limit=&cursor=&offset=&figures=1``:
  one page of runs' entries, as the store's ``runs(..., sort=, limit=, cursor=)`` gives it (newest first
  by default; ``next`` is the cursor of the page after, ``null`` on the last; ``total`` the runs the
  filters keep); ``figures=1`` adds each run's per-metric figures (what ``tracker runs`` shows of metrics).
- ``GET /api/v1/runs/{run_id}`` (an id or a unique prefix) and ``GET /api/v1/run?ref=`` (also a name):
  one run's entry, its schemas in order and its per-metric figures.
- ``GET /api/v1/runs/{run_id}/records?schema=&after=``: every record (of one schema) in log order, JSON
  Lines, streamed, ending with ``{"end": n}``; ``after={"<writer>": seq, ...}`` keeps only what each
  writer logged after that sequence number (``tracker tail -f``, ``logs -f``).
- ``GET /api/v1/runs/{run_id}/metrics``: the run's ``metrics`` records as columns (a JSON line naming them,
  then their values as little-endian bytes): what ``metrics()``, charts and summaries read.
- ``GET /api/v1/runs/{run_id}/segments/{segment}`` (and ``.../segments/edits/{segment}``, an edit
  segment): a segment's raw bytes (``Range`` honoured), over a folder store (the team database keeps
  records, not files: 404 saying so, read ``records``).
- ``GET /api/v1/blobs/sha256/{hex}``: a blob's bytes, streamed (``Range`` honoured); the client hashes them.
- ``GET /api/v1/registry``: the artifact registry (versions, aliases, producers and consumers) as derived data.

Keys are checked by the server's middleware, which puts the key's info in the request's scope
(``tracker.key``); these routes then need its ``read`` scope, and a key limited to projects sees only
their runs (the listing leaves the others out, a run of another project is 403, the registry holds
only their artifacts). Blobs are served to any read key: a blob is asked for by its SHA-256, which
only a reader of a record naming it knows. Served by ``tracker ui`` (no keys), they are open as the
rest of the dashboard's API is (loopback, or behind ``--auth``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Route

from tracker.core.errors import StoreUnavailable, TrackerError
from tracker.remote.wire import JSONL, entry_json, record_line
from tracker.ui.keyauth import SCOPE_KEY  # where the key middleware puts the checked key's info
from tracker.ui.params import BadRequest, error, int_param, json_response, status_param

#: Runs per page: the default and the most one page holds.
PAGE, MAX_PAGE = 1000, 10_000
_SHA = re.compile(r"[0-9a-f]{64}\Z")
#: Records per chunk of the stream (one write to the socket).
_CHUNK = 2000


class Forbidden(TrackerError):
    """The request's key may not read this (HTTP 403)."""


def _key(request: Request) -> Any:
    """The request's key info (``None``: no key, as on ``tracker ui``); :class:`Forbidden` without ``read``."""
    info = request.scope.get(SCOPE_KEY)
    if info is not None and not info.allows("read"):
        raise Forbidden(f"API key {info.id} ({info.name}) has scope {info.scope}: reading needs read")
    return info


def _may(info: Any, project: str | None) -> bool:
    return info is None or not info.projects or project in info.projects


def _check_project(info: Any, view: Any) -> Any:
    if not _may(info, view.info.project):
        raise Forbidden(f"API key {info.id} ({info.name}) may read only projects "
                        f"{', '.join(map(repr, info.projects))}; run {view.id} is of project {view.info.project!r}")
    return view


def runs(api: Any, request: Request) -> Response:
    """``GET /api/v1/runs``: one page of runs' entries, as the store's ``runs(..., sort=, limit=, cursor=)`` gives."""
    from tracker.read.listing import ListingError, RunFilter, RunPage, page_entries, parse_sort

    key = _key(request)
    q = request.query_params
    limit = int_param(request, "limit", PAGE, 1, MAX_PAGE)
    offset = q.get("offset")
    try:
        off = int(offset) if offset not in (None, "") else None
    except ValueError:
        raise BadRequest(f"offset: expected a whole number, given {offset[:40]!r}") from None
    filters = {"project": q.get("project") or None, "status": status_param(request),
               "tag": [t for t in q.getlist("tag") if t] or None, "q": q.get("q") or None,
               "group": q.get("group") or None, "job_type": q.get("job_type") or None}
    sort, cursor = q.get("sort") or None, q.get("cursor") or None
    store = api.store
    try:
        if key is not None and key.projects:
            # A key limited to projects: the page is made of their runs only (the store's own order and cursors).
            flt = RunFilter.of(**filters)
            one = flt.tags[0] if len(flt.tags) == 1 else None
            kept = [e for e in store.catalog(flt.project, flt.status, one)
                    if flt.keeps(e.info) and e.info.project in key.projects]
            rows, total, nxt = page_entries(kept, parse_sort(sort), limit, cursor, off)
            page = RunPage([e.info for e in rows], total, nxt, rows)
        else:
            page = store.runs(**filters, sort=sort, limit=limit, cursor=cursor, offset=off)
    except ListingError as exc:
        raise BadRequest(str(exc)) from None
    entries = getattr(page, "entries", None)
    figures: dict[str, Any] | None = None
    if q.get("figures") == "1":
        if entries is not None:
            figures = {e.info.id: e.metrics for e in entries}
        elif hasattr(store, "figures"):  # the team database: every figure of the page in one query
            figures = store.figures([i.id for i in page])
        else:
            figures = {i.id: store.run(i.id).metric_stats() for i in page}
    schemas = {e.info.id: dict(e.schemas) for e in entries} if entries is not None else {}
    out = [entry_json(info, schemas.get(info.id, {}), None if figures is None else figures.get(info.id, {}))
           for info in page]
    return json_response({"runs": out, "next": getattr(page, "next", None), "total": getattr(page, "total", len(out))})


def _ref(api: Any, ref: str) -> Any:
    if not isinstance(ref, str) or not ref or len(ref) > 1000:
        raise BadRequest("ref: expected a run id, a unique prefix of one, or a run's name")
    return api.store.run(ref)


def run(api: Any, request: Request) -> Response:
    """``GET /api/v1/runs/{run_id}`` and ``GET /api/v1/run?ref=``: one run's entry with schemas and figures."""
    key = _key(request)
    ref = request.path_params.get("run_id") or request.query_params.get("ref") or ""
    view = _check_project(key, api.view(ref) if "run_id" in request.path_params else _ref(api, ref))
    return json_response(entry_json(view.info, view.schemas(), view.metric_stats()))


def records(api: Any, request: Request) -> Response:
    """``GET /api/v1/runs/{run_id}/records?schema=``: the run's records in log order, JSON Lines."""
    view = _check_project(_key(request), api.view(request.path_params["run_id"]))
    schema = request.query_params.get("schema") or None
    if schema is not None and len(schema) > 200:
        raise BadRequest("schema: expected a schema name")
    after = _after(request)
    if after is None:
        it = view.records(schema)
    elif hasattr(view, "records_after"):  # the team database: from each writer's sequence number
        it = iter(view.records_after(after, schema)[0])
    else:
        it = (r for r in view.records(schema) if r.seq > after.get(r.writer, 0))

    def lines() -> Iterator[bytes]:
        n = 0
        buf: list[bytes] = []
        try:
            for rec in it:
                buf.append(record_line(rec))
                n += 1
                if len(buf) >= _CHUNK:
                    yield b"".join(buf)
                    buf.clear()
        except TrackerError as exc:  # the status is sent already: the stream says so on its last line
            yield b"".join(buf) + orjson.dumps({"error": str(exc)}) + b"\n"
            return
        yield b"".join(buf) + orjson.dumps({"end": n}) + b"\n"

    return StreamingResponse(lines(), media_type=JSONL, headers={"cache-control": "no-store"})


def metrics(api: Any, request: Request) -> Response:
    """``GET /api/v1/runs/{run_id}/metrics``: the run's ``metrics`` records as columns, every bit as the store has them.

    One line of JSON, ``{"n": N, "columns": [[name, dtype], ...]}`` (``step`` ``<i8``, then ``time`` and
    each metric ``<f8``, NaN where a record lacks the metric), then each column's ``N`` values as
    little-endian bytes, in that order.
    """
    import numpy as np

    view = _check_project(_key(request), api.view(request.path_params["run_id"]))
    cols = view.metrics()
    n = int(cols["step"].size) if "step" in cols else 0
    head, parts = [], []
    for name, col in cols.items():
        dtype = "<i8" if name == "step" else "<f8"
        arr = np.ascontiguousarray(np.asarray(col).astype(dtype, copy=False))
        head.append([name, dtype])
        parts.append(arr.tobytes())
    body = orjson.dumps({"n": n, "columns": head}) + b"\n" + b"".join(parts)
    return Response(body, media_type="application/octet-stream", headers={"cache-control": "no-store"})


def _after(request: Request) -> dict[str, int] | None:
    """``after={"writer": seq, ...}``: only the records each writer logged after that sequence number."""
    raw = request.query_params.get("after")
    if raw is None:
        return None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or not all(isinstance(k, str) and type(v) is int for k, v in doc.items()):
        raise BadRequest(f"after: expected a JSON object of writer ids and sequence numbers, given {raw[:80]!r}")
    return doc


def segment(api: Any, request: Request) -> Response:
    """``GET /api/v1/runs/{run_id}/segments/{segment}``: a segment's bytes as the store holds them (``Range``)."""
    from tracker.read.segment import segment_paths

    view = _check_project(_key(request), api.view(request.path_params["run_id"]))
    name = request.path_params["segment"]
    run_dir = getattr(view, "path", None)
    if not hasattr(view, "segment_paths"):
        return error(404, "this server's store is a database: it keeps records, not segment files "
                          f"(read GET /api/v1/runs/{view.id}/records)")
    # Served only under a name the run's folder lists: the name never becomes a path on its own.
    if request.url.path.endswith(f"/segments/edits/{name}"):  # an edit segment (tags, notes, aliases later)
        from tracker.read.edits import edit_paths

        listed = edit_paths(run_dir)
    else:
        listed = segment_paths(run_dir)
    for p in listed:
        if p.name == name:
            return FileResponse(p, media_type="application/octet-stream",
                                headers={"cache-control": "no-store"})
    return error(404, f"run {view.id} has no segment {name[:80]!r}")


def blob(api: Any, request: Request) -> Response:
    """``GET /api/v1/blobs/sha256/{hex}``: a blob's bytes, streamed (``Range`` honoured)."""
    _key(request)
    sha = request.path_params["sha"]
    if not _SHA.match(sha):
        raise BadRequest(f"expected a blob's SHA-256 as 64 lowercase hex digits, given {sha[:80]!r}")
    blobs = api.store.blobs
    if not blobs.exists(sha):
        return error(404, f"no blob {sha}")
    path = blobs.fetch(sha)  # a bucket's blob is fetched (and checked) into the server's cache first
    return FileResponse(path, media_type="application/octet-stream",
                        headers={"cache-control": "private, max-age=31536000, immutable"})


def registry(api: Any, request: Request) -> Response:
    """``GET /api/v1/registry``: every named artifact, as :meth:`tracker.read.registry.Registry.to_parts` gives it."""
    key = _key(request)
    summary, texts, io = api.store.registry().to_parts()
    if key is not None and key.projects:
        summary, texts, io = _only_projects(summary, texts, io, set(key.projects))
    body = b'{"summary":' + summary + b',"collections":[' + b",".join(texts) + b'],"io":' + io + b"}"
    return Response(body, media_type="application/json", headers={"cache-control": "no-store"})


def _only_projects(summary: bytes, texts: list[bytes], io: bytes, projects: set[str]) -> tuple[bytes, list[bytes],
                                                                                                 bytes]:
    """The registry's parts with only the artifacts of ``projects``."""
    rows = orjson.loads(summary)
    keep = [i for i, row in enumerate(rows) if row[0] in projects]
    outs, ins = orjson.loads(io)
    outs = {r: [o for o in v if o[0] in projects] for r, v in outs.items()}
    ins = {r: [u for u in v if u[0] in projects] for r, v in ins.items()}
    return (orjson.dumps([rows[i] for i in keep]), [texts[i] for i in keep],
            orjson.dumps([{r: v for r, v in outs.items() if v}, {r: v for r, v in ins.items() if v}]))


def read_routes(endpoint: Any, api: Any) -> list[Route]:
    """The routes above, each wrapped by ``endpoint`` (the app's error answers; 403 for :class:`Forbidden`)."""
    def bind(fn: Any) -> Any:
        def guarded(request: Request) -> Response:
            try:
                return fn(api, request)
            except Forbidden as exc:
                return error(403, str(exc))
            except StoreUnavailable as exc:  # the database is away: a client tries again after Retry-After
                response = error(503, str(exc))
                response.headers["retry-after"] = "5"
                return response

        return endpoint(guarded)

    return [
        Route("/api/v1/runs", bind(runs), methods=["GET"]),
        Route("/api/v1/run", bind(run), methods=["GET"]),
        Route("/api/v1/runs/{run_id}", bind(run), methods=["GET"]),
        Route("/api/v1/runs/{run_id}/records", bind(records), methods=["GET"]),
        Route("/api/v1/runs/{run_id}/metrics", bind(metrics), methods=["GET"]),
        Route("/api/v1/runs/{run_id}/segments/{segment}", bind(segment), methods=["GET"]),
        Route("/api/v1/runs/{run_id}/segments/edits/{segment}", bind(segment), methods=["GET"]),
        Route("/api/v1/blobs/sha256/{sha}", bind(blob), methods=["GET"]),
        Route("/api/v1/registry", bind(registry), methods=["GET"]),
    ]


__all__ = ["MAX_PAGE", "PAGE", "read_routes"]
