"""Reclaiming and counting space: ``collect_garbage`` (``tracker gc``) and ``disk_usage`` (``tracker du``).

Blobs are the capture module's content-addressed files,
``<store>/blobs/sha256/<2 hex>/<62 hex>``; which blobs a run references is
its ``references(view)`` function.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time as _time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from tracker.core.errors import RunNotFound
from tracker.core.format import RUN_ID_RE
from tracker.lifecycle.trash import folder_bytes, trash_path
from tracker.read.index import prune
from tracker.write.edits import edit_paths

if TYPE_CHECKING:
    from tracker.read.reader import RunView, Store

#: Blobs younger than this many seconds are never removed by gc.
BLOB_MIN_AGE = 3600.0
_BLOB_NAME = re.compile(r"[0-9a-f]{62}\Z")
_HEX2 = re.compile(r"[0-9a-f]{2}\Z")


def blob_root(store: Store | Path) -> Path:
    """``<store>/blobs/sha256``: content-addressed files, ``<2 hex>/<62 hex>``."""
    return Path(getattr(store, "path", store)) / "blobs" / "sha256"


def iter_blobs(store: Store | Path) -> Iterator[tuple[str, Path, os.stat_result]]:
    """Every blob of the store: ``(sha256, path, stat)``; temporary files are not blobs."""
    root = blob_root(store)
    try:
        fans = sorted(e.name for e in os.scandir(root) if e.is_dir() and _HEX2.match(e.name))
    except FileNotFoundError:
        return
    for fan in fans:
        try:
            entries = sorted(os.scandir(root / fan), key=lambda e: e.name)
        except FileNotFoundError:
            continue
        for e in entries:
            if _BLOB_NAME.match(e.name):
                try:
                    yield fan + e.name, Path(e.path), e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue


References = Callable[["RunView"], Iterable[str]]


def default_references() -> References | None:
    """The capture plugin's ``references(view)``, or ``None`` when this version has no blobs."""
    try:
        from tracker.capture.blobs import references
    except ImportError:
        return None
    return references


def _run_fingerprint(view: RunView) -> tuple[int, int]:
    size = count = 0
    for p in [*view.segment_paths(), *edit_paths(view.path)]:
        try:
            size += p.stat().st_size
            count += 1
        except OSError:
            continue
    return size, count


def _all_references(store: Store, refs_of: References) -> tuple[set[str], dict[str, tuple[int, int]], set[str]]:
    """Every blob referenced by the runs of the store, each run's fingerprint, the running runs."""
    refs: set[str] = set()
    prints = {}
    running = set()
    for rid in store.run_ids():
        try:
            view = store.view_class(store.path, rid, host=store._host)
            prints[rid] = _run_fingerprint(view)
            if view.info.status == "running":
                running.add(rid)
            refs.update(refs_of(view))
        except RunNotFound:
            continue  # removed meanwhile
    return refs, prints, running


@attrs.frozen(kw_only=True)
class GcReport:
    """What ``collect_garbage`` removed (or, dry, would remove)."""

    dry_run: bool
    trash_runs: list[str]
    trash_bytes: int
    blobs: int
    blob_bytes: int
    blobs_kept_young: int
    blobs_scanned: bool


