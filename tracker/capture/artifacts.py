"""Artifacts: files and folders a run produced, stored once by content or recorded by reference.

``log_artifact`` stores the bytes first (see :mod:`tracker.capture.blobs`)
and appends the ``artifact`` record only after the blob is complete under
its final name; ``use_record`` gives the ``artifact_use`` record of a version
a run used. Readers (``artifacts``, ``open_artifact``, ``copy_artifact``)
take the records of a run view and resolve them to the blob store; the
version helpers (``version_files``, ``open_member``, ``download``) read the
bytes of a version of a named artifact (:mod:`tracker.read.registry`), every
byte checked by SHA-256.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import attrs

from tracker.core.errors import SchemaError, StoreError, TrackerError
from tracker.core.files import NotAFileError, check_regular, open_regular
from tracker.core.rules import check_aliases, check_artifact_name, check_artifact_type

# The blob machinery (hashlib, threads) loads on first use.

ARTIFACT = "artifact"
#: The builtin, for functions whose ``type`` argument is an artifact's type.
builtin_type = type


@attrs.frozen(kw_only=True)
class Logged:
    """One ``artifact`` record as readers see it (:class:`tracker.Artifact` wraps it).

    :ivar name: the artifact's name (free text; the file's name by default).
    :ivar kind: how the bytes are kept or what they are: ``"file"``, ``"folder"``, ``"checkpoint"``...
    :ivar sha256: the content's hash (a folder's: its manifest's).
    :ivar size: bytes (a folder's: the sum of its files).
    :ivar path: where the bytes are: the blob, the referenced file or folder, or a copied folder's manifest blob.
    :ivar step: the step it was logged at.
    :ivar time: seconds since the epoch when it was logged.
    :ivar folder: whether it is a folder (``sha256`` then names its manifest).
    :ivar reference: whether it is a reference to a file outside the store (``copy=False``).
    :ivar files: how many files it holds (1 for a file).
    :ivar type: what it is (``model``, ``dataset``; ``None``: unspecified).
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
    type: str | None = None
    aliases: tuple[str, ...] = ()
    filename: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    referenced: str | None = None


def _check_text(schema: str, field: str, value: Any) -> str:
    if type(value) is not str or not value:
        raise SchemaError(schema, [(field, f"expected a non-empty str, given {type(value).__name__} {value!r}")])
    return value


def _rule(field: str, check: Callable[[Any], Any], value: Any) -> Any:
    try:
        return check(value)
    except TrackerError as exc:
        raise SchemaError(ARTIFACT, [(field, str(exc))]) from None


def check_fields(name: Any, kind: Any, type: Any, aliases: Any, description: Any, metadata: Any) -> dict[str, Any]:
    """The checked fields of a new ``artifact`` record (name, kind, type, aliases, description, metadata).

    :raises SchemaError: naming the field and what is wrong; nothing is written.
    """
    _check_text(ARTIFACT, "name", name)
    name = _rule("name", check_artifact_name, name)
    _check_text(ARTIFACT, "kind", kind)
    if type is not None:
        type = _rule("type", check_artifact_type, type)
    aliases = _rule("aliases", check_aliases, aliases)
    if description is not None and not isinstance(description, str):
        raise SchemaError(ARTIFACT, [("description", f"expected a str or None, given {description!r}")])
    if metadata is not None and not isinstance(metadata, Mapping):
        raise SchemaError(ARTIFACT, [("metadata", f"expected a dict or None, given {metadata!r}")])
    return {"name": name, "kind": kind, "type": type, "aliases": aliases, "description": description,
            "metadata": dict(metadata) if metadata is not None else None}


def log_artifact(write: Callable[[str, dict[str, Any], int | None], tuple[int, float]], store: Path, path: Any,
                 name: str | None = None, *, kind: str = "file", copy: bool = True, step: int | None = None,
                 fsync: bool = False, type: str | None = None, aliases: Iterable[str] | None = None,
                 description: str | None = None, metadata: Mapping[str, Any] | None = None,
                 filename: str | None = None, members: list[tuple[str, Path]] | None = None,
                 probe_before: float | None = None, probe_sizes: Iterable[int] = ()) -> Logged:
    """Store ``path`` (a file or a folder) and append its ``artifact`` record through ``write``.

    :param write: ``write(schema, data, step)`` appends one record and returns its step and time.
    :param store: the run's store folder.
    :param members: instead of ``path``: the files of a folder artifact as ``(relative path, file)``
        (W&B's ``add_file`` / ``add_dir``), sorted by path.
    :param probe_before: the time of the newest version already logged under the name: a file
        last changed before it, of one of the ``probe_sizes``, is probably stored already and is
        hashed before it is copied (nothing is written when it is; see :meth:`BlobStore.put_file`).
    :raises SchemaError: a bad name, kind, type, alias, description or metadata; nothing is written.
    :raises TrackerError: ``path`` does not exist or cannot be read; nothing is recorded.
    """
    if members is None and not isinstance(path, (str, os.PathLike)):
        raise SchemaError(ARTIFACT, [("path", f"expected a file or folder path, given {builtin_type(path).__name__}")])
    src = Path(path) if members is None else None
    if name is None and src is not None:
        name = src.resolve().name or str(src)
    fields = check_fields(name, kind, type, aliases, description, metadata)
    if builtin_type(copy) is not bool:
        raise SchemaError(ARTIFACT, [("copy", f"expected a bool, given {builtin_type(copy).__name__} {copy!r}")])
    from tracker.capture.blobs import BlobStore, hash_file

    blobs = BlobStore(store, fsync=fsync)
    if members is not None:
        manifest = blobs.put_files(members, copy=copy, probe_before=probe_before)
        is_dir, source = True, None
        sha, size, files = manifest.sha256, manifest.size, len(manifest.files)
    else:
        assert src is not None
        try:
            st = check_regular(src, "log_artifact: ", folder_ok=True)
        except FileNotFoundError:
            raise TrackerError(f"log_artifact: no such file or folder: {src}") from None
        except OSError as exc:
            raise TrackerError(f"log_artifact: cannot read {src}: {exc.strerror}") from None
        is_dir = stat.S_ISDIR(st.st_mode)
        source = str(src.absolute())
        if is_dir:
            manifest = blobs.put_folder(src, copy=copy, probe_before=probe_before)
            sha, size, files = manifest.sha256, manifest.size, len(manifest.files)
        else:
            probe = probe_before is not None and st.st_size in set(probe_sizes) and st.st_mtime <= probe_before
            try:
                sha, size = blobs.put_file(src, probe=probe) if copy else hash_file(src)
            except OSError as exc:
                raise TrackerError(f"log_artifact: cannot read {src}: {exc.strerror}") from None
            files = 1
            if filename is None:
                filename = src.name
    if is_dir and fields["kind"] == "file":
        fields["kind"] = "folder"
    data = {"name": fields["name"], "kind": fields["kind"], "sha256": sha, "size": size, "folder": is_dir,
            "files": files, "reference": None if copy else source, "type": fields["type"],
            "aliases": fields["aliases"], "filename": None if is_dir else filename,
            "description": fields["description"], "metadata": fields["metadata"]}
    s, t = write(ARTIFACT, data, step)
    return logged(store, data, s, t)



def use_record(project: str | None, name: str, version: str, sha256: str, type: str | None,
               alias: str | None) -> dict[str, Any]:
    """The fields of an ``artifact_use`` record: run ``use_artifact`` took ``project/name`` ``version``
    (content ``sha256``), asked for by ``alias`` (``None``: by its version)."""
    return {"name": name, "project": project, "version": version, "sha256": sha256, "type": type, "alias": alias}


def logged(store: Any, data: dict[str, Any], step: int, t: float) -> Logged:
    """The :class:`Logged` of an ``artifact`` record's ``data`` in ``store`` (a folder, or the team store)."""
    from tracker.capture.blobs import blob_path

    ref = data.get("reference")
    sha = data["sha256"]
    if ref:
        path = Path(ref)
    elif isinstance(store, (str, os.PathLike)):
        path = blob_path(store, sha)
    else:  # the team store: the object's key under the bucket's prefix
        path = Path("sha256", sha[:2], sha[2:])
    meta = data.get("metadata")
    return Logged(name=data["name"], kind=data["kind"], sha256=sha, size=data["size"], path=path,
                  step=step, time=t, folder=bool(data.get("folder")), reference=bool(ref),
                  files=int(data.get("files") or 1), type=data.get("type"),
                  aliases=tuple(a for a in data.get("aliases") or () if isinstance(a, str)),
                  filename=data.get("filename"), description=data.get("description"),
                  metadata=meta if isinstance(meta, dict) else None, referenced=ref or None)


def artifacts(view: Any) -> list[Logged]:
    """Every artifact record of run ``view``, in log order (a name logged twice appears twice)."""
    if ARTIFACT not in view.schemas():
        return []
    return [logged(view.store, r.data, r.step, r.time) for r in view.records(ARTIFACT)]


def find_artifact(view: Any, name: str) -> Logged:
    """The latest artifact named ``name`` that run ``view`` logged.

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
    from tracker.capture.blobs import blobs_of

    a = find_artifact(view, name)
    return copy_content(blobs_of(view), a.sha256, a.size, a.folder, a.referenced, Path(dest),
                        f"artifact {name!r} of run {view.id}")


def copy_content(blobs: Any, sha: str, size: int, folder: bool, reference: str | None, out: Path,
                 label: str) -> Path:
    """Copy a content (a file, or a folder by its manifest ``sha``) to ``out``, every hash checked.

    :param reference: the referenced file or folder (``copy=False``), else ``None``: the blobs.
    :param label: what it is, for messages (``"artifact 'mnist' v3"``).
    :raises TrackerError: ``out`` exists (for a folder).
    :raises StoreError: a missing or damaged blob or referenced file, named; nothing is left at ``out``.
    """
    try:
        return _copy_content(blobs, sha, size, folder, reference, out, label)
    except StoreError as exc:
        text = str(exc)
        raise StoreError(text if label in text else f"{label}: {text}") from None


def _copy_content(blobs: Any, sha: str, size: int, folder: bool, reference: str | None, out: Path,
                  label: str) -> Path:
    from tracker.capture.blobs import copy_blob_out, copy_checked

    if not folder:
        if reference:
            copy_checked(Path(reference), sha, size, out, what=f"referenced file {reference} ({label})")
        else:
            copy_blob_out(blobs, sha, size, out)
        return out
    if out.exists():
        raise TrackerError(f"{out} exists; copy_artifact writes a folder only to a new path")
    manifest = blobs.read_manifest(sha)
    tmp = out.parent / f".{out.name}.{os.getpid()}.part"
    tmp.mkdir(parents=True)
    try:
        for e in manifest.files:
            target = tmp.joinpath(*e.path.split("/"))
            if reference:
                src = Path(reference).joinpath(*e.path.split("/"))
                copy_checked(src, e.sha256, e.size, target, what=f"referenced file {src} ({label})")
            else:
                copy_blob_out(blobs, e.sha256, e.size, target)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


# --- a version's files: listing, opening, downloading (tracker.Artifact) ---------------------------

@attrs.frozen
class Member:
    """One file of a version: its path inside the artifact (POSIX), size and sha256."""

    path: str
    size: int
    sha256: str


def file_name(name: str, filename: str | None) -> str:
    """The path a file artifact's one file has inside it: its file name when known, else the name (a
    name that would leave its folder: its last part)."""
    from tracker.capture.blobs import safe_relative

    for candidate in (filename, name):
        if candidate and safe_relative(candidate):
            return candidate
    return (name or "file").replace("\\", "/").rsplit("/", 1)[-1] or "file"


def version_files(blobs: Any, v: Any) -> list[Member]:
    """The files of version ``v`` (anything with ``sha256``, ``size``, ``folder``, ``name``, ``filename``).

    :raises StoreError: a folder whose manifest is missing or damaged.
    """
    if not v.folder:
        return [Member(file_name(v.name, v.filename), v.size, v.sha256)]
    return [Member(e.path, e.size, e.sha256) for e in blobs.read_manifest(v.sha256).files]


def member_of(blobs: Any, v: Any, label: str, name: str | None) -> Member:
    """The file ``name`` of version ``v`` (``None``: its only file).

    :raises TrackerError: no such file, or ``None`` for a version of several files (the message lists them).
    """
    files = version_files(blobs, v)
    if name is None:
        if len(files) == 1:
            return files[0]
        shown = ", ".join(f.path for f in files[:10]) + (" ..." if len(files) > 10 else "")
        raise TrackerError(f"{label} holds {len(files)} files ({shown}); name one, or use download()")
    for f in files:
        if f.path == name:
            return f
    shown = ", ".join(f.path for f in files[:20]) + (" ..." if len(files) > 20 else "")
    raise TrackerError(f"{label} has no file {name!r} (files: {shown})")


def open_member(blobs: Any, v: Any, label: str, name: str | None = None) -> IO[bytes]:
    """A binary file over one file of version ``v``: its size checked on opening, its sha256 when read to
    the end (a mismatch raises :class:`StoreError` then, naming the artifact, version and blob)."""
    from tracker.capture.blobs import CheckedReader

    m = member_of(blobs, v, label, name)
    reference = getattr(v, "reference", None)
    if isinstance(reference, bool):  # a Logged record: the referenced path is kept apart
        reference = getattr(v, "referenced", None)
    if reference:
        path = Path(reference) if not v.folder else Path(reference).joinpath(*m.path.split("/"))
        what = f"referenced file {path}"
    else:
        try:
            path = blobs.fetch(m.sha256, m.size)
        except StoreError as exc:
            raise StoreError(f"{label}: {exc}") from None
        what = f"blob {m.sha256}"
    try:
        f = open_regular(path, buffering=-1)
    except NotAFileError as exc:
        raise StoreError(f"{label}: {exc}") from None
    except FileNotFoundError:
        raise StoreError(f"{label}: {what} is missing ({path})") from None
    size = os.fstat(f.fileno()).st_size
    if size != m.size:
        f.close()
        raise StoreError(f"{label}: {what} has {size} bytes, the record says {m.size} ({path})")
    return CheckedReader(f, m.sha256, f"{label}: {what} ({path})")


def download(blobs: Any, v: Any, label: str, root: Path, only: list[str] | None = None) -> Path:
    """Copy the files of version ``v`` (or the ones named in ``only``) into folder ``root``, every hash checked.

    Everything is written in a temporary folder next to ``root`` first and moved into ``root`` only
    when every file matched its sha256: a damaged blob leaves ``root`` as it was. Files already in
    ``root`` are replaced.

    :returns: ``root``.
    :raises StoreError: naming the artifact, version and blob that is missing or damaged.
    """
    files = version_files(blobs, v)
    if only is not None:
        files = [member_of(blobs, v, label, n) for n in only]
    reference = getattr(v, "reference", None)
    if isinstance(reference, bool):
        reference = getattr(v, "referenced", None)
    parent = root.parent
    from tracker.capture.blobs import copy_blob_out, copy_checked, make_folders

    make_folders(parent)
    tmp = parent / f".{root.name}.{os.getpid()}.{id(files):x}.part"
    tmp.mkdir()
    try:
        try:
            for m in files:
                target = tmp.joinpath(*m.path.split("/"))
                if reference:
                    src = Path(reference) if not v.folder else Path(reference).joinpath(*m.path.split("/"))
                    copy_checked(src, m.sha256, m.size, target, what=f"{label}: referenced file {src}")
                else:
                    copy_blob_out(blobs, m.sha256, m.size, target)
        except StoreError as exc:
            text = str(exc)
            raise StoreError(text if text.startswith(label) else f"{label}: {text}") from None
        if not root.exists():
            os.rename(tmp, root)
            return root
        if not root.is_dir():
            raise TrackerError(f"{root} exists and is not a folder; download into a folder")
        for m in files:
            target = root.joinpath(*m.path.split("/"))
            make_folders(target.parent)
            os.replace(tmp.joinpath(*m.path.split("/")), target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


__all__ = ["ARTIFACT", "Logged", "Member", "artifacts", "check_fields", "copy_artifact", "copy_content",
           "download", "file_name", "find_artifact", "log_artifact", "logged", "member_of", "open_artifact",
           "open_member", "use_record", "version_files"]
