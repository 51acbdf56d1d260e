"""Fast reads of the team database for the dashboard and the CLI: figures, metric columns, live cursors.

:class:`TeamReading` (mixed into :class:`~tracker.team.postgres.TeamStore`) and
:class:`TeamRunReading` (into :class:`~tracker.team.postgres.TeamRunView`) read
the derived tables of :mod:`tracker.team.derived` instead of parsing a JSON
row per record, and give the answers the folder store gives: the run catalog
with per-metric figures, ``metric_stats``, ``metrics()`` in log order, and
the new ``metrics`` records after a cursor (live pages, ``tracker tail``).

A connection the server dropped is answered with
:class:`~tracker.core.errors.StoreUnavailable` (the dashboard's 503); the next
read opens a new one.
"""

from __future__ import annotations

import threading
from typing import Any

import orjson

from tracker.core.errors import StoreUnavailable, TrackerError
from tracker.core.format import RECORD, decode_nonfinite
from tracker.core.records import Record, RunInfo
from tracker.core.urls import redact_url, url_password
from tracker.read.index.catalog import CatalogEntry
from tracker.read.protocol import info_matches

#: Seconds a listing with running runs is kept while nothing in the database changed.
LISTING_TTL = 3.0


def one_line(url: str, exc: BaseException) -> str:
    """The message of ``exc`` on one line, without the URL's password (nor ``PGPASSWORD``)."""
    import os

    text = "; ".join(p.strip() for p in str(exc).splitlines() if p.strip())
    for secret in filter(None, (url_password(url), os.environ.get("PGPASSWORD"))):
        text = text.replace(secret, "***")
    return text


