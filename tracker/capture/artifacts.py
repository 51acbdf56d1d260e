"""Artifacts: files and folders a run produced, stored once by content or recorded by reference.

``log_artifact`` stores the bytes first (see :mod:`tracker.capture.blobs`)
and appends the ``artifact`` record only after the blob is complete under
its final name. Readers (``artifacts``, ``open_artifact``, ``copy_artifact``)
take the records of a run view and resolve them to the blob store.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import attrs

from tracker.core.errors import SchemaError, StoreError, TrackerError
from tracker.core.files import NotAFileError, check_regular, open_regular

# The blob machinery (hashlib, threads) loads on first use: `import tracker` imports Artifact only.

ARTIFACT = "artifact"


@attrs.frozen(kw_only=True)
class Artifact:
    """One logged artifact as readers see it.

    :ivar name: the artifact's name (free text; the file's name by default).
    :ivar kind: free-text kind: ``"file"``, ``"folder"``, ``"model"``, ``"checkpoint"``...
    :ivar sha256: the content's hash (a folder's: its manifest's).
    :ivar size: bytes (a folder's: the sum of its files).
    :ivar path: where the bytes are: the blob, the referenced file or folder, or a copied folder's manifest blob.
    :ivar step: the step it was logged at.
    :ivar time: seconds since the epoch when it was logged.
    :ivar folder: whether it is a folder (``sha256`` then names its manifest).
    :ivar reference: whether it is a reference to a file outside the store (``copy=False``).
    :ivar files: how many files it holds (1 for a file).
    """

    name: str
    kind: str
    sha256: str
    size: int
    path: Path
    step: int
    time: float
    folder: bool = False
    reference: bool = False
    files: int = 1


def _check_text(schema: str, field: str, value: Any) -> str:
    if type(value) is not str or not value:
        raise SchemaError(schema, [(field, f"expected a non-empty str, given {type(value).__name__} {value!r}")])
    return value


def log_artifact(write: Callable[[str, dict[str, Any], int | None], None], store: Path, path: Any,
                 name: str | None = None, *, kind: str = "file", copy: bool = True,
                 step: int | None = None, fsync: bool = False) -> Artifact:
    """Store ``path`` (a file or a folder) and append its ``artifact`` record through ``write``.

    :param write: ``write(schema, data, step)`` appends one record and returns its step and time.
    :param store: the run's store folder.
    :raises SchemaError: a bad name or kind; nothing is written.
    :raises TrackerError: ``path`` does not exist or cannot be read; nothing is recorded.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise SchemaError(ARTIFACT, [("path", f"expected a file or folder path, given {type(path).__name__}")])
    src = Path(path)
    if name is None:
        name = src.resolve().name or str(src)
    _check_text(ARTIFACT, "name", name)
    _check_text(ARTIFACT, "kind", kind)
    if type(copy) is not bool:
        raise SchemaError(ARTIFACT, [("copy", f"expected a bool, given {type(copy).__name__} {copy!r}")])
    try:
        is_dir = stat.S_ISDIR(check_regular(src, "log_artifact: ", folder_ok=True).st_mode)
    except FileNotFoundError:
        raise TrackerError(f"log_artifact: no such file or folder: {src}") from None
    except OSError as exc:
        raise TrackerError(f"log_artifact: cannot read {src}: {exc.strerror}") from None
    from tracker.capture.blobs import BlobStore, hash_file

    blobs = BlobStore(store, fsync=fsync)
    source = str(src.absolute())
    if is_dir:
        manifest = blobs.put_folder(src, copy=copy)
        sha, size, files = manifest.sha256, manifest.size, len(manifest.files)
        if kind == "file":
            kind = "folder"
    else:
        try:
            sha, size = blobs.put_file(src) if copy else hash_file(src)
        except OSError as exc:
            raise TrackerError(f"log_artifact: cannot read {src}: {exc.strerror}") from None
        files = 1
    data = {"name": name, "kind": kind, "sha256": sha, "size": size, "folder": is_dir, "files": files,
            "reference": None if copy else source}
    s, t = write(ARTIFACT, data, step)
    return _artifact(store, data, s, t)


def _artifact(store: Any, data: dict[str, Any], step: int, t: float) -> Artifact:
    from tracker.capture.blobs import blob_path

    ref = data.get("reference")
    sha = data["sha256"]
    if ref:
        path = Path(ref)
    elif isinstance(store, (str, os.PathLike)):
        path = blob_path(store, sha)
    else:  # the team store: the object's key under the bucket's prefix
        path = Path("sha256", sha[:2], sha[2:])
    return Artifact(name=data["name"], kind=data["kind"], sha256=sha, size=data["size"], path=path,
                    step=step, time=t, folder=bool(data.get("folder")), reference=bool(ref),
                    files=int(data.get("files") or 1))


def artifacts(view: Any) -> list[Artifact]:
    """Every artifact of run ``view``, in log order (a name logged twice appears twice)."""
    if ARTIFACT not in view.schemas():
        return []
    return [_artifact(view.store, r.data, r.step, r.time) for r in view.records(ARTIFACT)]


def find_artifact(view: Any, name: str) -> Artifact:
    """The latest version of artifact ``name`` of run ``view``.

    :raises TrackerError: no artifact of that name (the message lists the names there are).
    """
    found = None
    names: dict[str, None] = {}
    for a in artifacts(view):
        names[a.name] = None
        if a.name == name:
            found = a
    if found is None:
        have = ", ".join(repr(n) for n in names) or "none"
        raise TrackerError(f"run {view.id} has no artifact named {name!r} (artifacts: {have})")
    return found


def open_artifact(view: Any, name: str) -> IO[bytes]:
    """A binary file object over the latest version of file artifact ``name``.

    The size is checked on opening; the hash is not (use :func:`copy_artifact`
    or ``tracker verify`` for that).

    :raises TrackerError: unknown name, a folder, or bytes that are missing or of the wrong size.
    """
    from tracker.capture.blobs import blobs_of

    a = find_artifact(view, name)
    if a.folder:
        raise TrackerError(f"artifact {name!r} of run {view.id} is a folder; use copy_artifact(name, dest)")
    path = a.path
    if not a.reference and not isinstance(view.store, (str, os.PathLike)):
        try:  # the team store: fetched from the bucket into the local cache, size and hash checked
            path = blobs_of(view).fetch(a.sha256, a.size)
        except StoreError as exc:
            raise StoreError(f"artifact {name!r} of run {view.id}: {exc}") from None
    try:
        f = open_regular(path, buffering=-1)
    except NotAFileError as exc:
        raise StoreError(f"artifact {name!r} of run {view.id}: {exc}") from None
    except FileNotFoundError:
        what = "referenced file" if a.reference else "blob"
        raise StoreError(f"artifact {name!r} of run {view.id}: {what} {a.path} is missing") from None
    size = os.fstat(f.fileno()).st_size
    if size != a.size:
        f.close()
        raise StoreError(f"artifact {name!r} of run {view.id}: {path} has {size} bytes, the record says {a.size}")
    return f


def copy_artifact(view: Any, name: str, dest: str | os.PathLike[str]) -> Path:
    """Copy the latest version of artifact ``name`` to ``dest``, checking every hash.

    A file is written under a temporary name and renamed when its hash
    matched; a folder is built in a temporary folder next to ``dest`` and
    renamed when every file matched. On a mismatch nothing is left at ``dest``.

    :returns: the path written.
    :raises TrackerError: unknown name, or ``dest`` exists (for a folder).
    :raises StoreError: a missing or damaged blob or referenced file, named.
    """
    a = find_artifact(view, name)
    try:
        return _copy_artifact(view, a, name, Path(dest))
    except StoreError as exc:
        if view.id in str(exc):
            raise
        raise StoreError(f"artifact {name!r} of run {view.id}: {exc}") from None


def _copy_artifact(view: Any, a: Artifact, name: str, out: Path) -> Path:
    import shutil

    from tracker.capture.blobs import Manifest, blobs_of, copy_blob_out, copy_checked

    blobs = blobs_of(view)
    if not a.folder:
        if a.reference:
            copy_checked(a.path, a.sha256, a.size, out, what=f"referenced file {a.path} (artifact {name!r})")
        else:
            copy_blob_out(blobs, a.sha256, a.size, out)
        return out
    if out.exists():
        raise TrackerError(f"{out} exists; copy_artifact writes a folder only to a new path")
    manifest: Manifest = blobs.read_manifest(a.sha256)
    tmp = out.parent / f".{out.name}.{os.getpid()}.part"
    tmp.mkdir(parents=True)
    try:
        for e in manifest.files:
            target = tmp.joinpath(*e.path.split("/"))
            if a.reference:
                copy_checked(a.path.joinpath(*e.path.split("/")), e.sha256, e.size, target,
                             what=f"referenced file {a.path / e.path} (artifact {name!r})")
            else:
                copy_blob_out(blobs, e.sha256, e.size, target)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
