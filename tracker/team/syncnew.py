"""``tracker sync`` of runs the database has nothing of yet: many runs to a transaction.

A first sync of a lab's store (10,000 runs of a few records each) would cost a
dozen round trips a run copied one segment at a time. A run the database has
no writer, listing or edit of is read whole instead (each line parsed once: its
events, its writers' facts and its info come from the same parse) and copied
with hundreds of others in one transaction: one ``COPY`` of their events, and a
statement for each table of their derived data, writers and listings. The
inserts of events and writers are plain, so a run that another sync copies at
the same moment makes the transaction fail, and those runs are then copied the careful
way (:meth:`tracker.team.sync.Syncer._sync_run`), from what the database holds.

A batch is written by a worker thread while the sync reads the next one: the
reading is this process's work, the inserts and layout 5's triggers the
server's, and the two overlap (:class:`_Copying`; one batch at a time, and
the careful path, the state and the report are the sync's own thread's).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson

from tracker.core.errors import TrackerError
from tracker.core.format import RUN_FINISHED, RUN_STARTED, WRITER_STARTED
from tracker.query._core import LineChunks, LineError, parse_line
from tracker.read.edits import EDITS_FOLDER
from tracker.team.database import require_psycopg
from tracker.team.syncreport import SyncReport, writer_facts_of

#: A run's row of ``tracker_runs``: listed, or its info brought up to date. ``_RUN_UPSERT`` takes the parameters
#: of :meth:`Syncer._info_row`; ``_RUN_UPSERTS`` the same for many runs, a list per column (:func:`_listing_columns`),
#: sent in binary (as text, every quote of a JSON info would be escaped for the array, by Python).
_RUN_UPSERTS_OF = """INSERT INTO tracker_runs (run_id, name, project, created_at, info, source, synced_at, run_group,
        job_type)
    {rows}
    ON CONFLICT (run_id) DO UPDATE SET name = EXCLUDED.name, project = EXCLUDED.project,
        created_at = LEAST(tracker_runs.created_at, EXCLUDED.created_at), info = EXCLUDED.info,
        source = EXCLUDED.source, synced_at = now(), run_group = EXCLUDED.run_group,
        job_type = EXCLUDED.job_type"""
_RUN_UPSERT = _RUN_UPSERTS_OF.format(rows="VALUES (%s, %s, %s, %s, %s, %s, now(), %s, %s)")
_RUN_UPSERTS = _RUN_UPSERTS_OF.format(
    rows="SELECT r, n, p, c, i::json, s, now(), g, j FROM unnest(%b::text[], %b::text[], %b::text[], "
         "%b::float8[], %b::text[], %b::text[], %b::text[], %b::text[]) AS t(r, n, p, c, i, s, g, j)")

#: New writers' rows of ``tracker_writers`` (:meth:`Syncer._copy_new`): plain inserts, so that a writer another
#: sync has just added fails the transaction instead of being counted twice (``seen_at`` is the default, now()).
_WRITERS_COPY = ("tracker_writers (run_id, writer, is_writer, host, started_at, ended_at, status, finish, "
                 "synced_bytes, synced_seq)")
#: Their events, straight into ``tracker_events``: a run the database has no writer of has no events there either
#: (a writer's rows and its events commit together), so an event there already means another sync is copying the
#: run too, and failing the transaction is what is wanted (no ``ON CONFLICT``, no staging table to go through).
_EVENTS_COPY = "tracker_events (run_id, writer, seq, kind, schema, step, time, data)"

#: The first events of a writer's segment (its header).
STARTS = (RUN_STARTED, WRITER_STARTED)

#: New runs copied in one transaction by :meth:`Syncer._copy_new` (with at most ``batch`` events in all).
NEW_RUNS = 500


@attrs.define
class _NewSegment:
    """A segment of a new run, read whole."""

    path: Path
    writer: str
    #: (size, mtime_ns) looked at
    sig: tuple[int, int]
    facts: dict[str, Any]
    #: its events as rows of ``tracker_events``
    rows: list[tuple]
    #: its records as the same rows with their data as parsed (what the derived tables are made of)
    records: list[tuple]
    #: bytes read, and the last sequence number among them
    pos: int
    last_seq: int


@attrs.define
class _NewRun:
    """A run the database has nothing of, read whole: its segments' event rows and its listing."""

    rid: str
    events: int = 0
    segments: list[_NewSegment] = attrs.field(factory=list)
    info: tuple | None = None


