"""Integrity of the bytes that records name: every blob and every referenced file.

``tracker verify`` calls :func:`check_blobs` after scanning the segments. Each
blob is read once however many runs name it, its size and sha256 compared
with the record; each file recorded by reference (``copy=False``) is checked
the same way at its absolute path. A problem names the file, what is wrong
(``missing``, ``size``, ``damaged`` for a blob, ``changed`` for a referenced
file) and every run that refers to it. Nothing is ever changed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tracker.capture.blobs import BlobStore, hash_file
from tracker.capture.mediafile import MEDIA_SCHEMAS
from tracker.core.errors import StoreError, TrackerError
from tracker.core.files import NotAFileError
from tracker.core.records import Problem

_SCHEMAS = ("artifact", "image", *MEDIA_SCHEMAS)


class _Ref:
    __slots__ = ("size", "runs", "what")

    def __init__(self, size: int | None, what: str) -> None:
        self.size = size
        self.runs: dict[str, None] = {}
        self.what = what


def _collect(view: Any, blobs: BlobStore, stored: dict[str, _Ref], files: dict[str, tuple[str, _Ref]],
             problems: list[Problem]) -> None:
    present = set(view.schemas())
    for schema in _SCHEMAS:
        if schema not in present:
            continue
        for rec in view.records(schema):
            d = rec.data
            sha, name = d.get("sha256"), d.get("name")
            if not isinstance(sha, str):
                continue
            what = f"{schema} {name!r}"
            ref = d.get("reference") if schema == "artifact" else None
            folder = schema == "artifact" and bool(d.get("folder"))
            if folder:
                # The manifest is a blob even for a referenced folder.
                stored.setdefault(sha, _Ref(None, f"manifest of {what}")).runs[view.id] = None
                try:
                    manifest = blobs.read_manifest(sha)
                except StoreError as exc:
                    path = blobs.path(sha)
                    if path.is_file():  # else the manifest blob's own check reports it missing
                        problems.append(Problem(str(path), None, "manifest", f"manifest of {what} cannot be used: "
                                                                              f"{exc} (run {view.id})"))
                    continue
                for e in manifest.files:
                    if ref:
                        path = str(Path(ref).joinpath(*e.path.split("/")))
                        files.setdefault(path, (e.sha256, _Ref(e.size, f"{what} file {e.path!r}")))[1].runs[
                            view.id] = None
                    else:
                        stored.setdefault(e.sha256, _Ref(e.size, f"{what} file {e.path!r}")).runs[view.id] = None
            elif ref:
                files.setdefault(str(ref), (sha, _Ref(d.get("size"), what)))[1].runs[view.id] = None
            else:
                size = d.get("size") if schema in ("artifact", "html") else None
                stored.setdefault(sha, _Ref(size, what)).runs[view.id] = None


def _collect_table_images(view: Any, stored: dict[str, _Ref]) -> None:
    from tracker.capture.cells import table_images

    for name, row, column, cell in table_images(view):
        stored.setdefault(cell["sha256"], _Ref(None, f"table {name!r} row {row} column {column!r}")).runs[
            view.id] = None


def _collect_environment(view: Any, stored: dict[str, _Ref]) -> None:
    from tracker.capture.environment import environment_blobs

    for sha, what in environment_blobs(view):
        stored.setdefault(sha, _Ref(None, what)).runs[view.id] = None


def _runs(ref: _Ref) -> str:
    ids = list(ref.runs)
    return ("run " if len(ids) == 1 else "runs ") + ", ".join(ids)


def check_blobs(store: str | os.PathLike[str], run_ids: Iterable[str], *, open_run: Callable[[str], Any],
                progress: Callable[[int], None] | None = None) -> tuple[int, list[Problem]]:
    """Check every blob and referenced file the given runs name: ``(files checked, problems)``.

    :param open_run: ``open_run(run_id)`` returns the run's ``RunView``.
    :param progress: called with the number of bytes hashed since its last call.
    """
    blobs = BlobStore(store)
    stored: dict[str, _Ref] = {}
    files: dict[str, tuple[str, _Ref]] = {}
    problems: list[Problem] = []
    for rid in run_ids:
        try:
            view = open_run(rid)
            _collect(view, blobs, stored, files, problems)
            _collect_table_images(view, stored)
            _collect_environment(view, stored)
        except TrackerError:
            continue  # a run that cannot be read is the segment scan's to report
    for sha, ref in sorted(stored.items()):
        path = blobs.path(sha)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            problems.append(Problem(str(path), None, "missing", f"blob of {ref.what} is missing ({_runs(ref)})"))
            continue
        if ref.size is not None and size != ref.size:
            problems.append(Problem(str(path), None, "size", f"blob of {ref.what} has {size} bytes, the record "
                                                              f"says {ref.size} ({_runs(ref)})"))
            continue
        try:
            got, _ = hash_file(path)
        except NotAFileError as exc:
            problems.append(Problem(str(path), None, "not a file", f"blob of {ref.what}: {exc} ({_runs(ref)})"))
            continue
        except OSError as exc:
            problems.append(Problem(str(path), None, "missing", f"blob of {ref.what} cannot be read: "
                                                                 f"{exc.strerror} ({_runs(ref)})"))
            continue
        if progress is not None:
            progress(size)
        if got != sha:
            problems.append(Problem(str(path), None, "damaged", f"blob of {ref.what} is damaged: its content "
                                                                 f"hashes to {got[:16]}... ({_runs(ref)})"))
    for path, (sha, ref) in sorted(files.items()):
        try:
            got, size = hash_file(path)
        except NotAFileError as exc:
            problems.append(Problem(path, None, "not a file", f"referenced file of {ref.what}: {exc} ({_runs(ref)})"))
            continue
        except FileNotFoundError:
            problems.append(Problem(path, None, "missing", f"referenced file of {ref.what} is missing "
                                                           f"({_runs(ref)})"))
            continue
        except OSError as exc:
            problems.append(Problem(path, None, "missing", f"referenced file of {ref.what} cannot be read: "
                                                           f"{exc.strerror} ({_runs(ref)})"))
            continue
        if progress is not None:
            progress(size)
        if got != sha or (ref.size is not None and size != ref.size):
            problems.append(Problem(path, None, "changed", f"referenced file of {ref.what} changed: {size} bytes "
                                                           f"hashing to {got[:16]}..., the record says {ref.size} "
                                                           f"bytes, {sha[:16]}... ({_runs(ref)})"))
    return len(stored) + len(files), problems


def blob_bytes(store: str | os.PathLike[str]) -> int:
    """The total size of the store's blobs (for a progress bar)."""
    return sum(p.stat().st_size for _, p in BlobStore(store).all())
