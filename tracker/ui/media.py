"""The dashboard's Media panel: a run's audio, video, 3D and HTML records, and their bytes (see docs/media.md).

Three endpoints, routed by :func:`tracker.ui.app.create_app`:

- ``GET /api/runs/{id}/media``: the index of the run's media: each name with
  its kind and the steps at which it was logged, read from the records (the
  store's derived columns), never from a blob; and (``at``) the records at the
  last step, where the panel opens;
- ``GET /api/runs/{id}/media?step=N[&names=a,b]``: for each name, the records
  at its logged step nearest to ``N`` (and which step that is);
- ``GET /api/runs/{id}/media/{sha256}[?download=1]``: the bytes of a blob one
  of those records names, with its content type, ``nosniff``, a
  Content-Security-Policy, and HTTP Range requests (206) so that players seek.

HTML (and SVG) never run in the dashboard's origin: they are served only with
``Content-Security-Policy: sandbox allow-scripts`` (an opaque origin: no
cookies, no storage, no reading the app's answers), allowed no request of
their own, and the page shows them in an ``<iframe sandbox="allow-scripts">``.
A blob is served only when the run names it and its bytes hash to its name
(checked once per file, then remembered while the file is unchanged), from the
store's blob folder or, over the team store, from the bucket through the blob
cache.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.core.errors import StoreError, StoreUnavailable

if TYPE_CHECKING:  # Starlette only where a route runs: a report reads the records without it
    from starlette.requests import Request
    from starlette.responses import Response

#: The record schemas the panel shows, in the order of its rows.
MEDIA_SCHEMAS = ("audio", "video", "object3d", "html")
#: Records of one name at one step shown at most (a list of clips logged under one key).
MAX_AT_STEP = 16
#: Names answered by one ``?step=`` request at most.
MAX_NAMES = 200

#: Content types by (kind, format); a format not listed is served as bytes to be downloaded.
CONTENT_TYPES: dict[tuple[str, str], str] = {
    ("audio", "wav"): "audio/wav", ("audio", "mp3"): "audio/mpeg", ("audio", "ogg"): "audio/ogg",
    ("audio", "flac"): "audio/flac", ("audio", "opus"): "audio/ogg", ("audio", "m4a"): "audio/mp4",
    ("video", "mp4"): "video/mp4", ("video", "webm"): "video/webm", ("video", "gif"): "image/gif",
    ("video", "ogv"): "video/ogg",
    ("object3d", "glb"): "model/gltf-binary", ("object3d", "gltf"): "model/gltf+json",
    ("object3d", "obj"): "model/obj", ("object3d", "stl"): "model/stl", ("object3d", "ply"): "application/octet-stream",
    ("html", "html"): "text/html; charset=utf-8", ("html", "svg"): "image/svg+xml",
}
#: Formats that are documents able to run scripts: served only inside a sandbox.
ACTIVE = frozenset({"text/html; charset=utf-8", "image/svg+xml"})

#: The policy of every media answer that is not a document: it loads nothing, runs nothing.
MEDIA_CSP = "default-src 'none'; sandbox"
#: The policy of HTML and SVG: an opaque origin (sandbox without allow-same-origin), their own inline
#: scripts and styles, images and fonts inline, no request of any kind.
DOCUMENT_CSP = ("sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
                "style-src 'unsafe-inline'; img-src data: blob:; media-src data: blob:; font-src data:; "
                "base-uri 'none'; form-action 'none'; frame-ancestors 'self'")


def document_csp(frame_ancestors: str = "'none'") -> str:
    """:data:`DOCUMENT_CSP`, framed also by whom the app's pages may be framed by (``tracker.show``'s notebooks)."""
    extra = frame_ancestors.strip()
    return DOCUMENT_CSP if extra in ("", "'none'", "'self'") else f"{DOCUMENT_CSP} {extra}"


def content_type(kind: str, fmt: str | None) -> str:
    """The Content-Type of a blob of ``kind`` in format ``fmt`` (``application/octet-stream`` when unknown)."""
    fmt = (fmt or "").lower().lstrip(".")
    if fmt == "svg":
        return "image/svg+xml"
    return CONTENT_TYPES.get((kind, fmt), "text/html; charset=utf-8" if kind == "html" else "application/octet-stream")


class Entry:
    """One name's media records, in log order, with the sorted steps at which they were logged."""

    __slots__ = ("kind", "records", "steps", "by_step")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.records: list[dict[str, Any]] = []
        self.by_step: dict[int, list[int]] = {}
        self.steps: list[int] = []

    def add(self, step: int, time: float, data: dict[str, Any]) -> None:
        self.by_step.setdefault(step, []).append(len(self.records))
        self.records.append({**data, "step": step, "time": time})

    def nearest(self, step: int) -> int:
        """The logged step nearest to ``step`` (the earlier of two as near)."""
        i = bisect.bisect_left(self.steps, step)
        if i == 0:
            return self.steps[0]
        if i == len(self.steps):
            return self.steps[-1]
        before, after = self.steps[i - 1], self.steps[i]
        return after if after == step or after - step < step - before else before


