"""The dashboard's endpoints of the capabilities: groups and reports, captures, provenance, artifacts, sweeps.

Each is a function of the app's :class:`tracker.ui.app.Api` (its store and
caches) and the request, which parses the request (:mod:`tracker.ui.params`)
and answers with what the capability's module of ``tracker/ui`` makes of the
store: :mod:`.groups` (``/api/aggregate``), :mod:`.report` (``/api/report``),
:mod:`.capture` (a run's blobs), :mod:`.provenance` (console, environment,
diff), :mod:`.artifacts` (artifacts and lineage) and :mod:`tracker.sweeps.web`.
:func:`tracker.ui.app.create_app` routes to them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response

from tracker.core.errors import StoreError, StoreUnavailable, TrackerError
from tracker.read.index import gc_paused
from tracker.ui import parts
from tracker.ui.params import (
    BadRequest,
    ascii_int,
    error,
    int_param,
    json_response,
    names_param,
    parsed_param,
    run_ids_param,
    status_param,
)


def _selected(api: Any, request: Request, refs: list[str] | None, status: str | None) -> tuple[list | None, list]:
    """The runs a page asks about: the ids of ``runs=`` in that order, else those the runs page's filters
    (``project=&status=&tag=&q=``) keep; with the store's catalog entries (``None``: a store without a catalog).

    Called with the collector paused (thousands of rows and no cycles).
    """
    from tracker.ui.groups import matches, select_runs

    q = request.query_params
    tags = [t for t in q.getlist("tag") if t]
    catalog = getattr(api.store, "catalog", None)
    entries = catalog() if catalog is not None else None
    infos = select_runs(api.store, entries, refs, lambda infos: [
        i for i in infos if matches(i, q.get("project") or None, status, tags, q.get("q") or None)])
    return entries, infos


def aggregate(api: Any, request: Request) -> Response:
    """``GET /api/aggregate?metrics=a,b&by=KEY&runs=id,id`` (or the runs page's ``project=&status=&tag=&q=``)
    ``&stat=mean|median&band=std|minmax|pLO-pHI&max_points=N``: per metric, one line and band per group."""
    from tracker.read.aggregate import group_runs, parse_band
    from tracker.ui.groups import MAX_METRICS, MAX_RUNS, SeriesCache, aggregate_doc

    q = request.query_params
    metrics = names_param(request, "metrics") or []
    if not metrics or len(metrics) > MAX_METRICS:
        raise BadRequest(f"metrics: expected 1 to {MAX_METRICS} metric names separated by commas, given {len(metrics)}")
    stat = q.get("stat") or "mean"
    if stat not in ("mean", "median"):
        raise BadRequest(f"stat: expected 'mean' or 'median', given {stat[:40]!r}")
    status = status_param(request)
    refs = run_ids_param(request)
    max_points = int_param(request, "max_points", 1000, 1, 10_000)
    with gc_paused():
        entries, infos = _selected(api, request, refs, status)
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


def report(api: Any, request: Request) -> Response:
    """``GET /api/report?runs=id,id`` (or ``project=&status=&tag=&q=``) ``&by=KEY&metrics=a,b&title=T``: the report
    file of ``tracker report`` for what a page shows, sent as an attachment (saved, never shown in the app)."""
    import re

    from tracker.ui.report import MAX_RUNS, build

    q = request.query_params
    refs = run_ids_param(request)
    status = status_param(request)
    metrics = names_param(request, "metrics")
    title = (q.get("title") or "").strip()[:200] or None
    with gc_paused():
        entries, infos = _selected(api, request, refs, status)
        if not infos:
            raise BadRequest("no run to report: the filters keep none")
        if len(infos) > MAX_RUNS:
            raise BadRequest(f"{len(infos)} runs: a report holds at most {MAX_RUNS}; filter or select fewer")
        tag = q.get("tag") or ""
        sweep = _sweep_facts(api, tag[len("sweep:"):]) if tag.startswith("sweep:") else None
        try:
            text = build(api.store, infos, by=q.get("by") or None, metrics=metrics, title=title,
                         environment=q.get("environment") != "0", entries=entries, sweep=sweep)
        except StoreError:
            raise
        except TrackerError as exc:  # a key no run has, a metric none logged: what was asked cannot be drawn
            raise BadRequest(str(exc)) from None
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", title or "report").strip("-.")[:60] or "report"
    return Response(text.encode(), media_type="text/html; charset=utf-8", headers={
        "content-disposition": f'attachment; filename="{name}.html"', "cache-control": "no-store",
        # Were it ever shown from here, it would run nothing: the app's pages keep their own policy.
        "content-security-policy": "default-src 'none'; sandbox"})


def blob(api: Any, request: Request) -> Response:
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


def console(api: Any, request: Request) -> Response:
    """``GET /api/runs/{id}/console[?since=CURSOR][&tail=N]``: the run's console lines (see :mod:`.provenance`)."""
    from tracker.ui.provenance import CursorError, console_doc

    view = api.view(request.path_params["id"])
    tail = parsed_param(request, "tail", ascii_int, "a number of lines from 0 to 1000000")
    if tail is not None and not 0 <= tail <= 1_000_000:
        raise BadRequest(f"tail: expected a number of lines from 0 to 1000000, given {tail}")
    since = request.query_params.get("since") or None
    host = getattr(api.store, "host", None) or getattr(api.store, "_host", None)
    try:
        return json_response(console_doc(view, host, since, tail))
    except CursorError as exc:
        raise BadRequest(str(exc)) from None


def environment(api: Any, request: Request) -> Response:
    """``GET /api/runs/{id}/environment[?diff=1]``: the run's environment, its packages (and diff)."""
    from tracker.ui.provenance import environment_doc

    view = api.view(request.path_params["id"])
    return json_response(parts.strict(environment_doc(view, api.store.blobs, request.query_params.get("diff") == "1")))


def diff(api: Any, request: Request) -> Response:
    """``GET /api/diff?runs=a,b``: why two runs differ (config, packages, git, Python, platform, GPU, host, command)."""
    from tracker.ui.provenance import diff_doc

    refs = names_param(request, "runs") or []
    if len(refs) != 2:
        raise BadRequest(f"runs: expected two run ids separated by a comma, given {len(refs)}")
    a, b = (api.view(r) for r in refs)
    return json_response(parts.strict(diff_doc(a, b, api.store.blobs)))


def artifacts(api: Any, request: Request) -> Response:
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
            depth = int_param(request, "depth", 3, 1, 20)
            return json_response(parts.strict(lineage_doc(api.store, ref, depth)))
        return json_response(parts.strict(artifact_doc(api.store, ref)))
    except NotFound as exc:
        return error(404, str(exc))


def _sweeps_where(api: Any) -> tuple[Any, str | None]:
    """``(store folder or None, storage)`` the app's sweeps are read from."""
    from tracker.core.urls import is_database_url

    url = getattr(api.store, "url", None)
    # The team database: its sweeps are the studies stored in it (--storage postgresql://, or [team] url).
    storage = url if is_database_url(url) else None
    return (None if storage is not None else getattr(api.store, "path", None)), storage


def _sweep_facts(api: Any, sweep_id: str) -> dict[str, Any]:
    """A report's facts of the sweep its runs are the trials of (or why they cannot be read)."""
    from tracker.sweeps.web import sweep_summary

    if not sweep_id:
        return {"id": sweep_id, "error": "no sweep id"}
    root, storage = _sweeps_where(api)
    try:
        return sweep_summary(root, sweep_id, storage)
    except TrackerError as exc:
        return {"id": sweep_id, "error": str(exc)}


def sweeps(api: Any, request: Request) -> Response:
    """``GET /api/sweeps`` and ``GET /api/sweeps/{id}`` (see :mod:`tracker.sweeps.web`)."""
    from tracker.sweeps.web import sweep_doc, sweeps_doc

    root, storage = _sweeps_where(api)
    sweep_id = request.path_params.get("id")
    status, doc = sweep_doc(root, sweep_id, storage) if sweep_id is not None else (200, sweeps_doc(root, storage))
    return json_response(parts.strict(doc), status)
