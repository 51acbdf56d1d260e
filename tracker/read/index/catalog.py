"""The run catalog: per run its info, per-metric figures and records per schema, in one file.

``<store>/index/catalog.idx`` holds one entry per run with what it was
derived from: the run folder's and its ``edits/`` folder's inode and
modification time (a segment added, removed or renamed changes them), and
per segment and edit file its inode, size and modification time, with the
segment's covered offset and the CRC-32 of its last covered line.

An entry is used while all of these still hold. File systems stamp times
from a clock that ticks coarsely (milliseconds, two seconds on FAT), so a
file changed again within a tick of being read keeps its time: an entry
whose newest file time lies within :data:`SETTLE_NS` of the moment it was
derived is *unsettled*, and is checked by content too (the folder's segment
names, each segment's last covered line) until a listing finds it settled.
A running run's status is derived again at every listing (its writer may
have died). Anything else is derived again from the segments
(:mod:`tracker.read.index.segments`) and the file rewritten under a temporary name.

The file is columnar, so that a listing parses one short JSON text per run:
the ids and file names in the header, the integers in typed arrays, each
run's info, per-metric figures and artifact figures (what it logged and used,
its alias edits: :mod:`tracker.read.registry`) as JSON texts in three byte
arrays (the figures parsed only when asked for).
"""

from __future__ import annotations

import os
import sys
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from tracker.core.format import (
    NONFINITE_MARKS,
    SEGMENT_SUFFIX,
    decode_nonfinite,
    encode_nonfinite,
    nonfinite_paths,
    restore_nonfinite,
)
from tracker.core.records import RUNINFO_FIELDS, RunInfo, run_info_from_values, run_info_values
from tracker.read.edits import EDITS_FOLDER, EDITS_PREFIX
from tracker.read.index import container
from tracker.read.index.build import gc_paused
from tracker.read.index.segments import INDEX_DIR, Writable, _last_line_crc

LAYOUT = 5  # 5: the artifact figures
CATALOG = "catalog.idx"
#: How long after an entry was derived its files' times must lie for a change to move them.
SETTLE_NS = 3_000_000_000

# Per-run flags.
_SETTLED, _RECHECK, _FINITE = 1, 2, 4
# The typed arrays: per run, per segment, per edit file.
_RUN_COLS = (("run_ino", "Q"), ("run_mtime", "q"), ("edits_ino", "Q"), ("edits_mtime", "q"), ("newest", "q"),
             ("flags", "Q"))
_SEG_COLS = (("seg_ino", "Q"), ("seg_size", "Q"), ("seg_mtime", "q"), ("seg_offset", "Q"), ("seg_last_start", "Q"),
             ("seg_last_crc", "q"))
_EDIT_COLS = (("edit_ino", "Q"), ("edit_size", "Q"), ("edit_mtime", "q"))


