"""``tracker index``: derive every run's columns and the run catalog ahead of time, or drop them.

The derived data itself (``<store>/index/segments/...`` and ``catalog.idx``)
is built by whichever reader needs it first (:mod:`tracker.read.index`); warming
does the same work for the whole store at once, in several processes, so that
the first look at any run is already fast. Each process builds the columns of
a share of the runs' segments (each file written under a temporary name and
renamed); the catalog is written once at the end, from them. A kill -9 at any
point leaves only whole files (and temporary ones, removed by the next run);
deleting ``index/`` changes no answer.

One ``tracker index`` runs at a time per store (``index/.lock``); a second one
waits for it. Readers never take the lock: they build what they need anyway.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import StoreError, TrackerError
from tracker.read.liveness import pid_alive

INDEX_DIR = "index"
LOCK = ".lock"
#: Chunks of work per process: small enough for a smooth progress bar and an even share.
_CHUNKS_PER_PROC = 64


@attrs.define
class IndexReport:
    """What one ``tracker index`` did.

    :ivar runs: runs in the catalog afterwards.
    :ivar segments: segments checked.
    :ivar built: segments whose columns were built or extended (the others were up to date).
    :ivar records: records of all runs.
    :ivar jsonl_bytes: bytes of the segments.
    :ivar index_bytes: bytes under ``index/`` afterwards.
    :ivar seconds: wall clock.
    :ivar messages: derived files found damaged and rebuilt (each named once).
    """

    runs: int = 0
    segments: int = 0
    built: int = 0
    records: int = 0
    jsonl_bytes: int = 0
    index_bytes: int = 0
    seconds: float = 0.0
    messages: list[str] = attrs.field(factory=list)


@contextlib.contextmanager
def index_lock(store_path: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold ``<store>/index/.lock``; when another ``tracker index`` holds it, call ``on_wait`` and wait.

    :raises TrackerError: when the index folder cannot be created (a store the user cannot write).
    """
    import fcntl

    folder = Path(store_path) / INDEX_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise TrackerError(f"cannot write the index of {store_path}: {exc.strerror or exc} "
                           "(readers still answer without it)") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


    return True


def clean_leftovers(store_path: Path) -> int:
    """Remove what a killed builder left: temporary files of dead processes, and the old Parquet layout.

    Temporary files are named ``.<file>.<pid>.<token>.tmp``; one of a live
    process (a reader building right now) is left alone. Returns files removed.
    """
    folder = Path(store_path) / INDEX_DIR
    removed = 0
    for child in list(folder.iterdir()) if folder.is_dir() else []:
        # tracker index of earlier versions: manifest.json and numbered Parquet batches.
        if child.name == "manifest.json" or (child.is_dir() and child.name.lstrip(".").split(".")[0].isdigit()):
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
            removed += 1
    for root, _dirs, files in os.walk(folder):
        for name in files:
            if not (name.startswith(".") and name.endswith(".tmp")):
                continue
            parts = name.split(".")
            try:
                pid = int(parts[-3])
            except (IndexError, ValueError):
                pid = -1
            if pid > 0 and pid != os.getpid() and pid_alive(pid, None):
                continue
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, name))
                removed += 1
    return removed


def _orphans(store_path: Path, run_ids: set[str]) -> None:
    """Remove the derived columns of runs and segments that are gone (removed, moved to the trash)."""
    seg_root = Path(store_path) / INDEX_DIR / "segments"
    if not seg_root.is_dir():
        return
    for d in seg_root.iterdir():
        if d.name not in run_ids:
            shutil.rmtree(d, ignore_errors=True)
            continue
        run_dir = Path(store_path) / "runs" / d.name
        for f in d.glob("*.idx"):
            if not (run_dir / f.name[:-len(".idx")]).exists():
                f.unlink(missing_ok=True)


def _warm_chunk(args: tuple[str, list[tuple[str, list[str]]]]) -> tuple[int, int, list[str]]:
    """Build the columns of some runs' segments; returns (segments, bytes, messages)."""
    from tracker.read.index import Writable, load_segment

    store, runs = args
    store_path = Path(store)
    writable = Writable()
    messages: list[str] = []
    segments = done = 0
    for rid, paths in runs:
        for p in paths:
            path = Path(p)
            try:
                size = path.stat().st_size
                ix = load_segment(store_path, rid, path, set(), writable, messages.append)
            except (StoreError, OSError) as exc:
                messages.append(f"{p}: {exc}")
                continue
            del ix  # built and saved; its columns are not kept
            segments += 1
            done += size
    return segments, done, messages