def collect_garbage(store: Store, *, dry_run: bool = False, references: References | None = None,
                    min_age: float = BLOB_MIN_AGE) -> GcReport:
    """Empty the trash, then remove blobs that no run in ``runs/`` references.

    Safe while other processes log: a blob younger than ``min_age`` seconds
    is never removed, references are listed after the blobs, and the runs
    that appeared or changed meanwhile are read again before anything is
    removed; each blob's age is checked again just before it goes. A run of
    the trash is first renamed to a hidden name, then deleted, so a kill
    leaves it whole in the trash or in a hidden leftover the next gc removes.

    :param references: ``references(view) -> sha256 hex digests``; default the
        capture module's (without it, no blob is touched).
    """
    trash = trash_path(store)
    trash_runs = []
    trash_bytes = 0
    try:
        entries = sorted(os.scandir(trash / "runs"), key=lambda e: e.name)
    except FileNotFoundError:
        entries = []
    try:
        # Runs a killed gc had begun to delete: finished now.
        leftovers = sorted(Path(e.path) for e in os.scandir(trash) if e.name.startswith(".gc-") and e.is_dir())
    except FileNotFoundError:
        leftovers = []
    for e in entries:
        if not (e.is_dir(follow_symlinks=False) and RUN_ID_RE.match(e.name)):
            continue
        trash_runs.append(e.name)
        trash_bytes += folder_bytes(Path(e.path))
        if not dry_run:
            tomb = trash / f".gc-{e.name}-{secrets.token_hex(4)}"
            os.rename(e.path, tomb)
            shutil.rmtree(tomb, ignore_errors=True)
    for tomb in leftovers:
        trash_bytes += folder_bytes(tomb)
        if not dry_run:
            shutil.rmtree(tomb, ignore_errors=True)
    if not dry_run:
        # The derived columns of runs removed for good go with them.
        prune(store.path, set(store.run_ids()))

    refs_of = references if references is not None else default_references()
    if refs_of is None:
        return GcReport(dry_run=dry_run, trash_runs=trash_runs, trash_bytes=trash_bytes, blobs=0, blob_bytes=0,
                        blobs_kept_young=0, blobs_scanned=False)
    if not dry_run:
        _restore_blob_tombs(store)
    now = _time.time()
    # Blobs first, references second: a blob written after the listing is not a
    # candidate, and a record that names a listed blob is in a run listed after it.
    blobs = list(iter_blobs(store))
    refs, prints, running = _all_references(store, refs_of)
    young = sum(1 for _, _, st in blobs if now - st.st_mtime < min_age)
    candidates = [(sha, p, st) for sha, p, st in blobs if sha not in refs and now - st.st_mtime >= min_age]
    if candidates:
        # Runs that appeared, changed or were running meanwhile: read their references again.
        for rid in store.run_ids():
            if rid in prints and rid not in running:
                try:
                    view = store.view_class(store.path, rid, host=store._host)
                    if _run_fingerprint(view) == prints[rid]:
                        continue
                except RunNotFound:
                    continue
            try:
                refs.update(refs_of(store.view_class(store.path, rid, host=store._host)))
            except RunNotFound:
                continue
        candidates = [c for c in candidates if c[0] not in refs]
    removed = removed_bytes = 0
    for _sha, path, _st in candidates:
        if dry_run:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
        else:
            # Out of the way first, then judged: a blob rewritten just before the rename is young
            # and goes back under its name (the writer replaces a blob it logs again, so its time is
            # fresh); one rewritten just after it simply stays.
            tomb = path.with_name(f".gc-{path.name}-{secrets.token_hex(4)}")
            try:
                os.rename(path, tomb)
                st = os.stat(tomb)
            except FileNotFoundError:
                continue
        if _time.time() - st.st_mtime < min_age:
            young += 1
            if not dry_run:
                try:
                    os.link(tomb, path)
                except FileExistsError:
                    pass
                os.unlink(tomb)
            continue
        if not dry_run:
            os.unlink(tomb)
        removed += 1
        removed_bytes += st.st_size
    return GcReport(dry_run=dry_run, trash_runs=trash_runs, trash_bytes=trash_bytes, blobs=removed,
                    blob_bytes=removed_bytes, blobs_kept_young=young, blobs_scanned=True)


def _restore_blob_tombs(store: Store) -> None:
    """Put back blobs a killed gc had moved aside (``.gc-<name>-<hex>``) but not yet judged."""
    root = blob_root(store)
    try:
        fans = [e.path for e in os.scandir(root) if e.is_dir() and _HEX2.match(e.name)]
    except FileNotFoundError:
        return
    for fan in fans:
        for e in os.scandir(fan):
            name = e.name[4:].rpartition("-")[0]
            if e.name.startswith(".gc-") and _BLOB_NAME.match(name):
                try:
                    os.link(e.path, os.path.join(fan, name))
                except FileExistsError:
                    pass
                except OSError:
                    continue
                os.unlink(e.path)