class CatalogEntry:
    """What the catalog knows of one run.

    :ivar info: the run's :class:`~tracker.RunInfo`.
    :ivar metrics: per metric ``count``, ``first``, ``first_step``, ``last``, ``last_step``,
        ``min``, ``min_step``, ``max``, ``max_step`` (see :meth:`tracker.RunView.metric_stats`);
        parsed on first access, since a listing of runs never needs them.
    :ivar schemas: records per schema.
    :ivar finite: whether the info holds no NaN or infinity (an encoder can then take it as it is).
    :ivar artifacts: the run's artifact figures (:func:`tracker.read.registry.figures`), ``None``
        when it logged and used none; parsed on first access.
    """

    __slots__ = ("info", "_metrics", "_raw", "schemas", "_finite", "_artifacts", "_raw_artifacts")

    def __init__(self, info: RunInfo, metrics: dict[str, dict[str, Any]] | None, schemas: dict[str, int],
                 raw: bytes | None = None, finite: bool | None = None, artifacts: dict[str, Any] | None = None,
                 raw_artifacts: bytes | None = None) -> None:
        self.info = info
        self._metrics = metrics
        self._raw = raw
        self.schemas = schemas
        self._finite = finite
        self._artifacts = artifacts
        self._raw_artifacts = raw_artifacts

    @property
    def artifacts(self) -> dict[str, Any] | None:
        if self._artifacts is None and self._raw_artifacts:
            self._artifacts = orjson.loads(self._raw_artifacts)
            self._raw_artifacts = None
        return self._artifacts

    def artifacts_text(self) -> bytes:
        """The artifact figures as the file keeps them (``b""``: none)."""
        if self._raw_artifacts is not None:
            return self._raw_artifacts
        return orjson.dumps(self._artifacts) if self._artifacts else b""

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        if self._metrics is None:
            raw = self._raw
            figures = orjson.loads(raw) if raw else {}
            if raw and (NONFINITE_MARKS[0] in raw or NONFINITE_MARKS[1] in raw):
                figures = decode_nonfinite(figures)
            self._metrics = figures
        return self._metrics

    def peek_metrics(self) -> dict[str, dict[str, Any]]:
        """The per-metric figures, parsed without being kept (a sort over 100,000 runs reads each once)."""
        if self._metrics is not None or not self._raw:
            return self.metrics
        raw = self._raw
        figures = orjson.loads(raw)
        return decode_nonfinite(figures) if NONFINITE_MARKS[0] in raw or NONFINITE_MARKS[1] in raw else figures

    @property
    def finite(self) -> bool:
        if self._finite is None:
            self._finite = not nonfinite_paths(run_info_values(self.info))
        return self._finite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CatalogEntry) and (self.info, self.metrics, self.schemas, self.artifacts) == \
            (other.info, other.metrics, other.schemas, other.artifacts)

    def __repr__(self) -> str:
        return (f"CatalogEntry(info={self.info!r}, metrics={self.metrics!r}, schemas={self.schemas!r}, "
                f"artifacts={self.artifacts!r})")


def catalog_file(store: Path) -> Path:
    return store / INDEX_DIR / CATALOG


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_mtime_ns]


def folder_state(run_dir: Path | str) -> tuple[list[int], list[int] | None]:
    """The run folder's and its ``edits/`` folder's ``[inode, mtime_ns]`` (``None``: no edits folder)."""
    st = os.stat(run_dir)
    try:
        est: list[int] | None = _stat_key(os.stat(f"{run_dir}/{EDITS_FOLDER}"))
    except FileNotFoundError:
        est = None
    return _stat_key(st), est


class Kept:
    """One run's entry as the file holds it: names, integers and the two JSON texts.

    ``segs`` rows are ``[inode, size, mtime_ns, offset, last_start, last_crc]``,
    ``edits`` rows ``[inode, size, mtime_ns]``; ``run`` is ``[inode, mtime_ns,
    edits inode (0: no edits folder), edits mtime_ns, newest mtime_ns, flags]``.
    """

    __slots__ = ("id", "seg_names", "edit_names", "run", "segs", "edits", "info", "metrics", "artifacts", "created")

    def __init__(self, run_id: str, seg_names: list[str], edit_names: list[str], run: list[int],
                 segs: list[list[int]], edits: list[list[int]], info: bytes, metrics: bytes,
                 artifacts: bytes = b"", created: float | None = None) -> None:
        self.id = run_id
        self.seg_names, self.edit_names = seg_names, edit_names
        self.run, self.segs, self.edits = run, segs, edits
        self.info, self.metrics, self.artifacts = info, metrics, artifacts
        #: the run's ``created_at`` (``None``: unknown), kept as a column so that the newest runs are found
        #: without parsing every run's info (:class:`Newest`)
        self.created = created


def encode_info(info: RunInfo, schemas: dict[str, int]) -> tuple[bytes, bool]:
    """The JSON text of an entry's info (its field values in order) and schema counts, and whether
    the info is finite."""
    values = run_info_values(info)
    nf = nonfinite_paths(values)
    return orjson.dumps([encode_nonfinite(values) if nf else values, nf, schemas]), not nf


