"""The routes of ``tracker server`` under ``/api/v1/``: writing (segments, blobs, JSON logging), keys, whoami.

Thin: the key store is :mod:`tracker.remote.keys`, the checks and appends of
shipped bytes :mod:`tracker.remote.ingest`, the server's own writers for JSON
clients :mod:`tracker.remote.writers`, the spool of a database store
:mod:`tracker.remote.spool`. Every route here needs a key (checked by
:mod:`tracker.ui.keyauth`, which puts it in the scope): ``read`` reads,
``write`` also creates runs and appends to the runs it created (in its
projects), ``admin`` also manages keys. The protocol, errors and limits:
docs/http-api.md; the OpenAPI document: :mod:`tracker.ui.openapi`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tracker.core.errors import RunNotFound, SchemaError, StoreError, StoreUnavailable, TrackerError
from tracker.ui.keyauth import SCOPE_KEY
from tracker.ui.params import error, json_response

log = logging.getLogger(__name__)

#: Body caps (413 beyond): shipped segment bytes, JSON bodies, one blob.
MAX_SEGMENT_BODY = 64 << 20
MAX_JSON_BODY = 16 << 20
MAX_BLOB = 64 << 30
#: Blob bytes gathered before they are hashed and written off the event loop.
_BLOB_FLUSH = 4 << 20


#: Writing requests (segments, blobs, JSON logging) under way at once before more are answered 503.
MAX_WRITES = 64


class Busy(TrackerError):
    """Too many writing requests under way (HTTP 503 with Retry-After: the client comes back)."""


class Forbidden(TrackerError):
    """A key that may not do this (HTTP 403)."""


class TooLarge(TrackerError):
    """A body over its cap (HTTP 413)."""


class Remote:
    """What the ``/api/v1/`` routes write through, for one served store.

    :param keys: the :class:`tracker.remote.keys.KeyStore` of the served store.
    :param root: the folder written to: the served folder, or the spool of a database store.
    :param spool: the :class:`tracker.remote.spool.SpoolSync` of a database store, or ``None``.
    :param blobs: where blobs are looked up besides ``root`` (the database store's bucket), or ``None``.
    :param max_writes: writing requests under way at once (each may hold a body of up to 64 MiB in memory);
        more are answered 503 with ``Retry-After``.
    """

    def __init__(self, keys: Any, root: str | Path, *, spool: Any = None, blobs: Any = None, host: Any = None,
                 fsync: bool = False, max_writes: int = MAX_WRITES) -> None:
        from tracker.remote.ingest import Ingest
        from tracker.remote.writers import Writers

        self.keys = keys
        self.root = Path(root)
        self.spool = spool
        self.blobs = blobs
        self.ingest = Ingest(self.root, host, fsync=fsync, on_append=spool.wake if spool is not None else None)
        self.writers = Writers(self.root)
        self.max_writes = max(1, int(max_writes))
        #: Writing requests under way (changed on the event loop only).
        self.writing = 0

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """One writing request under way, or :class:`Busy` when :attr:`max_writes` are."""
        if self.writing >= self.max_writes:
            raise Busy(f"the server is busy: {self.writing} writing requests under way; try again shortly")
        self.writing += 1
        try:
            yield
        finally:
            self.writing -= 1

    def close(self) -> None:
        """End the server's open runs, stop the spool's sync, let go of the key store."""
        self.writers.close()
        if self.spool is not None:
            self.spool.wake()
            self.spool.close()
        self.keys.close()

    # --- who may do what -------------------------------------------------------------------------

    @staticmethod
    def key(request: Request, scope: str = "read") -> Any:
        """The request's key, when its scope includes ``scope``; else :class:`Forbidden`."""
        info = request.scope.get(SCOPE_KEY)
        if info is None:
            raise Forbidden("an API key is needed")
        if not info.allows(scope):
            raise Forbidden(f"API key {info.id} ({info.name}) has scope {info.scope}: this needs {scope}")
        return info

    def may_write(self, info: Any, run_id: str) -> bool:
        """Check that key ``info`` may append to run ``run_id``; returns whether the run is new (not in the store).

        :raises Forbidden: the run was created by another key, outside the key's projects, or not through
            the server.
        """
        owner = self.keys.owner(run_id)
        if owner is None:
            if self.ingest.exists(run_id):
                raise Forbidden(f"run {run_id} was not created through this server's API: no key may write to it")
            return True
        kid, project = owner
        if kid != info.id:
            raise Forbidden(f"run {run_id} was created by another key: API key {info.id} may write only the runs "
                            "it created")
        if not info.may_project(project):
            raise Forbidden(self._projects(info, project))
        return False

    @staticmethod
    def _projects(info: Any, project: str | None) -> str:
        return (f"API key {info.id} ({info.name}) may write only projects {', '.join(map(repr, info.projects))}; "
                f"the run's project is {project!r}")

    def admit(self, info: Any, run_id: str) -> Any:
        """The ``admit`` of :meth:`Ingest.append` for a new run: its project allowed, the key recorded as creator."""

        def check(project: str | None) -> None:
            if not info.may_project(project):
                raise Forbidden(self._projects(info, project))
            kid, _ = self.keys.claim(run_id, info.id, project)
            if kid != info.id:
                raise Forbidden(f"run {run_id} was created by another key meanwhile")

        return check


# --- bodies ------------------------------------------------------------------------------------------


async def read_body(request: Request, cap: int) -> bytes:
    """The request's body, refused (:class:`TooLarge`) past ``cap`` bytes, declared or sent."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise TooLarge(f"the body has {int(declared)} bytes, more than the {cap} this endpoint takes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise TooLarge(f"the body is larger than the {cap} bytes this endpoint takes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request) -> Any:
    """The request's JSON body (``None`` when empty); 400 when it is not JSON."""
    from tracker.remote.writers import BadRequest

    body = await read_body(request, MAX_JSON_BODY)
    if not body.strip():
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from None


def _offset(request: Request) -> int:
    from tracker.remote.ingest import Refused

    raw = request.query_params.get("offset")
    if raw is None or not raw.isascii() or not raw.isdigit():
        raise Refused(f"offset: expected the byte offset the body starts at (?offset=N), given {str(raw)[:40]!r}")
    return int(raw)


# --- the endpoints ---------------------------------------------------------------------------------


def handle(method: Any) -> Any:
    """An endpoint whose errors become their statuses: 400, 403, 404, 409, 413, 503 (with Retry-After), 500."""
    from tracker.remote.ingest import BadLine, Gap, Refused
    from tracker.remote.keys import KeyRefused, UnknownKey
    from tracker.remote.writers import BadRequest

    async def call(request: Request) -> Response:
        try:
            return await method(request)
        except BadLine as exc:
            return error(400, str(exc), line=exc.line)
        except Gap as exc:
            return error(409, str(exc), offset=exc.offset)
        except (Refused, BadRequest, SchemaError) as exc:
            return error(400, str(exc))
        except Forbidden as exc:
            return error(403, str(exc))
        except KeyRefused as exc:
            return error(401, str(exc))
        except TooLarge as exc:
            return error(413, str(exc))
        except (RunNotFound, UnknownKey) as exc:
            return error(404, str(exc))
        except Busy as exc:
            response = error(503, str(exc))
            response.headers["retry-after"] = "1"
            return response
        except StoreUnavailable as exc:
            response = error(503, str(exc))
            response.headers["retry-after"] = "5"
            return response
        except StoreError as exc:  # a full disk, a folder it may not write: nothing kept, the client comes back
            log.warning("tracker server: %s %s: %s", request.method, request.url.path, exc)
            response = error(503, f"the server cannot store this now: {exc}")
            response.headers["retry-after"] = "30"
            return response
        except TrackerError as exc:
            text = str(exc)
            return error(409 if "already exists" in text else 500, text)
        except Exception as exc:  # noqa: BLE001 - a message, never a stack trace
            log.exception("tracker server: %s %s failed", request.method, request.url.path)
            return error(500, f"{type(exc).__name__}: {exc}")

    return call


def routes(remote: Remote) -> list[Route]:
    """The ``/api/v1/`` routes of writing, keys and whoami over ``remote``."""

    async def whoami(request: Request) -> Response:
        info = remote.key(request)
        doc = info.to_json()
        return json_response({k: doc[k] for k in ("id", "name", "scope", "projects", "expires")})

    async def segments(request: Request) -> Response:
        remote.key(request)
        run_id = request.path_params["run_id"]
        sizes = await run_in_threadpool(remote.ingest.sizes, run_id)
        return json_response({"segments": sizes})

    async def append(request: Request) -> Response:
        info = remote.key(request, "write")
        with remote.slot():
            run_id, name = request.path_params["run_id"], request.path_params["segment"]
            from tracker.core.format import check_run_id
            from tracker.remote.ingest import Refused, check_segment_name

            try:
                check_run_id(run_id)
            except TrackerError as exc:
                raise Refused(str(exc)) from None
            check_segment_name(name)
            offset = _offset(request)
            body = await read_body(request, MAX_SEGMENT_BODY)
            new = await run_in_threadpool(remote.may_write, info, run_id)
            end = await run_in_threadpool(remote.ingest.append, run_id, name, offset, body,
                                          remote.admit(info, run_id) if new else None)
            return json_response({"offset": end})

    async def blob_head(request: Request) -> Response:
        remote.key(request)
        sha = request.path_params["sha"]
        from tracker.remote.ingest import check_sha

        check_sha(sha)
        size = await run_in_threadpool(blob_size, remote, sha)
        if size is None:
            return Response(status_code=404, headers={"cache-control": "no-store"})
        return Response(status_code=200, headers={"content-length": str(size), "cache-control": "no-store"})

    async def blob_put(request: Request) -> Response:
        remote.key(request, "write")
        with remote.slot():
            sha = request.path_params["sha"]
            declared = request.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > MAX_BLOB:
                raise TooLarge(f"the blob has {int(declared)} bytes, more than the {MAX_BLOB} the server takes")
            upload = await run_in_threadpool(remote.ingest.blob_writer, sha)
            had = await run_in_threadpool(blob_size, remote, sha) is not None
            pending: list[bytes] = []
            waiting = 0
            try:
                async for chunk in request.stream():
                    if upload.size + waiting + len(chunk) > MAX_BLOB:
                        raise TooLarge(f"the blob is larger than the {MAX_BLOB} bytes the server takes")
                    pending.append(chunk)
                    waiting += len(chunk)
                    if waiting >= _BLOB_FLUSH:
                        await run_in_threadpool(upload.write, b"".join(pending))
                        pending, waiting = [], 0
                if pending:
                    await run_in_threadpool(upload.write, b"".join(pending))
                new = await run_in_threadpool(upload.finish)
            except BaseException:
                upload.abort()
                raise
            return json_response({"sha256": sha, "size": upload.size}, 201 if new and not had else 200)

    async def create_run(request: Request) -> Response:
        info = remote.key(request, "write")
        body = await read_json(request)
        return await run_in_threadpool(_create_run, remote, info, body)

    async def log_records(request: Request) -> Response:
        info = remote.key(request, "write")
        with remote.slot():
            run_id = request.path_params["run_id"]
            body = await read_json(request)
            items = await run_in_threadpool(remote.writers.items, body)
            if await run_in_threadpool(remote.may_write, info, run_id):
                raise RunNotFound(f"no run {run_id} in this store (POST /api/v1/runs starts one)")
            n = await run_in_threadpool(remote.writers.log, run_id, items)
            if remote.spool is not None:
                remote.spool.wake(run_id)
            return json_response({"logged": n})

    async def finish(request: Request) -> Response:
        info = remote.key(request, "write")
        run_id = request.path_params["run_id"]
        body = await read_json(request)
        if await run_in_threadpool(remote.may_write, info, run_id):
            raise RunNotFound(f"no run {run_id} in this store")
        status = await run_in_threadpool(remote.writers.finish, run_id, body)
        if remote.spool is not None:
            remote.spool.wake(run_id)
        return json_response({"id": run_id, "status": status})

    async def keys_list(request: Request) -> Response:
        remote.key(request, "admin")
        keys = await run_in_threadpool(remote.keys.keys)
        return json_response({"keys": [k.to_json() for k in keys]})

    async def keys_create(request: Request) -> Response:
        info = remote.key(request, "admin")
        body = await read_json(request)
        return await run_in_threadpool(_create_key, remote, info, body)

    async def keys_revoke(request: Request) -> Response:
        info = remote.key(request, "admin")
        kid = request.path_params["key_id"]
        revoked = await run_in_threadpool(remote.keys.revoke, kid, f"key {info.id} ({info.name})")
        return json_response(revoked.to_json())

    async def openapi(request: Request) -> Response:
        from tracker.ui.openapi import document

        return json_response(document())

    v1 = "/api/v1"
    return [
        Route(f"{v1}/openapi.json", handle(openapi), methods=["GET"]),
        Route(f"{v1}/whoami", handle(whoami), methods=["GET"]),
        Route(f"{v1}/runs", handle(create_run), methods=["POST"]),
        Route(f"{v1}/runs/{{run_id}}/segments", handle(segments), methods=["GET"]),
        Route(f"{v1}/runs/{{run_id}}/segments/{{segment:path}}", handle(append), methods=["POST"]),
        Route(f"{v1}/runs/{{run_id}}/log", handle(log_records), methods=["POST"]),
        Route(f"{v1}/runs/{{run_id}}/finish", handle(finish), methods=["POST"]),
        Route(f"{v1}/blobs/sha256/{{sha}}", handle(blob_head), methods=["HEAD"]),
        Route(f"{v1}/blobs/sha256/{{sha}}", handle(blob_put), methods=["PUT"]),
        Route(f"{v1}/keys", handle(keys_list), methods=["GET"]),
        Route(f"{v1}/keys", handle(keys_create), methods=["POST"]),
        Route(f"{v1}/keys/{{key_id}}", handle(keys_revoke), methods=["DELETE"]),
    ]


def blob_size(remote: Remote, sha: str) -> int | None:
    """The size of blob ``sha`` where the server keeps blobs (its folder, then the database store's bucket)."""
    size = remote.ingest.blob_size(sha)
    head = getattr(remote.blobs, "head", None)
    if size is None and head is not None:
        try:
            size = head(sha)
        except (TrackerError, OSError):
            size = None
    return size


def _create_run(remote: Remote, info: Any, body: Any) -> Response:
    from tracker.core.format import new_run_id

    fields = remote.writers.fields(body)
    run_id = fields.get("id") or new_run_id()
    project = fields.get("project")
    if not info.may_project(project):
        raise Forbidden(remote._projects(info, project))
    if remote.ingest.exists(run_id) or remote.keys.owner(run_id) is not None:
        raise TrackerError(f"run {run_id} already exists in this store")
    kid, _ = remote.keys.claim(run_id, info.id, project)
    if kid != info.id:
        raise TrackerError(f"run {run_id} already exists in this store")
    run = remote.writers.start({**fields, "id": run_id})
    if remote.spool is not None:
        remote.spool.wake(run.id)
    return json_response({"id": run.id}, 201)


def _create_key(remote: Remote, info: Any, body: Any) -> Response:
    from tracker.remote.keys import check_fields, parse_expires
    from tracker.remote.writers import BadRequest

    if not isinstance(body, dict) or set(body) - {"name", "scope", "projects", "expires"}:
        raise BadRequest('expected {"name", "scope": "read"|"write"|"admin", "projects"?: [...], '
                         '"expires"?: "90d"}')
    try:
        name, scope, projects = check_fields(body.get("name"), body.get("scope"), body.get("projects"))
        expires = parse_expires(body.get("expires"))
    except TrackerError as exc:
        raise BadRequest(str(exc)) from None
    new, key = remote.keys.create(name, scope, projects, expires, creator=f"key {info.id} ({info.name})")
    return json_response({"id": new.id, "key": key, "name": new.name, "scope": new.scope,
                          "projects": new.projects, "expires": new.expires}, 201)


__all__ = ["MAX_BLOB", "MAX_JSON_BODY", "MAX_SEGMENT_BODY", "Forbidden", "Remote", "TooLarge", "read_body",
           "routes"]