def _index_bytes(store: Store, run_ids: Iterable[str]) -> tuple[dict[str, int], int]:
    """Bytes of ``<store>/index/`` per run (files whose path names a run id), and the rest."""
    ids = set(run_ids)
    per_run: dict[str, int] = {}
    other = 0
    root = Path(store.path) / "index"
    for folder, _dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root).parts
        for f in files:
            try:
                size = os.lstat(os.path.join(folder, f)).st_size
            except OSError:
                continue
            owner = next((p for p in (*rel, f.split(".", 1)[0]) if p in ids), None)
            if owner is None:
                other += size
            else:
                per_run[owner] = per_run.get(owner, 0) + size
    return per_run, other


def disk_usage(store: Store, *, references: References | None = None) -> dict[str, Any]:
    """Apparent bytes per run and per project, largest first, and the store's total.

    A run's bytes are its JSONL (segments and edits), the blobs it references
    (each once) and its share of the index. A blob referenced by several runs
    counts in each of them, once in each project that has it, and once in
    the total. The total is every byte of the store: runs, blobs (referenced
    or not), index, trash.
    """
    refs_of = references if references is not None else default_references()
    blob_sizes = {sha: st.st_size for sha, _, st in iter_blobs(store)}
    ids = store.run_ids()
    index, index_other = _index_bytes(store, ids)
    runs = []
    project_blobs: dict[str | None, set[str]] = {}
    referenced: set[str] = set()
    for rid in ids:
        try:
            view = store.view_class(store.path, rid, host=store._host)
            info = view.info
            refs = {r for r in refs_of(view) if r in blob_sizes} if refs_of is not None else set()
        except RunNotFound:
            continue
        jsonl = folder_bytes(view.path)
        blob_bytes = sum(blob_sizes[r] for r in refs)
        referenced |= refs
        project_blobs.setdefault(info.project, set()).update(refs)
        runs.append({"id": rid, "name": info.name, "project": info.project, "status": info.status,
                     "jsonl": jsonl, "blobs": blob_bytes, "index": index.get(rid, 0),
                     "total": jsonl + blob_bytes + index.get(rid, 0)})
    runs.sort(key=lambda r: (-r["total"], r["id"]))
    projects: dict[str | None, dict[str, Any]] = {}
    for r in runs:
        p = projects.setdefault(r["project"], {"project": r["project"], "runs": 0, "jsonl": 0, "blobs": 0,
                                               "index": 0})
        p["runs"] += 1
        p["jsonl"] += r["jsonl"]
        p["index"] += r["index"]
    for name, p in projects.items():
        p["blobs"] = sum(blob_sizes[s] for s in project_blobs.get(name, ()))
        p["total"] = p["jsonl"] + p["blobs"] + p["index"]
    project_list = sorted(projects.values(), key=lambda p: (-p["total"], str(p["project"])))
    unreferenced = {s: n for s, n in blob_sizes.items() if s not in referenced}
    trash = folder_bytes(trash_path(store))
    runs_total = sum(r["jsonl"] + r["index"] for r in runs) + sum(blob_sizes[s] for s in referenced)
    total = runs_total + sum(unreferenced.values()) + index_other + trash
    return {"runs": runs, "projects": project_list,
            "blobs": {"count": len(blob_sizes), "bytes": sum(blob_sizes.values()),
                      "unreferenced": len(unreferenced) if refs_of is not None else None,
                      "unreferenced_bytes": sum(unreferenced.values()) if refs_of is not None else None},
            "index_other": index_other, "trash": trash, "runs_total": runs_total, "total": total}