def encode_entry(run_id: str, entry: CatalogEntry, state: dict[str, Any]) -> Kept:
    """A derived entry as the file keeps it, with the facts it was derived from (``state``)."""
    info, finite = encode_info(entry.info, entry.schemas)
    segs = [list(v) for v in state["segs"].values()]
    edits = [list(v) for v in state["edits"].values()]
    folder, edits_folder = state["dir"], state["edits_dir"]
    times = [folder[1], *(s[2] for s in segs), *(e[2] for e in edits)]
    if edits_folder is not None:
        times.append(edits_folder[1])
    newest = max(times)
    flags = (_SETTLED if newest <= state["derived_ns"] - SETTLE_NS else 0) | \
        (_RECHECK if state["recheck"] else 0) | (_FINITE if finite else 0)
    run = [folder[0], folder[1], *(edits_folder if edits_folder is not None else (0, 0)), newest, flags]
    metrics = orjson.dumps(encode_nonfinite(entry.metrics))
    return Kept(run_id, list(state["segs"]), list(state["edits"]), run, segs, edits, info, metrics,
                entry.artifacts_text(), entry.info.created_at)


def decode_info(text: bytes, metrics: bytes, artifacts: bytes = b"") -> CatalogEntry:
    """The entry of an info text and a figures text (raises on anything malformed: the caller
    derives it again)."""
    values, nf, schemas = orjson.loads(text)
    if nf:
        restore_nonfinite(values, nf)
    return CatalogEntry(run_info_from_values(values), None, schemas, raw=metrics, finite=not nf,
                        raw_artifacts=artifacts or None)


HOLDS, SETTLES = 1, 2