@attrs.define
class _NewBatch:
    """What the transaction of a batch of new runs writes (:meth:`NewRuns._prepare_new`), made before it starts."""

    runs: list[_NewRun]
    events: list[tuple]
    derived: Any  # a tracker.team.derived.NewWriterRows
    writers: list[tuple]
    listings: list[list[Any]] | None


class _Copying:
    """A batch of new runs copied by a worker thread while the sync reads the next (one at a time).

    The worker has the sync's connection to itself until :meth:`wait` returns: psycopg lets go of the
    interpreter while it waits on the server, so reading and parsing the next runs overlaps the database's
    work on these.
    """

    def __init__(self, copy: Callable[[_NewBatch], int | None], batch: _NewBatch) -> None:
        self.batch = batch
        self.result: int | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(copy,), name="tracker-sync-copy", daemon=True)
        self.thread.start()

    def _run(self, copy: Callable[[_NewBatch], int | None]) -> None:
        try:
            self.result = copy(self.batch)
        except BaseException as exc:  # noqa: BLE001 - raised again in the thread that waits for it
            self.error = exc

    def wait(self) -> int | None:
        """What the batch's copy returned; its error, raised again here."""
        self.thread.join()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.result


def _listing_columns(rows: list[tuple]) -> list[list[Any]]:
    """Rows of :meth:`Syncer._info_row` as the columns :data:`_RUN_UPSERTS` takes (created_at as floats)."""
    cols = [list(c) for c in zip(*rows, strict=True)]
    cols[3] = [None if v is None else float(v) for v in cols[3]]
    return cols


