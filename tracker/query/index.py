"""The Parquet index: a derived, rebuildable columnar copy of runs that no longer run.

Layout, inside the store (``tracker du`` counts it)::

    <store>/index/
      manifest.json        which runs are indexed, in which batch, from which segments
      000001/records.parquet  metrics.parquet   one batch per ``tracker index`` that found work
      .lock                 held while indexing

A run is indexed with the fingerprint of its segments (name, size and
modification time of each ``.jsonl`` file). Queries use a run's indexed rows
only while that fingerprint still holds; a run appended to or resumed since is
read from its JSONL until the next ``tracker index``. Its cached info (name,
tags, notes, config, summary) is used only while the fingerprint of its edit
segments (``<run>/edits/edits-*.jsonl``) also holds; after ``tracker
tag/rename/note`` or a config/summary update the info is derived again from
the run (its indexed rows stay valid: edits change no record). The JSONL stay
the source of truth: deleting the index folder changes no answer.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson

from ..errors import TrackerError
from ..format import decode_nonfinite, encode_nonfinite
from ..records import RunInfo
from .sql import Catalog, Sources, literal, report, scan_segment

INDEX_DIR = "index"
LAYOUT = 1
#: RunInfo fields kept in the manifest, so that listing indexed runs reads no segment.
_INFO_FIELDS = tuple(f.name for f in attrs.fields(RunInfo))


def fingerprint(run_dir: Path) -> list[list[Any]] | None:
    """``[[name, size, mtime_ns], ...]`` of a run's segments, sorted; ``None`` when the run is gone."""
    out = []
    try:
        with os.scandir(run_dir) as it:
            for e in it:
                if e.name.endswith(".jsonl") and not e.name.startswith("."):
                    st = e.stat()
                    out.append([e.name, st.st_size, st.st_mtime_ns])
    except OSError:
        return None
    out.sort()
    return out


def edits_fingerprint(run_dir: Path) -> list[list[Any]]:
    """``[[name, size, mtime_ns], ...]`` of a run's edit segments, sorted (empty when it has none)."""
    from ..lifecycle.edits import edit_paths

    out = []
    for path in edit_paths(run_dir):
        try:
            st = path.stat()
        except OSError:
            continue
        out.append([path.name, st.st_size, st.st_mtime_ns])
    return out


@attrs.define
class IndexReport:
    """What one ``tracker index`` did.

    :ivar indexed: runs indexed by this call.
    :ivar skipped_running: runs left out because they still run.
    :ivar total_runs: runs in the index after it.
    :ivar records: records in the index (all runs).
    :ivar jsonl_bytes: bytes of the indexed runs' JSONL segments.
    :ivar parquet_bytes: bytes of the index's Parquet files.
    """

    indexed: int = 0
    skipped_running: int = 0
    removed: int = 0
    total_runs: int = 0
    records: int = 0
    jsonl_bytes: int = 0
    parquet_bytes: int = 0
    seconds: float = 0.0

    def per_record(self) -> tuple[float | None, float | None]:
        """Bytes per record: (JSONL, Parquet)."""
        if not self.records:
            return None, None
        return self.jsonl_bytes / self.records, self.parquet_bytes / self.records


@attrs.define
class IndexSnapshot:
    """The indexed rows a query may use: per batch, its files and the runs still fresh in it."""

    folder: Path
    live: dict[str, list[str]]  # batch -> fresh run ids
    complete: set[str]  # batches every run of which is fresh

    def prepare(self, con: Any) -> None:
        """Create the table of fresh indexed runs the views filter on."""
        rows = [(rid, batch) for batch, ids in self.live.items() if batch not in self.complete for rid in ids]
        con.execute("CREATE TEMP TABLE _index_live (run_id VARCHAR, batch VARCHAR)")
        if rows:
            con.executemany("INSERT INTO _index_live VALUES (?, ?)", rows)

    def select(self, view: str) -> str:
        """SQL reading the ``records`` or ``metrics`` rows of fresh indexed runs."""
        cols = ("run_id, schema, step, time, writer, seq, data" if view == "records"
                else "run_id, step, time, name, value")
        parts = []
        whole = [str(self.folder / b / f"{view}.parquet") for b in sorted(self.complete)]
        if whole:
            parts.append(f"SELECT {cols} FROM read_parquet([{', '.join(literal(p) for p in whole)}])")
        partial = [b for b in sorted(self.live) if b not in self.complete]
        if partial:
            files = ", ".join(literal(str(self.folder / b / f"{view}.parquet")) for b in partial)
            parts.append(f"SELECT {cols} FROM read_parquet([{files}]) WHERE (run_id, batch) IN "
                         "(SELECT run_id, batch FROM _index_live)")
        return " UNION ALL ".join(parts)