class Table:
    """The catalog file as read: its columns, each run's entry built only when asked for."""

    def __init__(self, runs: list[list[Any]], rc: list[list[int]], sc: list[list[int]], ec: list[list[int]],
                 info: bytes, info_at: list[int], metrics: bytes, metrics_at: list[int], artifacts: bytes,
                 artifacts_at: list[int], created: list[float] | None = None) -> None:
        self.runs = runs
        self.created = created if created is not None and len(created) == len(runs) else None
        #: where the file read put its arrays (set by :func:`load`): what :mod:`.runtable` describes
        self.placed: container.Placed | None = None
        self.rc, self.sc, self.ec = rc, sc, ec
        self.info, self.info_at = info, info_at
        self.metrics, self.metrics_at = metrics, metrics_at
        self.artifacts, self.artifacts_at = artifacts, artifacts_at
        from itertools import accumulate

        self.at: dict[str, int] = dict(zip([r[0] for r in runs], range(len(runs)), strict=True))
        #: Where each run's rows start in the segment and edit columns.
        self.seg_at: list[int] = list(accumulate((len(r[1]) for r in runs), initial=0))
        self.edit_at: list[int] = list(accumulate((len(r[2]) for r in runs), initial=0))
        s, e = self.seg_at.pop(), self.edit_at.pop()
        if s > len(sc[0]) or e > len(ec[0]):
            raise ValueError("more files named than the columns hold")

    def check(self, i: int, run_dir: str, now_ns: int) -> int:
        """``0`` when run ``i``'s files changed since its entry was derived, else :data:`HOLDS`, or
        :data:`SETTLES` for an unsettled entry that held and may now be marked settled."""
        rc, sc = self.rc, self.sc
        _, seg_names, edit_names = self.runs[i]
        try:
            st = os.stat(run_dir)
            if st.st_ino != rc[0][i] or st.st_mtime_ns != rc[1][i]:
                return 0
            # An edits folder created since changed the run folder's time; one that was there is checked.
            if rc[2][i]:
                st = os.stat(f"{run_dir}/{EDITS_FOLDER}")
                if st.st_ino != rc[2][i] or st.st_mtime_ns != rc[3][i]:
                    return 0
            if not _files_hold(run_dir, seg_names, sc, self.seg_at[i]) or \
                    not _files_hold(f"{run_dir}/{EDITS_FOLDER}", edit_names, self.ec, self.edit_at[i]):
                return 0
            if rc[5][i] & _SETTLED:
                return HOLDS
            # Within a clock tick of being read: what a change may have left the times as they were.
            # (Names are compared as segment_paths and edit_paths would list them; a file of such a
            # name that is not a regular file makes the entry stale, and deriving it again decides.)
            names = os.listdir(run_dir)
            if sorted(n for n in names if n.endswith(SEGMENT_SUFFIX) and n[0] != ".") != seg_names:
                return 0
            if rc[2][i]:
                edits = os.listdir(f"{run_dir}/{EDITS_FOLDER}")
                if sorted(n for n in edits if n.startswith(EDITS_PREFIX) and n.endswith(SEGMENT_SUFFIX)) \
                        != edit_names:
                    return 0
            elif EDITS_FOLDER in names:
                return 0
            j = self.seg_at[i]
            for name in seg_names:
                if sc[3][j]:
                    fd = os.open(f"{run_dir}/{name}", os.O_RDONLY)
                    try:
                        if _last_line_crc(fd, sc[4][j], sc[3][j]) != sc[5][j]:
                            return 0
                    finally:
                        os.close(fd)
                j += 1
            return SETTLES if rc[4][i] <= now_ns - SETTLE_NS else HOLDS
        except (OSError, IndexError, TypeError, ValueError):
            return 0

    def entry(self, i: int) -> CatalogEntry:
        at, mat, aat = self.info_at, self.metrics_at, self.artifacts_at
        return decode_info(self.info[at[i]:at[i + 1]], self.metrics[mat[i]:mat[i + 1]],
                           self.artifacts[aat[i]:aat[i + 1]])

    def artifacts_of(self, i: int) -> bytes:
        """Run ``i``'s artifact figures as the file keeps them (``b""``: none), without its info."""
        aat = self.artifacts_at
        return self.artifacts[aat[i]:aat[i + 1]]

    def kept(self, i: int) -> Kept:
        """Run ``i``'s entry as :func:`save` takes it."""
        rid, seg_names, edit_names = self.runs[i]
        s, e = self.seg_at[i], self.edit_at[i]
        segs = [list(row) for row in zip(*(c[s:s + len(seg_names)] for c in self.sc), strict=True)]
        edits = [list(row) for row in zip(*(c[e:e + len(edit_names)] for c in self.ec), strict=True)]
        at, mat = self.info_at, self.metrics_at
        return Kept(rid, seg_names, edit_names, [c[i] for c in self.rc], segs, edits,
                    self.info[at[i]:at[i + 1]], self.metrics[mat[i]:mat[i + 1]], self.artifacts_of(i),
                    self._created(i))

    def _created(self, i: int) -> float | None:
        if self.created is not None:
            c = self.created[i]
            return None if c == float("inf") else c
        return self.entry(i).info.created_at


def _files_hold(folder: str, names: list[str], cols: list[list[int]], start: int) -> bool:
    """Whether the files ``names`` of ``folder`` have the inode, size and time of rows ``start...``
    of ``cols`` (whose first three columns are those).

    :raises OSError: a file that is gone or cannot be read.
    """
    ino, size, mtime = cols[0], cols[1], cols[2]
    for j, name in enumerate(names, start):
        st = os.stat(f"{folder}/{name}")
        if st.st_ino != ino[j] or st.st_size != size[j] or st.st_mtime_ns != mtime[j]:
            return False
    return True


def _ints(reader: container.Reader, key: str, code: str) -> list[int]:
    return memoryview(reader.read(key)).cast(code).tolist()