class NewRuns:
    """The new-run path of :class:`tracker.team.sync.Syncer` (its ``store``, ``conn``, ``state``, ``batch``...)."""

    def _is_new(self, rid: str) -> bool:
        """Whether the database has nothing of run ``rid`` (no writer, no listing); one with edits is not read
        whole either (:meth:`_read_new` sees its edits folder)."""
        return rid not in self.runs_known and rid not in self.unlisted

    def _read_new(self, rid: str, report: SyncReport) -> _NewRun | None:
        """Every complete line of a new run's segments as event rows, or ``None`` when the run is better
        copied one segment at a time (edits, more events than a batch, no segment, a line that does not parse)."""
        run_dir = Path(self.store.path) / "runs" / rid
        try:
            names = os.listdir(run_dir)
        except OSError:
            return None
        if EDITS_FOLDER in names:
            return None
        paths = [run_dir / n for n in sorted(n for n in names if n.endswith(".jsonl") and not n.startswith("."))]
        if not paths:
            return None
        from tracker.read.segment import Segment, read_run_info, read_segment

        new = _NewRun(rid)
        segs = []
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                return None
            writer = path.stem
            rows: list[tuple] = []
            records: list[tuple] = []
            pos = 0
            first = last = None
            for lines in LineChunks(path, 0):
                if pos >= st.st_size:
                    break
                for line in lines:
                    if pos + len(line) + 1 > st.st_size:
                        break
                    pos += len(line) + 1
                    try:
                        ev = parse_line(line)
                    except LineError:
                        return None  # the careful path names the line in its warning
                    if first is None:
                        first = ev
                    last = ev
                    seq = ev.get("seq")
                    if not isinstance(seq, int) or seq <= 0:
                        continue
                    data = ev.get("data")
                    kind = str(ev.get("kind"))
                    row = (rid, writer, seq, kind, ev.get("schema"), ev.get("step"), float(ev.get("time") or 0.0),
                           orjson.dumps(data if data is not None else {}).decode())
                    rows.append(row)
                    if kind == "record":
                        records.append(row[:7] + (data,))
            new.events += len(rows)
            if new.events > self.batch:
                return None
            if last is not None and last.get("kind") == RUN_FINISHED:
                # A finished writer's segment as read_segment would give it (its first line, its finish), from
                # the lines just parsed: each line is parsed once, not again for the facts and the info.
                seg = Segment(path, st.st_size, st.st_mtime, header=first if first.get("kind") in STARTS else None,
                              last=last, tail=[last], torn=pos < st.st_size)
            else:  # a live or crashed writer: its tail decides, as for every reader
                seg = read_segment(path)
            segs.append(seg)
            new.segments.append(_NewSegment(path, writer, (st.st_size, st.st_mtime_ns),
                                            writer_facts_of(seg, self.timeout), rows, records, pos,
                                            max((r[2] for r in rows), default=0)))
        try:
            info = read_run_info(run_dir, rid, segs, self.timeout, lambda _p: None)  # no edits: a new run has none
        except TrackerError:
            info = None
        new.info = self._info_row(rid, info) if info is not None else None
        return new

    def _prepare_new(self, runs: list[_NewRun]) -> _NewBatch:
        """The rows of a batch of new runs' transaction: their events, derived rows, writers and listings."""
        from tracker.team.derived import new_writer_rows

        segments = [(run.rid, seg) for run in runs for seg in run.segments]
        listings = [run.info for run in runs if run.info is not None]
        return _NewBatch(
            runs, [row for _rid, seg in segments for row in seg.rows],
            new_writer_rows([(rid, seg.writer, seg.records) for rid, seg in segments]),
            [(rid, seg.writer, seg.facts["is_writer"], seg.facts["host"], seg.facts["started_at"],
              seg.facts["ended_at"], seg.facts["status"], seg.facts["finish"], seg.pos, seg.last_seq)
             for rid, seg in segments],
            _listing_columns(listings) if listings else None)

    def _copy_new(self, batch: _NewBatch) -> int | None:
        """Copy a batch of new runs in one transaction: their events (one COPY), derived data, writers and
        listings, a statement each. Returns the events the database did not have, or ``None`` when another
        sync copied one of these runs at the same time (the plain inserts of their events or writers fail:
        nothing of the batch is kept, and :meth:`_settle_new` copies its runs the careful way).

        Touches nothing but the connection: it runs in the worker thread of :class:`_Copying`.
        """
        from tracker.team.derived import copy_rows, lock_writers, write_new_writers

        psycopg = require_psycopg()
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                lock_writers(cur, [(w[0], w[1]) for w in batch.writers])
                if batch.events:
                    copy_rows(cur, _EVENTS_COPY, batch.events)
                write_new_writers(cur, batch.derived)
                copy_rows(cur, _WRITERS_COPY, batch.writers)
                if batch.listings is not None:
                    cur.execute(_RUN_UPSERTS, batch.listings)
        except psycopg.errors.IntegrityError:
            return None
        return len(batch.events)  # all new: a plain COPY stores every row or fails

    def _settle_new(self, batch: _NewBatch, new: int | None, report: SyncReport) -> bool:
        """What follows the copy of a batch (:meth:`_copy_new` returned ``new``): the sync's state and report,
        and each run's blobs; or, when another sync got to one of its runs first, each run the careful way, from
        what the database has now."""
        if new is None:
            self._reload_state()
            changed = False
            for run in batch.runs:
                changed = self._sync_run(run.rid, report) or changed
                if self.blob_sync is not None:
                    self.blob_sync.sync_run(run.rid)
            return changed
        report.events_new += new
        report.events_read += len(batch.events)
        for run in batch.runs:
            for seg in run.segments:
                self.state[(run.rid, seg.writer)] = [seg.pos, seg.last_seq, seg.facts["status"]]
                self.seen_sizes[str(seg.path)] = seg.sig
                if seg.facts["status"] == "running":
                    self.live.add((run.rid, seg.writer))
                report.segments += 1
        for run in batch.runs:
            self._listed(run.rid)
            report.runs += 1
            if self.blob_sync is not None:
                self.blob_sync.sync_run(run.rid)
        return True

    def _hand_over(self, runs: list[_NewRun], copying: _Copying | None,
                   report: SyncReport) -> tuple[_Copying, bool]:
        """Prepare the batch of ``runs``, wait for the one being copied and settle it, then start copying this
        one: the new copy, and whether the settled one changed anything."""
        batch = self._prepare_new(runs)
        changed = self._landed(copying, report)
        return _Copying(self._copy_new, batch), changed

    def _landed(self, copying: _Copying | None, report: SyncReport) -> bool:
        """Wait for the batch being copied (if any) and settle it; whether anything changed."""
        if copying is None:
            return False
        return self._settle_new(copying.batch, copying.wait(), report)

    def _reload_state(self) -> None:
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute("SELECT run_id, writer, synced_bytes, synced_seq, status FROM tracker_writers")
            self.state = {(r, w): [b, s, st] for r, w, b, s, st in cur.fetchall()}
        self.runs_known |= {r for r, _ in self.state}
