"""``tracker sync``: a folder store's segments, edit segments and run infos copied into the team database.

Every event is keyed by ``(run_id, writer, seq)``, so syncing again, or two
machines syncing the same shared folder, never stores an event twice. Each
batch of events and the writer's progress (bytes and sequence number synced)
commit in one transaction: a sync killed at any moment leaves the database
consistent, and the next one goes on from the last commit. A run's edit
segments (tags, name, notes, config, summary, aliases changed after the fact)
are copied the same way into ``tracker_edits`` (alias edits also into
``tracker_alias_edits``, :mod:`tracker.team.registry`), and the run's info is
synced again when one adds an edit. The tables are those of
:mod:`tracker.team.database`; docs/team.md tells how a team uses them.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson

from tracker.core.errors import TrackerError
from tracker.core.format import encode_nonfinite, nonfinite_paths
from tracker.core.records import RunInfo
from tracker.query._core import LineChunks, LineError, parse_line
from tracker.read.edits import EDIT, EDITS_FOLDER, EDITS_PREFIX, edit_paths
from tracker.team.database import (
    EDITS_STATUS,
    EDITS_TABLE,
    FREE_FORM,
    LAYOUT_LOCK,
    NONFINITE,
    check_layout,
    connect,
    ensure_edit_table,
    error_line,
    mask_url,
    require_psycopg,
)
from tracker.team.syncnew import _RUN_UPSERT, NEW_RUNS, NewRuns, _Copying, _NewRun
from tracker.team.syncreport import SyncReport, _writer_facts  # noqa: F401 - re-exported for old import paths

#: Events per transaction while syncing.
BATCH = 20_000




class Syncer(NewRuns):
    """Copies a folder store into the database; one instance per ``tracker sync``."""

    def __init__(self, store: Any, url: str, *, batch: int = BATCH, log: Callable[[str], None] | None = None,
                 exclusive: str | None = None, timeout: float | None = None) -> None:
        from tracker.team.connection import team_timeout

        self.store = store
        self.url = url
        self.batch = max(1, int(batch))
        self.log = log or (lambda _m: None)
        if timeout is None:
            timeout = team_timeout(store.host.config if hasattr(store, "host") else None)
        self.conn = connect(url, timeout=timeout, exclusive=exclusive)
        self.source = socket.gethostname()
        self.timeout = store.host.config.heartbeat_timeout if hasattr(store, "host") else 120.0
        try:  # a role that may not write (the dashboard's read-only one) is one line, not a traceback
            check_layout(self.conn, url, create=True)
            with self.conn.cursor() as cur:
                # The tables made on first use under check_layout's lock too: two syncs starting at once
                # would otherwise both create one (a duplicate-type error for the second).
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (LAYOUT_LOCK,))
                cur.execute("CREATE TEMP TABLE _tracker_in (LIKE tracker_events) ON COMMIT DELETE ROWS")
                from tracker.team.registry import ensure_alias_table

                ensure_alias_table(cur)  # alias edits (tracker.team.registry)
                ensure_edit_table(cur, EDITS_TABLE)
                cur.execute("SELECT run_id, writer, synced_bytes, synced_seq, status FROM tracker_writers")
                self.state: dict[tuple[str, str], list[Any]] = {(r, w): [b, s, st]
                                                                 for r, w, b, s, st in cur.fetchall()}
            self.conn.commit()
        except require_psycopg().Error as exc:
            self.close()
            raise self._fail(exc) from None
        self.runs_known = {r for r, _ in self.state}
        #: New runs not listed in ``tracker_runs`` yet: each goes in with its first writer's rows (:meth:`_commit`).
        self.unlisted: set[str] = set()
        self.seen_sizes: dict[str, tuple[int, int]] = {}
        self.live: set[tuple[str, str]] = set()
        self.blob_sync: Any = None  # a tracker.team.blobsync.BlobSync: uploads each run's blobs after its records

    def close(self) -> None:
        """Close the connection."""
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass

    def _fail(self, exc: BaseException) -> TrackerError:
        return TrackerError(f"sync to {mask_url(self.url)} stopped: {error_line(self.url, exc)} "
                            "(nothing is lost: run `tracker sync` again to resume)")

    def sync_once(self, report: SyncReport) -> bool:
        """Sync every run once; returns whether anything changed.

        Runs the database has nothing of yet (a first sync, a batch of new runs) are copied many to a
        transaction, each batch by a worker thread while the next is read (:meth:`_copy_new`); the others one
        segment at a time (:meth:`_sync_run`), once the batch being copied is in.
        """
        from tracker.read.index import gc_paused

        psycopg = require_psycopg()
        changed = False
        pending: list[_NewRun] = []
        held = 0
        copying: _Copying | None = None
        # The cyclic collector held off: reading many runs makes many small objects and no cycles, and its
        # passes over them cost about as much as the rest of the copy (a first sync of 2,000 runs: 12.7 s with
        # it, 7.1 s without).
        try:
            with gc_paused():
                try:
                    for rid in self.store.run_ids():
                        new = self._read_new(rid, report) if self._is_new(rid) else None
                        if new is None:
                            # The connection is the worker's until its batch is in.
                            changed = self._landed(copying, report) or changed
                            copying = None
                            if self._sync_run(rid, report):
                                changed = True
                            if self.blob_sync is not None:
                                self.blob_sync.sync_run(rid)
                            continue
                        pending.append(new)
                        held += new.events
                        if len(pending) >= NEW_RUNS or held >= self.batch:
                            copying, landed = self._hand_over(pending, copying, report)
                            changed = landed or changed
                            pending, held = [], 0
                    if pending:
                        copying, landed = self._hand_over(pending, copying, report)
                        changed = landed or changed
                    landing, copying = copying, None
                    changed = self._landed(landing, report) or changed
                finally:
                    if copying is not None:
                        # Stopped meanwhile (an error, Ctrl-C): the batch being copied commits or not before
                        # the connection may be closed; a later sync finds what it wrote.
                        copying.thread.join()
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        return changed

    def _looks(self, rid: str, paths: list[Path]) -> Iterator[tuple[Path, str, os.stat_result, list[Any] | None]]:
        """The segments (or edit segments) of run ``rid`` to look at again: those whose size or mtime changed
        since the last look, and those of live writers (their heartbeat), each with its stat and synced state."""
        for path in paths:
            writer = path.stem
            try:
                st = path.stat()
            except OSError:
                continue
            if self.seen_sizes.get(str(path)) == (st.st_size, st.st_mtime_ns) and (rid, writer) not in self.live:
                continue
            yield path, writer, st, self.state.get((rid, writer))

    def _sync_run(self, rid: str, report: SyncReport) -> bool:
        run_dir = Path(self.store.path) / "runs" / rid
        try:
            names = [p for p in run_dir.iterdir() if not p.name.startswith(".")]
        except OSError:
            return False
        paths = sorted(p for p in names if p.suffix == ".jsonl")
        changed = False
        for path, writer, st, state in self._looks(rid, paths):
            sig = (st.st_size, st.st_mtime_ns)
            facts = _writer_facts(path, self.timeout)
            if rid not in self.runs_known:
                # A new run is listed in the transaction of its first writer's first rows (see _commit): never
                # a run without writers, which readers would call crashed; a sync cut short shows it running.
                self.unlisted.add(rid)
            if state is not None and state[0] == st.st_size and state[2] == facts["status"]:
                self.seen_sizes[str(path)] = sig
                if facts["status"] == "running":
                    self.live.add((rid, writer))  # nothing new: the heartbeat tells readers it runs
                continue
            self._sync_segment(rid, writer, path, facts, state, report)
            self.seen_sizes[str(path)] = sig
            if facts["status"] == "running":
                self.live.add((rid, writer))
            else:
                self.live.discard((rid, writer))
            report.segments += 1
            changed = True
        # Edits after the fact (tags, name, notes, config, summary, aliases): a run without an edits folder
        # costs nothing more, and an edit segment is read only past the bytes the database has of it.
        if any(p.name == EDITS_FOLDER for p in names) and self._sync_edits(rid, run_dir, report):
            changed = True
        if changed:  # its info brought up to date (a run of observers or edits alone is listed here)
            self._sync_info(rid)
            report.runs += 1
        return changed

    def _sync_edits(self, rid: str, run_dir: Path, report: SyncReport) -> bool:
        """Copy what the run's edit segments added since the last sync; returns whether any edit was new."""
        try:
            paths = edit_paths(run_dir)
        except TrackerError as exc:  # an unreadable edits folder: the other runs go on
            report.problems += 1
            warnings.warn(f"tracker: {exc} (its edits are not synced)", _warning_class(), stacklevel=2)
            return False
        changed = False
        for path, writer, st, state in self._looks(rid, paths):
            sig = (st.st_size, st.st_mtime_ns)
            if state is not None and state[0] == st.st_size:
                self.seen_sizes[str(path)] = sig
                continue
            if rid not in self.runs_known:
                self.unlisted.add(rid)  # listed after its edits are in (they carry no writer to list it with)
            before = state[0] if state is not None else 0
            host = writer[len(EDITS_PREFIX):].rpartition("-")[0].rpartition("-")[0] or None
            facts = {"is_writer": False, "edits": True, "host": host, "started_at": None,
                     "ended_at": st.st_mtime, "status": EDITS_STATUS, "finish": None}
            self._sync_segment(rid, writer, path, facts, state, report)
            self.seen_sizes[str(path)] = sig
            report.segments += 1
            if self.state[(rid, writer)][0] != before:  # a torn last line alone is no new edit
                changed = True
        return changed

    def _sync_segment(self, rid: str, writer: str, path: Path, facts: dict[str, Any], state: list[Any] | None,
                      report: SyncReport) -> None:
        offset, last_seq = (state[0], state[1]) if state is not None else (0, 0)
        try:
            size = path.stat().st_size
        except OSError:
            return
        if size < offset:  # not the file that was synced (should never happen: segments only grow)
            offset, last_seq = 0, 0
        rows: list[tuple] = []
        pos = offset
        lineno = 0
        chunks = LineChunks(path, offset)
        # Only what the segment held at this look: a writer appending faster than this reads is never chased
        # (what it adds meanwhile is copied at the next look, which starts from the offset committed here).
        for lines in chunks:
            if pos >= size:
                break
            for line in lines:
                if pos + len(line) + 1 > size:
                    break
                lineno += 1
                pos += len(line) + 1
                try:
                    ev = parse_line(line)
                except LineError as exc:
                    report.problems += 1
                    where = f"{path}:{lineno}" if offset == 0 else f"{path} (byte {pos - len(line) - 1})"
                    warnings.warn(f"tracker: {where}: {exc.kind}: {exc} (not synced)",
                                  _warning_class(), stacklevel=2)
                    continue
                seq = ev.get("seq")
                if not isinstance(seq, int) or seq <= last_seq:
                    continue
                data = ev.get("data")
                rows.append((rid, writer, seq, str(ev.get("kind")), ev.get("schema"), ev.get("step"),
                             float(ev.get("time") or 0.0), orjson.dumps(data if data is not None else {}).decode()))
                if len(rows) >= self.batch:
                    last_seq = self._commit(rid, writer, rows, pos, facts, report, final=False)
                    rows = []
        self._commit(rid, writer, rows, pos, facts, report, final=True)

    def _commit(self, rid: str, writer: str, rows: list[tuple], pos: int, facts: dict[str, Any],
                report: SyncReport, final: bool) -> int:
        last_seq = max((r[2] for r in rows), default=None)
        state = self.state.get((rid, writer))
        if last_seq is None:
            last_seq = state[1] if state is not None else 0
        edits = bool(facts.get("edits"))
        status = facts["status"] if final or edits else "running"
        if edits:  # what readers of an edit segment apply: edit events of a dict each (others are skipped)
            rows = [r for r in rows if r[3] == EDIT and r[7].startswith("{")]
        # A new run's row goes in with its first writer's rows: readers never see it without a writer.
        listing = self._info_row(rid) if rid in self.unlisted and facts["is_writer"] else None
        with self.conn.transaction(), self.conn.cursor() as cur:
            if listing is not None:
                cur.execute(_RUN_UPSERT, listing)
            if not edits:
                from tracker.team.derived import add_batch

                add_batch(cur, rid, writer, rows)  # columns and figures of the new records, in this transaction
            if rows:
                with cur.copy("COPY _tracker_in (run_id, writer, seq, kind, schema, step, time, data) "
                              "FROM STDIN") as cp:
                    for row in rows:
                        cp.write_row(row)
                if edits:
                    cur.execute(f"INSERT INTO {EDITS_TABLE} SELECT run_id, writer, seq, time, data FROM _tracker_in "
                                "ON CONFLICT DO NOTHING")
                else:
                    cur.execute("INSERT INTO tracker_events SELECT * FROM _tracker_in ON CONFLICT DO NOTHING")
                report.events_new += max(cur.rowcount, 0)
                report.events_read += len(rows)
                if edits:
                    from tracker.team.registry import add_alias_edits

                    add_alias_edits(cur, rows)  # the artifact registry's alias edits, from the same events
            cur.execute(
                """INSERT INTO tracker_writers AS w (run_id, writer, is_writer, host, started_at, ended_at, status,
                       finish, synced_bytes, synced_seq, seen_at)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now())
                   ON CONFLICT (run_id, writer) DO UPDATE SET
                       is_writer = EXCLUDED.is_writer, host = EXCLUDED.host, started_at = EXCLUDED.started_at,
                       ended_at = GREATEST(w.ended_at, EXCLUDED.ended_at),
                       status = CASE WHEN EXCLUDED.synced_bytes >= w.synced_bytes THEN EXCLUDED.status
                                     ELSE w.status END,
                       finish = COALESCE(EXCLUDED.finish, w.finish),
                       synced_bytes = GREATEST(w.synced_bytes, EXCLUDED.synced_bytes),
                       synced_seq = GREATEST(w.synced_seq, EXCLUDED.synced_seq), seen_at = now()""",
                (rid, writer, facts["is_writer"], facts["host"], facts["started_at"], facts["ended_at"], status,
                 facts["finish"] if final else None, pos, last_seq))
        self.state[(rid, writer)] = [pos, last_seq, status]
        if listing is not None:
            self._listed(rid)
        return last_seq

    def _listed(self, rid: str) -> None:
        self.runs_known.add(rid)
        self.unlisted.discard(rid)

    def _sync_info(self, rid: str) -> None:
        row = self._info_row(rid)
        if row is None:
            return
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(_RUN_UPSERT, row)
        self._listed(rid)

    def _info_row(self, rid: str, info: RunInfo | None = None) -> tuple[Any, ...] | None:
        """The parameters of :data:`_RUN_UPSERT` for run ``rid``, from the folder (``None``: it cannot be read),
        or from its ``info`` when the caller has it."""
        from tracker.read.reader import RunView

        if info is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    info = RunView(self.store.path, rid, host=getattr(self.store, "_host", None)).info
                except TrackerError:
                    return None
        doc = encode_nonfinite({f.name: getattr(info, f.name) for f in attrs.fields(RunInfo)})
        # Which strings of the free-form config and summary stand for NaN and infinities (the others stay text).
        nonfinite = {k: paths for k in FREE_FORM if (paths := nonfinite_paths(getattr(info, k)))}
        if nonfinite:
            doc[NONFINITE] = nonfinite
        return (rid, info.name, info.project, info.created_at, orjson.dumps(doc, default=str).decode(), self.source,
                info.group, info.job_type)

    def heartbeat(self) -> None:
        """Tell readers the live writers still run (their ``seen_at``)."""
        if not self.live:
            return
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                cur.executemany("UPDATE tracker_writers SET seen_at = now() WHERE run_id = %s AND writer = %s "
                                "AND status = 'running'", sorted(self.live))
        except require_psycopg().Error as exc:
            raise self._fail(exc) from None