def load(store: Path) -> Table | None:
    """The catalog as read; ``None`` when it is missing, damaged or of another layout."""
    try:
        with container.Reader(catalog_file(store)) as reader:
            h = reader.header
            runs = h.get("runs")
            if h.get("layout") != LAYOUT or h.get("order") != sys.byteorder or \
                    h.get("fields") != list(RUNINFO_FIELDS) or type(runs) is not list:
                return None
            rc = [_ints(reader, k, c) for k, c in _RUN_COLS]
            sc = [_ints(reader, k, c) for k, c in _SEG_COLS]
            ec = [_ints(reader, k, c) for k, c in _EDIT_COLS]
            info, info_at = bytes(reader.read("info")), _ints(reader, "info_at", "Q")
            metrics, metrics_at = bytes(reader.read("metrics")), _ints(reader, "metrics_at", "Q")
            artifacts, artifacts_at = bytes(reader.read("artifacts")), _ints(reader, "artifacts_at", "Q")
            created = memoryview(reader.read("created")).cast("d").tolist() if reader.has("created") else None
        n = len(runs)
        if any(len(c) != n for c in rc) or len(info_at) != n + 1 or len(metrics_at) != n + 1 or \
                len(artifacts_at) != n + 1 or \
                any(len(c) != len(sc[0]) for c in sc) or any(len(c) != len(ec[0]) for c in ec):
            return None
        table = Table(runs, rc, sc, ec, info, info_at, metrics, metrics_at, artifacts, artifacts_at, created)
        table.placed = container.Placed(reader.identity, reader.base,
                                        {k: (v[0], v[1]) for k, v in reader.arrays.items()})
        return table
    except (OSError, container.Damaged, KeyError, TypeError, ValueError):
        return None


def peek_artifacts(store: Path, needle: bytes) -> dict[str, dict[str, Any]]:
    """The artifact figures of the runs whose figures mention ``needle`` (a JSON string, say a name), as
    the catalog file holds them: nothing checked against the runs' files, nothing derived or written.

    For a writing process that wants a hint of what a name holds (its type, its versions' sizes)
    without reading the store as a reader does; runs added since the last reader are not there.
    """
    from bisect import bisect_right

    try:
        with container.Reader(catalog_file(store)) as reader:
            h = reader.header
            runs = h.get("runs")
            if h.get("layout") != LAYOUT or type(runs) is not list:
                return {}
            blob = bytes(reader.read("artifacts"))
            at = _ints(reader, "artifacts_at", "Q")
    except (OSError, container.Damaged, KeyError, TypeError, ValueError):
        return {}
    out: dict[str, dict[str, Any]] = {}
    pos = blob.find(needle)
    while pos >= 0:
        i = bisect_right(at, pos) - 1
        if 0 <= i < len(runs):
            try:
                out[runs[i][0]] = orjson.loads(blob[at[i]:at[i + 1]])
            except (orjson.JSONDecodeError, IndexError, TypeError):
                pass
            pos = blob.find(needle, at[i + 1] if i + 1 < len(at) else len(blob))
        else:
            break
    return out


def save(store: Path, kept: list[Kept], writable: Writable) -> container.Placed | None:
    """Write the catalog (temporary name, then rename), when the store can be written; where it put its arrays
    (``None``: not written)."""
    placed: list[container.Placed] = []

    def write() -> None:
        arrays: dict[str, Any] = {}
        for j, (key, code) in enumerate(_RUN_COLS):
            arrays[key] = array(code, [k.run[j] for k in kept])
        for j, (key, code) in enumerate(_SEG_COLS):
            arrays[key] = array(code, [s[j] for k in kept for s in k.segs])
        for j, (key, code) in enumerate(_EDIT_COLS):
            arrays[key] = array(code, [x[j] for k in kept for x in k.edits])
        # Start times (a run without one: +inf), so that the newest runs are found by one float sort.
        inf = float("inf")
        arrays["created"] = array("d", [inf if k.created is None else k.created for k in kept])
        for key in ("info", "metrics", "artifacts"):
            at = [0]
            for k in kept:
                at.append(at[-1] + len(getattr(k, key)))
            arrays[key] = b"".join(getattr(k, key) for k in kept)
            arrays[f"{key}_at"] = array("Q", at)
        header = {"layout": LAYOUT, "order": sys.byteorder, "fields": list(RUNINFO_FIELDS),
                  "runs": [[k.id, k.seg_names, k.edit_names] for k in kept]}
        placed.append(container.write(catalog_file(store), header, arrays))

    writable.attempt(write)
    return placed[0] if placed else None