class Index:
    """The index folder of a store, as its manifest describes it."""

    def __init__(self, store_path: Path) -> None:
        self.folder = Path(store_path) / INDEX_DIR
        self.manifest_path = self.folder / "manifest.json"
        self.manifest = self._load()

    def _load(self) -> dict[str, Any]:
        try:
            doc = orjson.loads(self.manifest_path.read_bytes())
        except FileNotFoundError:
            return {"layout": LAYOUT, "runs": {}, "batches": {}}
        except (OSError, orjson.JSONDecodeError) as exc:
            raise TrackerError(f"{self.manifest_path}: unreadable index manifest ({exc}); "
                               "remove the index folder and run `tracker index` again") from None
        if not isinstance(doc, dict) or doc.get("layout") != LAYOUT:
            raise TrackerError(f"{self.manifest_path}: index layout {doc.get('layout')!r}, this tracker reads "
                               f"layout {LAYOUT}; remove the index folder and run `tracker index` again")
        return doc

    @property
    def runs(self) -> dict[str, Any]:
        """run id -> {"batch", "fp", "efp", "info"} (``efp``: the edits' fingerprint of ``info``)."""
        return self.manifest["runs"]

    def fresh_runs(self, store: Any) -> dict[str, RunInfo]:
        """Indexed runs whose segments are unchanged, with their info as the reader derived it."""
        out = {}
        same_info = self.manifest.get("info_fields") == list(_INFO_FIELDS)
        runs_dir = Path(store.path) / "runs"
        for rid, entry in self.runs.items():
            fp = fingerprint(runs_dir / rid)
            if fp is None or fp != entry["fp"]:
                continue
            if not all((self.folder / entry["batch"] / f).exists() for f in ("records.parquet", "metrics.parquet")):
                continue
            if same_info and entry.get("efp") == edits_fingerprint(runs_dir / rid):
                info = dict(entry["info"])
                info["last_metrics"] = decode_nonfinite(info.get("last_metrics") or {})
                out[rid] = RunInfo(**info)
            else:
                from ..store import RunView

                out[rid] = RunView(store.path, rid, host=getattr(store, "_host", None)).info
        return out

    def snapshot(self, fresh: set[str]) -> IndexSnapshot:
        """The rows of the ``fresh`` runs."""
        live: dict[str, list[str]] = {}
        for rid in fresh:
            live.setdefault(self.runs[rid]["batch"], []).append(rid)
        complete = {b for b, ids in live.items()
                    if len(ids) == len(self.manifest["batches"].get(b, {}).get("runs", ()))}
        return IndexSnapshot(self.folder, live, complete)

    def save(self) -> None:
        """Write the manifest atomically (a temporary file renamed over it)."""
        self.manifest["info_fields"] = list(_INFO_FIELDS)
        tmp = self.manifest_path.with_name(f".manifest-{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps(self.manifest))
        os.replace(tmp, self.manifest_path)


def open_index(store_path: Path) -> Index | None:
    """The store's index, or ``None`` when it has none (or it cannot be used: then a warning says why)."""
    if not (Path(store_path) / INDEX_DIR / "manifest.json").exists():
        return None
    try:
        return Index(store_path)
    except TrackerError as exc:
        import warnings

        from ..bus import TrackerWarning

        warnings.warn(f"tracker: index not used: {exc}", TrackerWarning, stacklevel=3)
        return None


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TrackerError(f"{folder}: another `tracker index` is running on this store") from None
        yield
    finally:
        os.close(fd)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def build_index(store: Any, *, rebuild: bool = False) -> IndexReport:
    """Index every run that no longer runs and is not indexed as it is now.

    Incremental: a run already indexed with unchanged segments is left alone;
    one that changed is indexed again (its old rows are no longer used).

    :param rebuild: drop the index and index every run again.
    :raises TrackerError: when the store cannot be read or another index runs.
    """
    from ..store import RunView

    t0 = time.perf_counter()
    store_path = Path(store.path)
    folder = store_path / INDEX_DIR
    report_ = IndexReport()
    with _locked(folder):
        if rebuild:
            for child in folder.iterdir():
                if child.name != ".lock":
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
        idx = Index(store_path)
        runs = idx.runs
        ids = store.run_ids()
        present = set(ids)
        for rid in [r for r in runs if r not in present]:
            del runs[rid]
            report_.removed += 1
        todo: list[tuple[str, RunInfo, list, list]] = []
        host = getattr(store, "_host", None)
        for rid in ids:
            fp = fingerprint(store_path / "runs" / rid)
            if fp is None:
                continue
            efp = edits_fingerprint(store_path / "runs" / rid)  # before the info: an edit after it shows next time
            entry = runs.get(rid)
            if entry is not None and entry["fp"] == fp and not rebuild:
                if entry.get("efp") != efp:  # edited since: same rows, new info
                    info = RunView(store_path, rid, host=host).info
                    entry["info"] = encode_nonfinite({k: getattr(info, k) for k in _INFO_FIELDS})
                    entry["efp"] = efp
                continue
            info = RunView(store_path, rid, host=host).info
            if info.status == "running":
                report_.skipped_running += 1
                continue
            todo.append((rid, info, fp, efp))
        if todo:
            batch = f"{int(idx.manifest.get('next_batch', 1)):06d}"
            idx.manifest["next_batch"] = int(batch) + 1
            written = _write_batch(folder, batch, store_path, todo)
            done = []
            for rid, info, fp, efp in todo:
                if fingerprint(store_path / "runs" / rid) != fp:
                    continue  # appended to while indexing: read from the JSONL until next time
                runs[rid] = {"batch": batch, "fp": fp, "efp": efp, "records": written.get(rid, 0),
                             "info": encode_nonfinite({k: getattr(info, k) for k in _INFO_FIELDS})}
                done.append(rid)
            idx.manifest["batches"][batch] = {"runs": done}
            report_.indexed = len(done)
        live = {e["batch"] for e in runs.values()}
        for b in list(idx.manifest["batches"]):
            if b not in live:
                del idx.manifest["batches"][b]
        idx.save()
        for child in folder.iterdir():
            if child.is_dir() and child.name not in live:
                shutil.rmtree(child, ignore_errors=True)
        report_.total_runs = len(runs)
        for b in live:
            report_.parquet_bytes += sum(_size(folder / b / f) for f in ("records.parquet", "metrics.parquet"))
        for entry in runs.values():
            report_.jsonl_bytes += sum(size for _, size, _ in entry["fp"])
            report_.records += int(entry.get("records", 0))
    report_.seconds = time.perf_counter() - t0
    return report_


def _write_batch(folder: Path, batch: str, store_path: Path,
                 todo: list[tuple[str, RunInfo, list, list]]) -> dict[str, int]:
    """Write one batch's Parquet files (under a temporary name, renamed when complete)."""
    files, copies, names, problems = [], [], {}, []
    for rid, _info, fp, _efp in todo:
        for name, _, _ in fp:
            scan = scan_segment(rid, store_path / "runs" / rid / name, quiet_tail=False)
            problems += scan.problems
            names.update(scan.metric_names)
            if scan.sound is None:
                files.append(str(scan.path))
            else:
                copies.append((rid, scan.sound))
    report(problems)
    cat = Catalog(Sources([], files, copies, names), host=None, needed={"records", "metrics"})
    tmp = folder / f".{batch}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    opts = "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)"
    b = literal(batch)
    cat.con.execute(f"COPY (SELECT *, {b} AS batch FROM records) TO {literal(str(tmp / 'records.parquet'))} {opts}")
    cat.con.execute(f"COPY (SELECT *, {b} AS batch FROM metrics) TO {literal(str(tmp / 'metrics.parquet'))} {opts}")
    counts = cat.con.execute(f"SELECT run_id, count(*) FROM read_parquet({literal(str(tmp / 'records.parquet'))}) "
                             "GROUP BY run_id").fetchall()
    cat.con.close()
    os.replace(tmp, folder / batch)
    return {rid: int(n) for rid, n in counts}


__all__ = ["INDEX_DIR", "Index", "IndexReport", "IndexSnapshot", "build_index", "edits_fingerprint", "fingerprint",
           "open_index"]
