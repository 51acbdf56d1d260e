"""The team store on PostgreSQL: ``tracker sync`` copies a folder store in; :class:`TeamStore` reads it.

Every event is keyed by ``(run_id, writer, seq)``, so syncing again, or two
machines syncing the same shared folder, never stores an event twice. Each
batch of events and the writer's progress (bytes and sequence number synced)
commit in one transaction: a sync killed at any moment leaves the database
consistent, and the next one goes on from the last commit. A run's edit
segments (tags, name, notes, config, summary changed after the fact) are
copied the same way into ``tracker_edits``, and the run's info is synced
again when one adds an edit. Tables, indexes and how a team uses them:
docs/team.md.

Credentials come from the URL, the ``PG*`` environment variables or a
``.pgpass`` file (libpq reads them); a password is never printed: messages
show the URL with it masked.
"""

from __future__ import annotations

import os
import re
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

from tracker.core.errors import RunNotFound, TrackerError
from tracker.core.format import RECORD, decode_nonfinite, encode_nonfinite, nonfinite_paths, restore_nonfinite
from tracker.core.records import Problem, Record, RunInfo, label_from_tags
from tracker.query._core import LineChunks, LineError, is_observer, parse_line, read_segment, run_status
from tracker.read.edits import EDIT, EDITS_FOLDER, EDITS_PREFIX, edit_paths
from tracker.read.protocol import RecordsRunMixin
from tracker.read.reader import LazyHost
from tracker.team.reading import TeamReading, TeamRunReading
from tracker.write.artifacts import ArtifactMethods

#: The table layout this version reads and writes; a database with a newer one is refused, an older
#: one is migrated by ``tracker sync`` (tracker/team/derived.py) and named in one line by readers.
#: Layout 3: ``tracker_runs.run_group`` and ``job_type``.
LAYOUT = 3
INSTALL_HINT = 'pip install "tracker-core[team]"'
SCHEMES = ("postgresql://", "postgres://")
#: Events per transaction while syncing.
BATCH = 20_000
_LOCK_KEY = 0x7472616B  # pg_advisory_xact_lock key while creating the tables ("trak")
_SPECIAL = (b'"NaN"', b'Infinity"')
#: Fields of a run's info whose strings stay strings, and the key of its stored info that lists the paths of the
#: NaN and infinities among them (as the start event's ``config_nonfinite`` does).
_FREE_FORM = ("config", "summary")
_NONFINITE = "nonfinite"

DDL = [
    """CREATE TABLE tracker_layout (
        layout integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE tracker_runs (
        run_id text PRIMARY KEY,
        name text,
        project text,
        created_at double precision,
        info json NOT NULL,
        source text,
        synced_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE tracker_writers (
        run_id text NOT NULL,
        writer text NOT NULL,
        is_writer boolean NOT NULL,
        host text,
        started_at double precision,
        ended_at double precision,
        status text NOT NULL,
        finish json,
        synced_bytes bigint NOT NULL DEFAULT 0,
        synced_seq bigint NOT NULL DEFAULT 0,
        seen_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, writer))""",
    """CREATE TABLE tracker_events (
        run_id text NOT NULL,
        writer text NOT NULL,
        seq bigint NOT NULL,
        kind text NOT NULL,
        schema text,
        step bigint,
        time double precision NOT NULL,
        data json NOT NULL,
        PRIMARY KEY (run_id, writer, seq))""",
    "CREATE INDEX tracker_events_run_schema ON tracker_events (run_id, schema, time)",
    "CREATE INDEX tracker_runs_project ON tracker_runs (project, created_at)",
]

#: The runs' edit events (tags, name, notes, config, summary changed after the fact), keyed as events are; made by
#: ``tracker sync`` when it is not there (so a database keeps its layout). How far each edit segment was copied
#: is its row of ``tracker_writers`` (``is_writer`` false, status :data:`EDITS_STATUS`).
EDITS_TABLE = "tracker_edits"
EDITS_DDL = f"""CREATE TABLE IF NOT EXISTS {EDITS_TABLE} (
    run_id text NOT NULL,
    writer text NOT NULL,
    seq bigint NOT NULL,
    time double precision NOT NULL,
    data json NOT NULL,
    PRIMARY KEY (run_id, writer, seq))"""
#: ``tracker_writers.status`` of an edit segment (never a writer: it changes labels, not the run's status).
EDITS_STATUS = "edits"