class Media:
    """A run's media records by name (``entries``) and each blob's record (``blobs``: sha256 -> kind, format, name),
    the media in its tables' cells among the blobs."""

    def __init__(self, view: Any) -> None:
        self.entries: dict[str, Entry] = {}
        self.blobs: dict[str, dict[str, Any]] = {}
        present = set(view.schemas())
        for kind in MEDIA_SCHEMAS:
            if kind not in present:
                continue
            for r in view.records(kind):
                d = r.data
                name = str(d.get("name", ""))
                entry = self.entries.get(name)
                if entry is None:
                    entry = self.entries[name] = Entry(kind)
                elif entry.kind != kind:  # the same key logged as two kinds: each kind its own row
                    name = f"{name} ({kind})"
                    entry = self.entries.setdefault(name, Entry(kind))
                entry.add(int(r.step), float(r.time), d)
                sha = d.get("sha256")
                if isinstance(sha, str):
                    self.blobs.setdefault(sha, {"kind": kind, "format": d.get("format") or
                                                ("html" if kind == "html" else None), "name": name,
                                                "size": d.get("size")})
        for entry in self.entries.values():
            entry.steps = sorted(entry.by_step)
        self._tables = "table" in present  # read only when a file is asked for that no record names

    def blob(self, view: Any, sha: str) -> dict[str, Any] | None:
        """What the run says of media file ``sha`` (kind, format, name, size), from its records or, failing
        them, from its logged tables' cells (W&B's audio-file, video-file, ...); ``None`` when it names none."""
        found = self.blobs.get(sha)
        if found is not None or not self._tables:
            return found
        from tracker.capture.cells import MEDIA_FILES, table_blobs

        self._tables = False
        kinds = {t: k for k, t in MEDIA_FILES.items()}
        for table, row, column, cell in table_blobs(view):
            kind = kinds.get(cell.get("_type"))
            if kind is not None:
                self.blobs.setdefault(cell["sha256"], {
                    "kind": kind, "format": cell.get("format") or ("html" if kind == "html" else None),
                    "name": f"{table}-{row}-{column}", "size": cell.get("size")})
        return self.blobs.get(sha)

    def index(self) -> dict[str, Any]:
        """``{"names": [{name, kind, count, steps}], "steps": [every step with media, sorted]}``."""
        names = [{"name": n, "kind": e.kind, "count": len(e.records), "steps": e.steps}
                 for n, e in self.entries.items()]
        names.sort(key=lambda x: (MEDIA_SCHEMAS.index(x["kind"]), x["name"]))
        steps = sorted({s for e in self.entries.values() for s in e.steps})
        return {"names": names, "steps": steps}

    def at(self, step: int, names: list[str] | None) -> dict[str, Any]:
        """Per name (all, or ``names``), the records at its logged step nearest to ``step``."""
        out = {}
        for name in names if names is not None else list(self.entries):
            entry = self.entries.get(name)
            if entry is None or not entry.steps:
                continue
            shown = entry.nearest(step)
            idx = entry.by_step[shown]
            out[name] = {"kind": entry.kind, "step": shown, "exact": shown == step, "count": len(idx),
                         "records": [entry.records[i] for i in idx[-MAX_AT_STEP:]]}
        return {"step": step, "media": out}


