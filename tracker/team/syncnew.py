"""``tracker sync`` of runs the database has nothing of yet: many runs to a transaction.

A first sync of a lab's store (10,000 runs of a few records each) would cost a
dozen round trips a run copied one segment at a time. A run the database has
no writer, listing or edit of is read whole instead (each line parsed once: its
events, its writers' facts and its info come from the same parse) and copied
with hundreds of others in one transaction: one ``COPY`` of their events, their
derived data and writers in pipelined statements. The inserts of writers are
plain, so a run that another sync copies at the same moment makes the
transaction fail, and those runs are then copied the careful way
(:meth:`tracker.team.sync.Syncer._sync_run`), from what the database holds.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import orjson

from tracker.core.errors import TrackerError
from tracker.core.format import RUN_FINISHED, RUN_STARTED, WRITER_STARTED
from tracker.query._core import LineChunks, LineError, parse_line
from tracker.read.edits import EDITS_FOLDER
from tracker.team.database import require_psycopg
from tracker.team.syncreport import SyncReport, writer_facts_of

#: A run's row of ``tracker_runs``: listed, or its info brought up to date (the parameters of :meth:`Syncer._info_row`);
#: ``_RUN_UPSERTS`` takes ``{rows}`` of values ``_RUN_ROW`` (:func:`tracker.team.derived.insert_rows`).
_RUN_UPSERTS = """INSERT INTO tracker_runs (run_id, name, project, created_at, info, source, synced_at, run_group,
        job_type)
    VALUES {rows}
    ON CONFLICT (run_id) DO UPDATE SET name = EXCLUDED.name, project = EXCLUDED.project,
        created_at = LEAST(tracker_runs.created_at, EXCLUDED.created_at), info = EXCLUDED.info,
        source = EXCLUDED.source, synced_at = now(), run_group = EXCLUDED.run_group,
        job_type = EXCLUDED.job_type"""
_RUN_ROW = "(%s, %s, %s, %s, %s, %s, now(), %s, %s)"
_RUN_UPSERT = _RUN_UPSERTS.format(rows=_RUN_ROW)

#: A new writer's row of ``tracker_writers`` (:meth:`Syncer._flush_new`): a plain insert, so that a writer another
#: sync has just added fails the transaction instead of being counted twice.
_WRITER_INSERTS = """INSERT INTO tracker_writers (run_id, writer, is_writer, host, started_at, ended_at, status, finish,
        synced_bytes, synced_seq, seen_at)
    VALUES {rows}"""
_WRITER_ROW = "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now())"

#: The first events of a writer's segment (its header).
STARTS = (RUN_STARTED, WRITER_STARTED)

#: New runs copied in one transaction by :meth:`Syncer._flush_new` (with at most ``batch`` events in all).
NEW_RUNS = 500


@attrs.define
class _NewRun:
    """A run the database has nothing of, read whole: its segments' event rows and its listing."""

    rid: str
    events: int = 0
    #: per segment: path, writer, (size, mtime_ns) looked at, writer facts, event rows, bytes read
    segments: list[tuple] = attrs.field(factory=list)
    info: tuple | None = None




class NewRuns:
    """The new-run path of :class:`tracker.team.sync.Syncer` (its ``store``, ``conn``, ``state``, ``batch``...)."""

    def _is_new(self, rid: str) -> bool:
        """Whether the database has nothing of run ``rid`` (no writer, no listing) and it has no edits yet."""
        return (rid not in self.runs_known and rid not in self.unlisted
                and not (Path(self.store.path) / "runs" / rid / EDITS_FOLDER).exists())

    def _read_new(self, rid: str, report: SyncReport) -> _NewRun | None:
        """Every complete line of a new run's segments as event rows, or ``None`` when the run is better
        copied one segment at a time (more events than a batch, no segment, a line that does not parse)."""
        run_dir = Path(self.store.path) / "runs" / rid
        try:
            paths = sorted(p for p in run_dir.iterdir() if p.suffix == ".jsonl" and not p.name.startswith("."))
        except OSError:
            return None
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
            rows: list[tuple] = []
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
                    rows.append((rid, path.stem, seq, str(ev.get("kind")), ev.get("schema"), ev.get("step"),
                                 float(ev.get("time") or 0.0),
                                 orjson.dumps(data if data is not None else {}).decode()))
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
            new.segments.append((path, path.stem, (st.st_size, st.st_mtime_ns), writer_facts_of(seg, self.timeout),
                                 rows, pos))
        try:
            info = read_run_info(run_dir, rid, segs, self.timeout, lambda _p: None)  # no edits: a new run has none
        except TrackerError:
            info = None
        new.info = self._info_row(rid, info) if info is not None else None
        return new

    def _flush_new(self, runs: list[_NewRun], report: SyncReport) -> bool:
        """Copy new runs in one transaction: their events (one COPY), derived data, writers and listings.

        Another sync that copies one of them at the same time makes this transaction fail (plain inserts
        of the writers' rows); those runs are then copied one segment at a time, as any other run.
        """
        from tracker.team.derived import add_new_writers, insert_rows, lock_writers

        psycopg = require_psycopg()
        segments = [(run, seg) for run in runs for seg in run.segments]
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                lock_writers(cur, [(run.rid, seg[1]) for run, seg in segments])
                rows = [row for _run, seg in segments for row in seg[4]]
                if rows:
                    with cur.copy("COPY _tracker_in (run_id, writer, seq, kind, schema, step, time, data) "
                                  "FROM STDIN") as cp:
                        for row in rows:
                            cp.write_row(row)
                    cur.execute("INSERT INTO tracker_events SELECT * FROM _tracker_in ON CONFLICT DO NOTHING")
                    report.events_new += max(cur.rowcount, 0)
                add_new_writers(cur, [(run.rid, seg[1], seg[4]) for run, seg in segments])
                insert_rows(cur, _WRITER_INSERTS, _WRITER_ROW, [
                    (run.rid, writer, facts["is_writer"], facts["host"], facts["started_at"], facts["ended_at"],
                     facts["status"], facts["finish"], pos, max((r[2] for r in seg_rows), default=0))
                    for run, (_p, writer, _sig, facts, seg_rows, pos) in segments])
                listings = [run.info for run in runs if run.info is not None]
                if listings:
                    insert_rows(cur, _RUN_UPSERTS, _RUN_ROW, listings)
        except psycopg.errors.IntegrityError:
            # Another sync got to one of them first: each run the careful way, from what the database has now.
            self._reload_state()
            changed = False
            for run in runs:
                changed = self._sync_run(run.rid, report) or changed
                if self.blob_sync is not None:
                    self.blob_sync.sync_run(run.rid)
            return changed
        report.events_read += len(rows)
        for run, (path, writer, sig, facts, seg_rows, pos) in segments:
            self.state[(run.rid, writer)] = [pos, max((r[2] for r in seg_rows), default=0), facts["status"]]
            self.seen_sizes[str(path)] = sig
            if facts["status"] == "running":
                self.live.add((run.rid, writer))
            report.segments += 1
        for run in runs:
            self._listed(run.rid)
            report.runs += 1
            if self.blob_sync is not None:
                self.blob_sync.sync_run(run.rid)
        return True

    def _reload_state(self) -> None:
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute("SELECT run_id, writer, synced_bytes, synced_seq, status FROM tracker_writers")
            self.state = {(r, w): [b, s, st] for r, w, b, s, st in cur.fetchall()}
        self.runs_known |= {r for r, _ in self.state}