class TeamReading:
    """The store-level reads of the team database (mixed into ``TeamStore``)."""

    url: str
    path: str
    _conn: Any

    # --- the connection: reopened after the server dropped it --------------------------------

    def _open_connection(self) -> Any:  # pragma: no cover - provided by the store
        raise NotImplementedError

    def has_tables(self) -> bool:  # pragma: no cover - provided by the store
        """Whether the database holds the tracker's tables yet."""
        raise NotImplementedError

    def _init_connection(self, conn: Any) -> None:
        self._conn = conn
        self._conn_lock = threading.Lock()

    @property
    def conn(self) -> Any:
        """A live connection (a new one when the last was closed or broken)."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            with self._conn_lock:
                conn = self._conn
                if conn is None or conn.closed or conn.broken:
                    try:
                        conn = self._conn = self._open_connection()
                    except TrackerError as exc:
                        raise StoreUnavailable(str(exc)) from None
        return conn

    @conn.setter
    def conn(self, value: Any) -> None:
        self._conn = value

    def _error(self, exc: BaseException) -> TrackerError:
        """The one-line error of a failed read: :class:`StoreUnavailable` when the connection is gone."""
        import psycopg

        conn = self._conn
        lost = isinstance(exc, psycopg.OperationalError) or conn is None or conn.closed or conn.broken
        text = one_line(self.url, exc)
        if lost:
            if conn is not None and not conn.closed:
                try:
                    conn.close()  # the next read connects again
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass
            return StoreUnavailable(f"the team database {redact_url(self.url)} cannot be reached: {text} "
                                    "(the next request connects again)")
        return TrackerError(f"reading {redact_url(self.url)} failed: {text}")

    def _fetch(self, sql: str, params: tuple | list = (), *, binary: bool = False) -> list[tuple]:
        import psycopg

        try:
            with self.conn.cursor(binary=binary) as cur:
                cur.execute(sql, params)
                return cur.fetchall()
        except psycopg.Error as exc:
            raise self._error(exc) from None

    # --- what the dashboard and the CLI ask of a store --------------------------------------

    def figures(self, run_ids: list[str] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """``{run_id: metric_stats}``: per run, per metric count, first, last, min, max and their steps."""
        from tracker.read.index.stats import combine_stats

        if not self.has_tables():
            return {}
        where = " WHERE run_id = ANY(%s)" if run_ids is not None else ""
        rows = self._fetch(f"SELECT run_id, writer, figures::text FROM tracker_writer_figures{where}",
                           (list(run_ids),) if run_ids is not None else ())
        by_run: dict[str, list[tuple[str, bytes]]] = {}
        for rid, writer, text in rows:
            by_run.setdefault(rid, []).append((writer + ".jsonl", text))
        out = {}
        for rid, writers in by_run.items():
            writers.sort()
            per = []
            for _, text in writers:
                figs = orjson.loads(text)
                per.append(decode_nonfinite(figs) if ('"NaN"' in text or 'Infinity"' in text) else figs)
            out[rid] = combine_stats(per)
        return out

    def catalog(self, project: str | None = None, status: str | None = None,
                tag: str | None = None, *, group: str | None = None, job_type: str | None = None) -> list[Any]:
        """Every run's info and per-metric figures (what the folder store's catalog gives), newest first.

        The figures are read once, for every run, when the first entry's are asked for
        (a listing without metric columns reads none).
        """
        entries = self._listing() if self.has_tables() else []
        return [e for e in entries if info_matches(e.info, project, status, tag, group, job_type)]

    def _listing(self) -> list[Any]:
        """Every run's entry, newest first; read again only when the database changed (or, while a run
        is running, after :data:`LISTING_TTL` seconds: its writer may have gone silent)."""
        import time

        got = self.change_key()
        key, running = got[:4], got[4]
        cached = getattr(self, "_cached_listing", None)
        now = time.monotonic()
        if cached is not None and cached[0] == key and (not running or now - cached[1] < LISTING_TTL):
            return cached[2]
        infos = self.runs()
        shared = _SharedFigures(self)
        entries = [TeamEntry(info, shared) for info in infos]
        self._cached_listing = (key, now, entries)
        return entries

    def change_key(self) -> tuple[Any, ...]:
        """What moves whenever a sync adds or changes anything: runs, their latest sync, change stamp, writer
        heartbeat, and the number of running writers (``()`` while the database has no tables)."""
        if not self.has_tables():
            return ()
        return tuple(self._fetch(
            "SELECT (SELECT count(*) FROM tracker_runs), (SELECT max(synced_at) FROM tracker_runs), (SELECT max(stamp) "
            "FROM tracker_changes), (SELECT max(seen_at) FROM tracker_writers), (SELECT count(*) FROM tracker_writers "
            "WHERE status = 'running')")[0])

    def run_count(self) -> int:
        """How many runs the database holds."""
        if not self.has_tables():
            return 0
        return int(self._fetch("SELECT count(*) FROM tracker_runs")[0][0])

    def stamps(self, run_ids: list[str] | None = None) -> dict[str, int]:
        """``{run_id: change stamp}``: a stamp moves whenever a sync adds to the run."""
        if not self.has_tables():
            return {}
        where = " WHERE run_id = ANY(%s)" if run_ids is not None else ""
        return dict(self._fetch(f"SELECT run_id, stamp FROM tracker_changes{where}",
                                (list(run_ids),) if run_ids is not None else ()))


class _SharedFigures:
    """Every run's figures, fetched on first need and shared by the entries of one listing."""

    def __init__(self, store: TeamReading) -> None:
        self.store = store
        self.figures: dict[str, dict[str, dict[str, Any]]] | None = None

    def get(self, run_id: str) -> dict[str, dict[str, Any]]:
        if self.figures is None:
            self.figures = self.store.figures()
        return self.figures.get(run_id, {})


class TeamEntry(CatalogEntry):
    """A catalog entry of the team database: its figures come from the listing's shared read."""

    __slots__ = ("_shared",)

    def __init__(self, info: RunInfo, shared: _SharedFigures) -> None:
        super().__init__(info, None, {})
        self._shared = shared

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        """Per metric count, first, last, min, max and their steps."""
        if self._metrics is None:
            self._metrics = self._shared.get(self.info.id)
        return self._metrics

    @property
    def finite(self) -> bool:
        """Whether the info holds no NaN or infinity.

        Read from JSON, only ``last_metrics``, ``config`` and ``summary`` are decoded back to floats
        (the other fields keep the strings the store writes), so only their values are looked at.
        """
        if self._finite is None:
            from tracker.core.format import nonfinite_paths

            info = self.info
            self._finite = all(v - v == 0.0 for v in info.last_metrics.values() if type(v) is float) \
                and not nonfinite_paths(info.config) and not nonfinite_paths(info.summary)
        return self._finite