def entries(store: Path, run_ids: list[str], derive: Callable[[str], tuple[CatalogEntry, dict[str, Any]]],
            refresh_running: Callable[[str, CatalogEntry], CatalogEntry], writable: Writable,
            on_error: Callable[[str, Exception], None],
            prepare: Callable[[list[str]], None] | None = None,
            describe: Callable[[container.Placed | None, Table | None, list[Kept] | None], None] | None = None
            ) -> list[CatalogEntry]:
    """The catalog entries of ``run_ids``: kept ones that still hold, the others derived again.

    :param derive: gives a run's entry and the state it was derived from (``dir``, ``edits_dir``,
        ``segs``, ``edits``, ``recheck``, ``derived_ns``: see :meth:`tracker.read.reader.Store._derive_entry`).
    :param refresh_running: gives the entry of a run listed as running with its status derived again.
    :param on_error: called for a run that cannot be read (it is left out).
    :param prepare: called with the ids of the runs to derive again, before the first is derived (the
        reader notes how far each of their segments reaches now, and derives no further).
    :param describe: called after the listing with the catalog as written (where, and its rows) or, when it
        was not written, as read; the third argument is ``None`` when a run listed could not be read (the
        run table, :mod:`.runtable`, then lists no runs folder state).
    """
    with gc_paused():
        return _entries(store, run_ids, derive, refresh_running, writable, on_error, prepare, describe)


def _entries(store: Path, run_ids: list[str], derive: Callable[[str], tuple[CatalogEntry, dict[str, Any]]],
             refresh_running: Callable[[str, CatalogEntry], CatalogEntry], writable: Writable,
             on_error: Callable[[str, Exception], None],
             prepare: Callable[[list[str]], None] | None = None,
             describe: Callable[..., None] | None = None) -> list[CatalogEntry]:
    table = load(store)
    runs_dir = str(store / "runs")
    out = []
    # Per run: its index in the table (kept as it is) or its entry as derived or refreshed now.
    rows: list[int | Kept] = []
    # (A file of 0.5 has no start-time column: written again once, with it.)
    changed = (set(table.at) if table is not None else set()) != set(run_ids) or \
        (table is not None and table.created is None)
    now = time.time_ns()
    # First every kept entry is checked, then the stale ones are derived: what they are derived from is
    # noted for all of them at once, so that deriving one never gives the others time to grow.
    found: list[tuple[int | None, CatalogEntry | None]] = []
    for rid in run_ids:
        i = table.at.get(rid) if table is not None else None
        entry = None
        if i is not None:
            verdict = table.check(i, f"{runs_dir}/{rid}", now)
            if verdict:
                try:
                    entry = table.entry(i)
                except (KeyError, TypeError, ValueError):
                    entry = None
                if entry is not None and verdict == SETTLES:
                    table.rc[5][i] |= _SETTLED
                    changed = True
        found.append((i, entry))
    if prepare is not None:
        prepare([rid for rid, (_, entry) in zip(run_ids, found, strict=True) if entry is None])
    for rid, (i, entry) in zip(run_ids, found, strict=True):
        row: int | Kept
        if entry is None:
            try:
                entry, state = derive(rid)
            except Exception as exc:  # noqa: BLE001 - one unreadable run never hides the others
                on_error(rid, exc)
                changed = True
                continue
            row = encode_entry(rid, entry, state)
            changed = True
        else:
            row = i
            if entry.info.status == "running" or table.rc[5][i] & _RECHECK:
                newer = refresh_running(rid, entry)
                if newer.info != entry.info:
                    entry = newer
                    row = table.kept(i)
                    row.info, finite = encode_info(entry.info, entry.schemas)
                    row.run[5] = (row.run[5] & ~_FINITE) | (_FINITE if finite else 0)
                    changed = True
        rows.append(row)
        out.append(entry)
    whole = len(rows) == len(run_ids)  # every run listed is in the catalog (none left out as unreadable)
    if changed:
        kept = [table.kept(r) if type(r) is int else r for r in rows]
        placed = save(store, kept, writable)
        if describe is not None:
            describe(placed, None, kept, whole)
    elif describe is not None and table is not None:
        describe(None, table, None, whole)
    return out