class MediaCache:
    """The media of recently viewed runs, read again only when the run has grown (its segments' sizes, or
    the team database's change stamp), and the blob files whose hash was checked.

    :param max_runs: how many runs to keep.
    """

    def __init__(self, max_runs: int = 8) -> None:
        self.max_runs = max_runs
        self._runs: OrderedDict[str, tuple[Any, Media]] = OrderedDict()
        self._checked: OrderedDict[tuple, None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def signature(view: Any) -> Any:
        """What changes when the run gains records: the team store's stamp, else its segments' sizes."""
        stamp = getattr(view, "stamp", None)
        if callable(stamp):
            return ("stamp", stamp())
        from tracker.read.segment import segment_sizes

        return tuple(sorted(segment_sizes(Path(view.path)).items()))

    def media(self, view: Any) -> Media:
        """The run's :class:`Media`, from the cache while the run is unchanged."""
        sig = self.signature(view)
        key = f"{id(view.store) if not isinstance(view.store, (str, os.PathLike)) else view.store}:{view.id}"
        with self._lock:
            hit = self._runs.get(key)
            if hit is not None and hit[0] == sig:
                self._runs.move_to_end(key)
                return hit[1]
        media = Media(view)
        with self._lock:
            self._runs[key] = (sig, media)
            self._runs.move_to_end(key)
            while len(self._runs) > self.max_runs:
                self._runs.popitem(last=False)
        return media

    def checked(self, path: Path, sha: str) -> int:
        """The size of blob file ``path`` once its bytes were found to hash to ``sha``.

        A file checked before and unchanged since (same inode, size and time) is not read again: a
        player seeking through a video asks for many ranges of one file.

        :raises StoreError: the file is missing or its bytes do not match.
        """
        from tracker.capture.blobs import file_problem

        try:
            st = os.stat(path)
        except OSError:
            raise StoreError(f"blob {sha} is missing ({path})") from None
        key = (str(path), sha, st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if key in self._checked:
                self._checked.move_to_end(key)
                return st.st_size
        problem, size = file_problem(path, sha)
        if problem is not None:
            raise StoreError(problem)
        with self._lock:
            self._checked[key] = None
            while len(self._checked) > 4096:
                self._checked.popitem(last=False)
        return size


def _cache(api: Any) -> MediaCache:
    cache = getattr(api, "media_cache", None)
    if cache is None:
        cache = api.media_cache = MediaCache()
    return cache


def media(api: Any, request: Request) -> Response:
    """``GET /api/runs/{id}/media`` (the index) or ``?step=N[&names=a,b]`` (the records nearest to step N)."""
    from tracker.ui.params import BadRequest, ascii_int, json_response, names_param, parsed_param

    view = api.view(request.path_params["id"])
    step = parsed_param(request, "step", ascii_int, "an integer step")
    names = names_param(request, "names")
    if names is not None and len(names) > MAX_NAMES:
        raise BadRequest(f"names: expected at most {MAX_NAMES} names, given {len(names)}")
    found = _cache(api).media(view)
    from tracker.ui.parts import strict

    if step is None:
        if names is not None:
            raise BadRequest("names: given without step (the index lists every name)")
        index = found.index()
        # The records at the last step come along (one per name, no file): the panel opens there, one
        # request sooner.
        index["at"] = strict(found.at(index["steps"][-1], None)) if index["steps"] else None
        return json_response(index)

    return json_response(strict(found.at(step, names)))


def blob(api: Any, request: Request) -> Response:
    """``GET /api/runs/{id}/media/{sha256}[?download=1]``: a media blob the run names (Range requests answered 206).

    An unknown hash is a 404; a missing or damaged blob a 500 naming it.
    """
    from starlette.responses import FileResponse

    from tracker.ui.params import BadRequest, error
    sha = request.path_params["sha"]
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise BadRequest(f"not a sha256 (64 lowercase hex digits): {sha[:80]!r}")
    view = api.view(request.path_params["id"])
    cache = _cache(api)
    meta = cache.media(view).blob(view, sha)
    if meta is None:
        return error(404, f"run {view.id} names no media file {sha}")
    from tracker.capture.blobs import blobs_of

    try:
        path = blobs_of(view).fetch(sha, meta["size"] if isinstance(meta["size"], int) else None)
        cache.checked(path, sha)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        return error(500, f"run {view.id}, media file {meta['name']} ({sha}): {exc}")
    ctype = content_type(meta["kind"], meta["format"])
    active = ctype in ACTIVE
    headers = {"cache-control": "private, max-age=31536000, immutable", "x-content-type-options": "nosniff",
               "content-security-policy": document_csp(getattr(api, "frame_ancestors", "'none'")) if active
               else MEDIA_CSP,
               # The panel frames HTML itself; nothing else may (CSP frame-ancestors decides where it is known).
               "x-frame-options": "SAMEORIGIN" if active else "DENY"}
    ext = (meta["format"] or "bin").lower().lstrip(".")
    filename = f"{_safe(meta['name'])}.{ext}"
    disposition = "attachment" if request.query_params.get("download") else "inline"
    return FileResponse(path, media_type=ctype, filename=filename, content_disposition_type=disposition,
                        headers=headers)


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "media"


__all__ = ["CONTENT_TYPES", "DOCUMENT_CSP", "MEDIA_CSP", "MEDIA_SCHEMAS", "Media", "MediaCache", "blob",
           "content_type", "document_csp", "media"]