def _steps(raw: bytes | None, step0: int | None, by: int | None, n: int) -> Any:
    """A chunk's steps: written out, or from its first step and stride."""
    import numpy as np

    if raw is not None:
        return np.frombuffer(raw, "<i8", n)
    return np.int64(step0) + np.int64(by or 0) * np.arange(n, dtype=np.int64)


def _writer_order(writer: str) -> str:
    # The folder store orders a run's segments by file name, <writer>.jsonl.
    return writer + ".jsonl"


class TeamRunReading:
    """The run-level reads of the team database (mixed into ``TeamRunView``)."""

    id: str
    store: Any
    info: RunInfo

    def metric_stats(self) -> dict[str, dict[str, Any]]:
        """Per metric: ``count``, ``first``, ``last``, ``min``, ``max`` and their steps (as over a folder)."""
        return self.store.figures([self.id]).get(self.id, {})

    def schemas(self) -> list[str]:
        """The schema names present in the run, in order of first appearance (from the writers' figures)."""
        rows = self.store._fetch("SELECT schemas::text FROM tracker_writer_figures WHERE run_id = %s", (self.id,))
        first: dict[str, float] = {}
        for (text,) in rows:
            for name, (_, t) in orjson.loads(text).items():
                first[name] = min(first.get(name, t), t)
        return sorted(first, key=lambda k: first[k])

    def metric_columns(self, names: list[str] | None = None, since: dict[str, int] | None = None, *,
                       times: bool = True) -> tuple[dict[str, Any], dict[str, int]]:
        """The ``metrics`` records as columns in log order, and the cursor after them.

        :param names: only these metrics (``step`` and ``time`` always).
        :param since: a cursor returned before: only the records after it.
        :param times: whether the caller needs ``time``; without it, a run of one writer
            (whose order needs no times) is read without them and ``time`` is left out.
        :returns: ``({"step", "time", name: ...}, cursor)``; the cursor holds each
            writer's count of ``metrics`` records read.
        """
        import numpy as np

        from tracker.core.summary import MISSING
        from tracker.read.columns import merge_columns

        since = since or {}
        if not times:
            got = self.store._fetch("SELECT count(DISTINCT writer) FROM tracker_metric_chunks WHERE run_id = %s",
                                    (self.id,))
            times = got[0][0] > 1  # several writers: their records are ordered by time
        rows = self.store._fetch("SELECT writer, start, n, names, steps, step0, step_by, "
                                 + ("times" if times else "NULL::bytea") + " FROM tracker_metric_chunks "
                                 "WHERE run_id = %s ORDER BY writer, start", (self.id,), binary=True)
        chunks = [(w, int(s), int(n), names_, _steps(st, s0, by, int(n)), tm)
                  for w, s, n, names_, st, s0, by, tm in rows if s + n > since.get(w, 0)]
        cursor = dict(since)
        for w, s, n, *_ in rows:
            cursor[w] = max(cursor.get(w, 0), int(s) + int(n))
        # Names in order of first appearance (by writer, as the folder's segments), as metrics() gives them.
        wanted: dict[str, None] = {}
        for _w, _, _, names_, _, _ in sorted(chunks, key=lambda c: (_writer_order(c[0]), c[1])):
            for k in names_:
                if names is None or k in names:
                    wanted.setdefault(k, None)
        values: dict[tuple[str, int], dict[str, bytes]] = {}
        if chunks and wanted:
            starts = sorted({s for _, s, *_ in chunks})
            vrows = self.store._fetch("SELECT writer, start, name, vals FROM tracker_metric_values "
                                      "WHERE run_id = %s AND name = ANY(%s) AND start >= %s",
                                      (self.id, list(wanted), starts[0]), binary=True)
            for w, s, name, vals in vrows:
                values.setdefault((w, int(s)), {})[name] = vals
        per_writer: dict[str, list[tuple[int, int, Any, Any, dict[str, bytes]]]] = {}
        for w, s, n, _, st, tm in chunks:
            per_writer.setdefault(w, []).append((s, n, st, tm, values.get((w, s), {})))
        parts = []
        for w in sorted(per_writer, key=_writer_order):
            skip0 = since.get(w, 0)
            steps, tms, cols_parts = [], [], {k: [] for k in wanted}
            for s, n, st, tm, vals in per_writer[w]:
                cut = max(0, skip0 - s)
                steps.append(st[cut:])
                if tm is not None:
                    tms.append(np.frombuffer(tm, "<f8", n)[cut:])
                for k, acc in cols_parts.items():
                    raw = vals.get(k)
                    acc.append(np.frombuffer(raw, "<f8", n)[cut:] if raw is not None and len(raw) >= 8 * n
                               else np.full(n - cut, MISSING))
            step = np.concatenate(steps).astype(np.int64, copy=False) if steps else np.zeros(0, np.int64)
            if not step.size:
                continue
            cols = {"step": step}
            if times:
                cols["time"] = np.concatenate(tms).astype(np.float64, copy=False)
            for k, acc in cols_parts.items():
                col = np.concatenate(acc).astype(np.float64, copy=False)
                if (col.view(np.uint64) == np.float64(MISSING).view(np.uint64)).all():
                    # A metric this writer never logged: left out, so that merging orders the names by the
                    # writer that logged each first (by time), as over a folder, not by the writers' ids.
                    continue
                cols[k] = col
            parts.append((cols, int(step.size)))
        if times:
            merged, _ = merge_columns(parts)
        else:  # one writer: its records in its own order
            merged = parts[0][0] if parts else {"step": np.zeros(0, np.int64)}
        if names is not None:
            for k in names:
                if k in wanted and k not in merged and merged["step"].size:
                    merged[k] = np.full(merged["step"].size, MISSING)
        return merged, cursor

    def metrics(self) -> dict[str, Any]:
        """``{"step": ..., "time": ..., name: ...}``, one entry per ``metrics`` record, in log order."""
        cols, _ = self.metric_columns()
        return cols

    def records_after(self, cursor: dict[str, int], schema: str | None = None) -> tuple[list[Record], dict[str, int]]:
        """The records each writer logged after sequence number ``cursor[writer]``, in log order, and the new cursor.

        What ``tracker tail -f`` prints as the sync brings a run's new records.
        """
        import psycopg

        sql = ("SELECT step, time, schema, data::text, writer, seq FROM tracker_events WHERE run_id = %s "
               "AND kind = %s")
        params: list[Any] = [self.id, RECORD]
        if schema is not None:
            sql += " AND schema = %s"
            params.append(schema)
        if cursor:
            sql += " AND NOT (writer = ANY(%s) AND seq <= (%s::jsonb ->> writer)::bigint)"
            params += [list(cursor), orjson.dumps(cursor).decode()]
        sql += " ORDER BY time, writer, seq"
        out: list[Record] = []
        new = dict(cursor)
        host = self.store.host
        try:
            with self.store.conn.cursor() as cur:
                cur.execute(sql, params)
                for step, t, name, text, writer, seq in cur.fetchall():
                    data = orjson.loads(text)
                    if '"NaN"' in text or 'Infinity"' in text:
                        compiled = host.schemas.get(name)
                        data = compiled.decode(data) if compiled is not None else decode_nonfinite(data)
                    out.append(Record(step, t, name, data, writer, seq))
                    new[writer] = max(new.get(writer, 0), int(seq))
        except psycopg.Error as exc:
            raise self.store._error(exc) from None
        return out, new

    def writers_seen(self) -> list[dict[str, Any]]:
        """The run's writers as the database has them (what a crashed run's page names), in segment order:
        id, host, process, the time of each one's last line, its bytes synced."""
        rows = self.store._fetch("SELECT writer, ended_at, synced_bytes FROM tracker_writers "
                                 "WHERE run_id = %s AND is_writer ORDER BY writer", (self.id,))
        out = []
        for writer, last, size in rows:
            host, _, _ = writer.rpartition("-")
            host, _, pid = host.rpartition("-")
            out.append({"writer": writer, "host": host or None, "pid": int(pid) if pid.isdigit() else None,
                        "last_written": last, "bytes": int(size)})
        return out

    def stamp(self) -> int:
        """The run's change stamp (moves whenever a sync adds to the run)."""
        return self.store.stamps([self.id]).get(self.id, 0)


__all__ = ["TeamReading", "TeamRunReading", "one_line"]