def _warning_class() -> type[Warning]:
    from tracker.host.bus import TrackerWarning

    return TrackerWarning


def sync(store: Any, url: str, *, follow: bool = False, interval: float = 1.0, batch: int = BATCH,
         stop: threading.Event | None = None, on_pass: Callable[[SyncReport], None] | None = None,
         blobs: str | None = None, blob_progress: Callable[[int, str], Any] | None = None,
         on_lost: Callable[[str], None] | None = None, timeout: float | None = None) -> SyncReport:
    """Copy every run of a folder store into the database at ``url`` (idempotent).

    :param follow: keep going: new records of running runs (and new runs)
        are copied every ``interval`` seconds until ``stop`` is set, SIGTERM
        or Ctrl-C. A connection lost meanwhile (no answer within ``[team] timeout``,
        a restart) is opened again with backoff, and the copy goes on from the
        last commit; ``on_lost`` is told each time, in one line.
    :param timeout: seconds a connection attempt or a round trip may take (default: ``[team] timeout`` of
        the store's configuration).
    :param batch: events per transaction.
    :param blobs: the bucket to upload the runs' blobs to (default: ``TRACKER_TEAM_BLOBS``, ``[team] blobs``;
        none set: blobs stay local); ``blob_progress`` draws the uploads' progress (see
        :class:`tracker.team.blobsync.BlobSync`).
    :raises TrackerError: one line for an unreachable database, a wrong
        password, a newer table layout or a connection lost mid-way.
    """
    t0 = time.perf_counter()
    from tracker.team.blobsync import open_blob_sync

    report = SyncReport()
    blob_sync = open_blob_sync(store, blobs, blob_progress)
    syncer = Syncer(store, url, batch=batch, timeout=timeout)
    syncer.blob_sync = blob_sync
    report.blobs = blob_sync.report if blob_sync is not None else None
    stop = stop or threading.Event()
    old = None
    if follow and threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        syncer.sync_once(report)
        if not follow:
            syncer.heartbeat()
        if on_pass is not None:
            on_pass(report)
        beat = -1e18  # following: the first beat comes with the first look, where a lost link is retried
        while follow and not stop.is_set():
            stop.wait(interval)
            try:
                syncer.sync_once(report)
                if time.monotonic() - beat >= min(5.0, interval * 2):
                    syncer.heartbeat()
                    beat = time.monotonic()
            except TrackerError as exc:
                if not (syncer.conn.closed or syncer.conn.broken):
                    raise  # not the link: a permission, a newer layout
                syncer.close()
                syncer = _reconnect(store, url, batch, timeout, stop, on_lost,
                                    str(exc).split(" (nothing is lost")[0])
                if syncer is None:
                    break
                syncer.blob_sync = blob_sync
                continue
            if on_pass is not None:
                on_pass(report)
    except KeyboardInterrupt:
        pass
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
        if syncer is not None:
            syncer.close()
    report.seconds = time.perf_counter() - t0
    return report


def _reconnect(store: Any, url: str, batch: int, timeout: float | None, stop: threading.Event,
               on_lost: Callable[[str], None] | None, why: str) -> Syncer | None:
    """A new :class:`Syncer` once the database answers again (retried with backoff up to 5 s); ``None`` if
    ``stop`` is set first."""
    say = on_lost or (lambda _m: None)
    say(f"{why}; connecting again")
    backoff, wait = 0.5, 0.5
    while not stop.wait(wait):
        tried = time.monotonic()
        try:
            syncer = Syncer(store, url, batch=batch, timeout=timeout)
        except TrackerError as exc:
            backoff = min(backoff * 2, 5.0)
            wait = max(0.05, backoff - (time.monotonic() - tried))  # an attempt that timed out waited already
            if str(exc) != why:
                say(f"{exc}; retrying every {backoff:g}s")
                why = str(exc)
            continue
        say(f"connected to {mask_url(url)} again: catching up")
        return syncer
    return None


__all__ = ["BATCH", "SyncReport", "Syncer", "sync"]