def plan_work(store: Any) -> tuple[list[tuple[str, list[str], int]], int]:
    """Every run's ``(id, segment paths, bytes)``, and the bytes of all segments (the progress bar's total)."""
    from tracker.read.segment import segment_paths

    runs = []
    total = 0
    for rid in store.run_ids():
        paths = segment_paths(store.path / "runs" / rid)
        size = 0
        for p in paths:
            with contextlib.suppress(OSError):
                size += p.stat().st_size
        runs.append((rid, [str(p) for p in paths], size))
        total += size
    return runs, total


def _chunks(store_path: Path, runs: list[tuple[str, list[str], int]], total: int,
            n: int) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    target = max(1, total // max(1, n))
    out, cur, size = [], [], 0
    for rid, paths, s in runs:
        cur.append((rid, paths))
        size += s
        if size >= target:
            out.append((str(store_path), cur))
            cur, size = [], 0
    if cur:
        out.append((str(store_path), cur))
    return out


def _index_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, name)).st_size
    return total


def _unbuilt(store_path: Path, runs: list[tuple[str, list[str], int]]) -> int:
    """Segments with no derived file yet, or one covering less than the segment (before warming)."""
    from tracker.read.index import index_file

    n = 0
    for rid, paths, _ in runs:
        for p in paths:
            f = index_file(store_path, rid, Path(p))
            try:
                if f.stat().st_mtime_ns < Path(p).stat().st_mtime_ns:
                    n += 1
            except OSError:
                n += 1
    return n


def warm(store: Any, *, procs: int | None = None, progress: Callable[[int], None] | None = None,
         on_wait: Callable[[], None] | None = None) -> IndexReport:
    """Build every segment's columns and the run catalog of a folder store.

    :param procs: worker processes (default: the CPUs this process may use).
    :param progress: called with the bytes of segments done, as they are done.
    :param on_wait: called once when another ``tracker index`` holds the store's lock (this one then waits).
    """
    t0 = time.perf_counter()
    rep = IndexReport()
    store_path = Path(store.path)
    with index_lock(store_path, on_wait):
        clean_leftovers(store_path)
        runs, total = plan_work(store)
        _orphans(store_path, {rid for rid, _, _ in runs})
        rep.jsonl_bytes = total
        rep.built = _unbuilt(store_path, runs)
        if procs is None:
            procs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        procs = max(1, min(procs, len(runs)))
        chunks = _chunks(store_path, runs, total, procs * _CHUNKS_PER_PROC)
        if procs > 1 and len(chunks) > 1:
            ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
            with ctx.Pool(procs) as pool:
                for res in pool.imap_unordered(_warm_chunk, chunks):
                    _take(rep, res, progress)
        else:
            for chunk in chunks:
                _take(rep, _warm_chunk(chunk), progress)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            entries = store.catalog()
        rep.messages += [str(w.message) for w in caught if "derived data not used" in str(w.message)
                         or "is not listed" in str(w.message)]
        rep.runs = len(entries)
        rep.records = sum(sum(e.schemas.values()) for e in entries)
        rep.index_bytes = _index_bytes(store_path / INDEX_DIR)
    rep.seconds = time.perf_counter() - t0
    return rep


def _take(rep: IndexReport, res: tuple[int, int, list[str]], progress: Callable[[int], None] | None) -> None:
    segments, done, messages = res
    rep.segments += segments
    rep.messages += messages
    if progress is not None:
        progress(done)


def drop(store: Any, on_wait: Callable[[], None] | None = None) -> int:
    """Remove the store's derived data (the ``index/`` folder stays, with its lock); returns bytes freed."""
    store_path = Path(store.path)
    folder = store_path / INDEX_DIR
    if not folder.is_dir():
        return 0
    freed = 0
    with index_lock(store_path, on_wait):
        for child in folder.iterdir():
            if child.name == LOCK:
                continue
            freed += _index_bytes(child) if child.is_dir() else child.stat().st_size
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
    return freed


__all__ = ["INDEX_DIR", "IndexReport", "clean_leftovers", "drop", "index_lock", "plan_work", "warm"]