def is_team_url(text: Any) -> bool:
    """Whether ``text`` names a PostgreSQL database rather than a folder."""
    return isinstance(text, str) and text.startswith(SCHEMES)


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (:func:`tracker.core.urls.redact_url`)."""
    from tracker.core.urls import redact_url

    return redact_url(url)


def _secret(url: str) -> str | None:
    m = re.match(r"^postgres(?:ql)?://[^:/@]*:([^@/]*)@", url)
    return m.group(1) if m and m.group(1) else None


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise TrackerError(f"the team store needs psycopg, which is not installed: {INSTALL_HINT}") from None
    return psycopg


def _one_line(url: str, exc: BaseException) -> str:
    text = "; ".join(p.strip() for p in str(exc).splitlines() if p.strip())
    for secret in filter(None, (_secret(url), os.environ.get("PGPASSWORD"))):
        text = text.replace(secret, "***")
    return text


def connect(url: str, *, autocommit: bool = False, timeout: float | None = None,
            exclusive: str | None = None) -> Any:
    """A psycopg connection to ``url`` that gives up after ``timeout`` seconds without an answer.

    The deadline holds for connecting and for every round trip on the connection, and TCP keepalives
    probe it while idle (:mod:`tracker.team.connection`).

    :param timeout: seconds (default: ``[team] timeout`` of the tracker.toml that applies, else 30).
    :param exclusive: a name one connection at a time has (the store's follower): others of it are ended.
    :raises TrackerError: one line naming the masked URL and what failed
        (unreachable server, wrong password, no such database, no answer in time).
    """
    from tracker.team.connection import connect as open_connection
    from tracker.team.connection import team_timeout

    psycopg = _psycopg()
    try:
        return open_connection(url, autocommit=autocommit, timeout=team_timeout() if timeout is None else timeout,
                               exclusive=exclusive)
    except psycopg.Error as exc:
        raise TrackerError(f"cannot connect to {mask_url(url)}: {_one_line(url, exc)}") from None


def check_layout(conn: Any, url: str, *, create: bool) -> None:
    """Create the tables (``create``) or check that they exist; refuse a newer layout.

    :raises TrackerError: no tables (and not ``create``), or a newer layout.
    """
    if not conn.autocommit:
        conn.rollback()  # a transaction of our own, so that the advisory lock covers the check
    with conn.transaction(), conn.cursor() as cur:
        if create:
            # Several machines may sync into an empty database at once: one creates the tables.
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        cur.execute("SELECT to_regclass('tracker_layout') IS NOT NULL")
        exists = cur.fetchone()[0]
        if not exists and create:
            for stmt in DDL:
                cur.execute(stmt)
            cur.execute("INSERT INTO tracker_layout (layout) VALUES (1)")
            exists = True
        if not exists:
            raise TrackerError(f"{mask_url(url)} holds no tracker tables (`tracker sync {mask_url(url)}` "
                               "creates them)")
        cur.execute("SELECT max(layout) FROM tracker_layout")
        layout = cur.fetchone()[0]
        if create and layout is not None and layout < LAYOUT:
            from tracker.team.derived import MIGRATIONS

            for step in range(layout + 1, LAYOUT + 1):  # under the lock: one process migrates, once
                MIGRATIONS[step](cur)
                cur.execute("INSERT INTO tracker_layout (layout) VALUES (%s)", (step,))
            layout = LAYOUT
    if layout is not None and layout < LAYOUT:
        raise TrackerError(f"{mask_url(url)} uses table layout {layout}, older than layout {LAYOUT} that this "
                           f"tracker reads: `tracker sync {mask_url(url)}` migrates it (run it once, with a role "
                           "that may create tables)")
    if layout is None or layout > LAYOUT:
        raise TrackerError(f"{mask_url(url)} uses table layout {layout}, newer than layout {LAYOUT} that this "
                           "tracker reads and writes: upgrade tracker-core")


# --- sync ----------------------------------------------------------------------------------------

@attrs.define
class SyncReport:
    """What a sync did.

    :ivar events_read: sound events read from segments (new since the last sync).
    :ivar events_new: events the database did not have yet.
    """

    runs: int = 0
    segments: int = 0
    events_read: int = 0
    events_new: int = 0
    problems: int = 0
    seconds: float = 0.0
    #: what was done with blobs (:class:`tracker.team.blobsync.BlobReport`), when ``[team] blobs`` is set
    blobs: Any = None

    def rate(self) -> float:
        """Events read per second."""
        return self.events_read / self.seconds if self.seconds > 0 else 0.0


def _writer_facts(path: Path, timeout: float) -> dict[str, Any]:
    """What the writers table says of a segment: writer or not, host, times, status, finish data."""
    seg = read_segment(path)
    header = seg.header
    is_writer = header is not None and not is_observer(seg)  # an alert watcher's segment: records only
    fin = seg.finish
    if fin is not None:
        data = fin.get("data") or {}
        status = data.get("status", "finished")
        ended = fin.get("time")
    else:
        status = "running" if seg.alive(timeout) else "crashed"
        ended = (seg.last or {}).get("time") or seg.mtime
    facts = seg.facts()
    return {"is_writer": is_writer, "host": facts.get("host"),
            "started_at": (header or seg.last or {}).get("time") or seg.mtime, "ended_at": ended,
            "status": status, "finish": orjson.dumps(encode_nonfinite(fin.get("data") or {})).decode()
            if fin is not None else None}


#: A run's row of ``tracker_runs``: listed, or its info brought up to date (the parameters of :meth:`Syncer._info_row`).
_RUN_UPSERT = """INSERT INTO tracker_runs (run_id, name, project, created_at, info, source, synced_at, run_group,
        job_type)
    VALUES (%s, %s, %s, %s, %s, %s, now(), %s, %s)
    ON CONFLICT (run_id) DO UPDATE SET name = EXCLUDED.name, project = EXCLUDED.project,
        created_at = LEAST(tracker_runs.created_at, EXCLUDED.created_at), info = EXCLUDED.info,
        source = EXCLUDED.source, synced_at = now(), run_group = EXCLUDED.run_group,
        job_type = EXCLUDED.job_type"""


class Syncer:
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
                cur.execute("CREATE TEMP TABLE _tracker_in (LIKE tracker_events) ON COMMIT DELETE ROWS")
                from tracker.team.registry import ensure_alias_table

                ensure_alias_table(cur)  # alias edits (tracker.team.registry)
                cur.execute(f"SELECT to_regclass('{EDITS_TABLE}') IS NOT NULL")
                if not cur.fetchone()[0]:
                    cur.execute(EDITS_DDL)
                cur.execute("SELECT run_id, writer, synced_bytes, synced_seq, status FROM tracker_writers")
                self.state: dict[tuple[str, str], list[Any]] = {(r, w): [b, s, st]
                                                                 for r, w, b, s, st in cur.fetchall()}
            self.conn.commit()
        except _psycopg().Error as exc:
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
        return TrackerError(f"sync to {mask_url(self.url)} stopped: {_one_line(self.url, exc)} "
                            "(nothing is lost: run `tracker sync` again to resume)")

    def sync_once(self, report: SyncReport) -> bool:
        """Sync every run once; returns whether anything changed."""
        psycopg = _psycopg()
        changed = False
        try:
            for rid in self.store.run_ids():
                if self._sync_run(rid, report):
                    changed = True
                if self.blob_sync is not None:
                    self.blob_sync.sync_run(rid)
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        return changed

    def _sync_run(self, rid: str, report: SyncReport) -> bool:
        run_dir = Path(self.store.path) / "runs" / rid
        try:
            names = [p for p in run_dir.iterdir() if not p.name.startswith(".")]
        except OSError:
            return False
        paths = sorted(p for p in names if p.suffix == ".jsonl")
        changed = False
        for path in paths:
            writer = path.stem
            try:
                st = path.stat()
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns)
            state = self.state.get((rid, writer))
            if self.seen_sizes.get(str(path)) == sig and (rid, writer) not in self.live:
                continue
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
        for path in paths:
            writer = path.stem
            try:
                st = path.stat()
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns)
            if self.seen_sizes.get(str(path)) == sig:
                continue
            state = self.state.get((rid, writer))
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

    def _info_row(self, rid: str) -> tuple[Any, ...] | None:
        """The parameters of :data:`_RUN_UPSERT` for run ``rid``, from the folder (``None``: it cannot be read)."""
        from tracker.read.reader import RunView

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                info = RunView(self.store.path, rid, host=getattr(self.store, "_host", None)).info
            except TrackerError:
                return None
        doc = encode_nonfinite({f.name: getattr(info, f.name) for f in attrs.fields(RunInfo)})
        # Which strings of the free-form config and summary stand for NaN and infinities (the others stay text).
        nonfinite = {k: paths for k in _FREE_FORM if (paths := nonfinite_paths(getattr(info, k)))}
        if nonfinite:
            doc[_NONFINITE] = nonfinite
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
        except _psycopg().Error as exc:
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


# --- reading -------------------------------------------------------------------------------------

class TeamStore(TeamReading, LazyHost, ArtifactMethods):
    """The team database opened for reading, with the folder store's reading API and artifact registry.

    :param url: ``postgresql://[user[:password]@]host[:port]/database``; what it
        leaves out comes from the ``PG*`` environment variables and ``.pgpass``.
    :param host: the plugin host for schemas and summarizers (default: the process's).
    """

    def __init__(self, url: str, host: Any = None, *, timeout: float | None = None) -> None:
        from tracker.team.connection import team_timeout

        self.url = url
        self.path = mask_url(url)
        self._host = host
        #: seconds a connection attempt or a round trip may take (``[team] timeout``)
        self.timeout = team_timeout(getattr(host, "config", None)) if timeout is None else float(timeout)
        self._ready = False
        self._init_connection(connect(url, autocommit=True, timeout=self.timeout))
        self.has_tables()

    def _open_connection(self) -> Any:
        return connect(self.url, autocommit=True, timeout=self.timeout)

    #: What an empty team database says of how runs get there (the dashboard and ``tracker runs`` show it).
    EMPTY_HINT = ("runs stream here from every machine whose tracker.toml has [team] url set (or "
                  "TRACKER_TEAM_URL), and `tracker sync URL` copies a store's runs")

    def has_tables(self) -> bool:
        """Whether the database holds the tracker's tables yet (a database no sync has reached is empty).

        Asked again on each read until they exist, so a reader opened first shows the runs a later
        sync or follower brings, without being opened again.

        :raises TrackerError: tables of a layout this tracker does not read.
        """
        if self._ready:
            return True
        psycopg = _psycopg()
        try:
            if not self._fetch("SELECT to_regclass('tracker_layout') IS NOT NULL")[0][0]:
                return False
            check_layout(self.conn, self.url, create=False)
        except psycopg.Error as exc:
            raise self._error(exc) from None
        self._ready = True
        return True

    @property
    def empty_hint(self) -> str | None:
        """How runs get here, while the database has no tracker tables; else ``None``."""
        return None if self.has_tables() else self.EMPTY_HINT

    @property
    def blobs(self) -> Any:
        """The team's blobs: the bucket of ``[team] blobs`` (or ``TRACKER_TEAM_BLOBS``), fetched checked into a
        local cache; without one, opening a blob is a StoreError saying so."""
        if getattr(self, "_blobs", None) is None:
            from tracker.team.blobs import team_blobs

            self._blobs = team_blobs(self.host.config, self.path)
        return self._blobs

    def registry(self) -> Any:
        """Every named artifact, as the folder store derives it (:mod:`tracker.team.registry`)."""
        from tracker.team.registry import team_registry

        return team_registry(self)

    def _alias_edit(self, run_id: str, data: dict[str, Any]) -> None:
        from tracker.team.registry import write_alias_edit

        write_alias_edit(self, run_id, data)

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self._fetch(sql, params)

    def _timeout(self) -> float:
        try:
            return float(self.host.config.heartbeat_timeout)
        except Exception:  # noqa: BLE001 - no configuration: the default
            return 120.0

    def run_ids(self) -> list[str]:
        """Every run id in the database."""
        if not self.has_tables():
            return []
        return [r[0] for r in self._query("SELECT run_id FROM tracker_runs ORDER BY run_id")]

    def _infos(self, run_id: str | None = None) -> list[RunInfo]:
        if not self.has_tables():
            return []
        one = " WHERE run_id = %s" if run_id is not None else ""
        params = (run_id,) if run_id is not None else ()
        rows = self._query(f"SELECT run_id, info::text FROM tracker_runs{one}", params)
        wrows = self._query("SELECT run_id, started_at, ended_at, status, finish::text, "
                            "extract(epoch FROM now() - seen_at) FROM tracker_writers WHERE is_writer"
                            + one.replace(" WHERE", " AND"), params)
        writers: dict[str, list[tuple]] = {}
        timeout = None
        for rid, start, end, status, finish, age in wrows:
            if status == "running":
                # As for a writer on another host: silent for longer than the heartbeat timeout is crashed.
                timeout = self._timeout() if timeout is None else timeout
                if float(age) > timeout:
                    status = "crashed"
            fin = {"data": orjson.loads(finish)} if finish else None
            writers.setdefault(rid, []).append((start or 0.0, end or 0.0, status, fin))
        out = []
        names = {f.name for f in attrs.fields(RunInfo)}
        for rid, text in rows:
            raw = orjson.loads(text)
            doc = {k: v for k, v in raw.items() if k in names}
            doc["last_metrics"] = decode_nonfinite(doc.get("last_metrics") or {})
            nonfinite = raw.get(_NONFINITE) if isinstance(raw.get(_NONFINITE), dict) else {}
            for k in _FREE_FORM:
                if isinstance(doc.get(k), dict):
                    doc[k] = restore_nonfinite(doc[k], nonfinite.get(k))
            ws = writers.get(rid, [])
            status, error = run_status(ws)
            doc.update(id=rid, status=status, error=error, writers=len(ws))
            if ws:
                doc["ended_at"] = max(w[1] for w in ws)
            for label in ("group", "job_type"):  # a run synced by 0.4: its group:<x> tag
                if not isinstance(doc.get(label), str):
                    doc[label] = label_from_tags(doc.get("tags"), label)
            out.append(RunInfo(**doc))
        return out

    def runs(self, project: str | None = None, status: str | None = None,
             tag: str | None = None) -> list[RunInfo]:
        """Every run's info, newest first, optionally filtered."""
        infos = self._infos()
        infos = [i for i in infos if (project is None or i.project == project)
                 and (status is None or i.status == status) and (tag is None or tag in i.tags)]
        infos.sort(key=lambda i: (i.created_at or 0.0, i.id), reverse=True)
        return infos

    def aggregate(self, metric: str, by: str | None = "group", runs: Any = None, stat: str = "mean",
                  band: Any = "std", max_points: int = 1000) -> dict[Any, dict[str, Any]]:
        """Per group of runs, ``metric``'s mean and band on a common step grid (as :meth:`tracker.Store.aggregate`)."""
        from tracker.read.aggregate import aggregate

        return aggregate(self, metric, by, runs, stat, band, max_points)

    def run(self, ref: str) -> TeamRunView:
        """The run whose id is ``ref`` or starts with it, else whose name is ``ref``.

        :raises RunNotFound: no match, or several (the message lists them).
        """
        from tracker.read.reader import resolve_run_ref

        def named(ids: list[str]) -> list[str]:
            if not self.has_tables():
                return []
            return [r[0] for r in self._query("SELECT run_id FROM tracker_runs WHERE name = %s", (ref,))]

        return TeamRunView(self, resolve_run_ref(ref, self.run_ids(), named, str(self.path)))

    def _view(self, run_id: str) -> TeamRunView:
        """The view of a run id known to be there (from a listing): no lookup."""
        return TeamRunView(self, run_id)

    def sql(self, query: str) -> Any:
        """Run SQL over the database's runs and records (DuckDB, as :meth:`tracker.Store.sql`)."""
        from tracker.query.sql import query as run_query

        return run_query(self, query)

    def sql_sources(self, needed: set[str] | None) -> Any:
        """What ``tracker query`` reads: the runs' infos and, when asked for, every record."""
        from tracker.query.sql import Sources

        infos = self.runs()
        src = Sources(infos)
        if needed is not None and not (needed - {"runs"}):
            return src
        if not self.has_tables():
            return src
        names = self._query("SELECT DISTINCT json_object_keys(data) FROM tracker_events "
                            "WHERE kind = 'record' AND schema = 'metrics'")
        src.metric_names = {r[0]: None for r in names}
        src.dump = self._dump
        return src

    def _dump(self, folder: Path) -> list[str]:
        """Every record as a JSONL line under ``folder/<run_id>/records.jsonl``; returns the files."""
        files: dict[str, Any] = {}
        if not self.has_tables():
            return []
        psycopg = _psycopg()
        try:
            with self.conn.cursor() as cur, cur.copy(
                    "COPY (SELECT run_id, writer, seq, schema, step, time, data FROM tracker_events "
                    "WHERE kind = 'record') TO STDOUT") as cp:
                for rid, writer, seq, schema, step, t, data in cp.rows():
                    f = files.get(rid)
                    if f is None:
                        (folder / rid).mkdir(parents=True, exist_ok=True)
                        f = files[rid] = open(folder / rid / "records.jsonl", "wb")  # noqa: SIM115
                    head = orjson.dumps({"kind": RECORD, "schema": schema, "step": None if step is None else int(step),
                                         "time": float(t), "w": writer, "seq": int(seq)})
                    f.write(head[:-1] + b',"data":' + data.encode() + b"}\n")
        except psycopg.Error as exc:
            raise self._error(exc) from None
        finally:
            for f in files.values():
                f.close()
        return [str(folder / rid / "records.jsonl") for rid in files]

    def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            self._conn.close()


class TeamRunView(TeamRunReading, RecordsRunMixin):
    """One run of the team database, read-only (the :class:`tracker.RunView` interface)."""

    def __init__(self, store: TeamStore, run_id: str) -> None:
        self.store = store
        self.id = run_id
        self.path = f"{store.path}#{run_id}"
        self._info: RunInfo | None = None
        self.problems: list[Problem] = []

    @property
    def host(self) -> Any:
        """The store's plugin host."""
        return self.store.host

    @property
    def info(self) -> RunInfo:
        """The run's info (read on first access; see :meth:`refresh`)."""
        if self._info is None:
            infos = self.store._infos(self.id)
            if not infos:
                raise RunNotFound(f"no run {self.id!r} in {self.store.path}")
            self._info = infos[0]
        return self._info

    def refresh(self) -> RunInfo:
        """Read the info again."""
        self._info = None
        return self.info

    def records(self, schema: str | None = None) -> Iterator[Record]:
        """Every record (of one schema), in log order (by time, then writer and sequence)."""
        sql = ("SELECT step, time, schema, data::text, writer, seq FROM tracker_events "
               "WHERE run_id = %s AND kind = 'record'")
        params: tuple = (self.id,)
        if schema is not None:
            sql += " AND schema = %s"
            params += (schema,)
        sql += " ORDER BY time, writer, seq"
        psycopg = _psycopg()
        compiled = None
        try:
            with self.store.conn.cursor() as cur:
                cur.execute(sql, params)
                while True:
                    batch = cur.fetchmany(5000)
                    if not batch:
                        break
                    for step, t, name, text, writer, seq in batch:
                        data = orjson.loads(text)
                        if _SPECIAL[0] in text.encode() or _SPECIAL[1] in text.encode():
                            if compiled is None or compiled.name != name:
                                compiled = self.host.schemas.get(name)
                            data = compiled.decode(data) if compiled is not None else decode_nonfinite(data)
                        yield Record(step, t, name, data, writer, seq)
        except psycopg.Error as exc:
            raise self.store._error(exc) from None

    def artifacts(self) -> list[Any]:
        """Every :class:`tracker.Artifact` of the run, in log order (bytes in the team's bucket)."""
        from tracker.capture.artifacts import artifacts
        from tracker.write.wandb.artifact import Artifact

        project, blobs = self.info.project, self.store.blobs
        return [Artifact._read(self.store, blobs, project, rec, run=self.id) for rec in artifacts(self)]

    def open_artifact(self, name: str) -> Any:
        """A binary file over file artifact ``name``, fetched from the team's bucket (checked, cached)."""
        from tracker.capture.artifacts import open_artifact

        return open_artifact(self, name)

    def copy_artifact(self, name: str, dest: str | os.PathLike[str]) -> Path:
        """Copy artifact ``name`` (a file or a folder) from the team's bucket to ``dest``, every hash checked."""
        from tracker.capture.artifacts import copy_artifact

        return copy_artifact(self, name, dest)


def open_team_store(url: str, host: Any = None, *, timeout: float | None = None) -> TeamStore:
    """Open the team database at ``url`` for reading (the reading API of :func:`tracker.open_store`).

    :param timeout: seconds a connection attempt or a round trip may take (default: ``[team] timeout``).
    """
    return TeamStore(url, host=host, timeout=timeout)


__all__ = ["DDL", "EDITS_DDL", "EDITS_STATUS", "EDITS_TABLE", "LAYOUT", "SyncReport", "Syncer", "TeamRunView",
           "TeamStore", "check_layout", "connect", "is_team_url", "mask_url", "open_team_store", "sync"]
