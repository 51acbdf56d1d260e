"""The team store on PostgreSQL, read: :class:`TeamStore` and :class:`TeamRunView`, the folder store's reading API.

``tracker sync`` (:mod:`tracker.team.sync`) and the store's follower write
the database; its tables, its URL and connections are those of
:mod:`tracker.team.database`, whose names (``connect``, ``mask_url``,
``LAYOUT``...) and ``sync`` are importable from here too, as they were before
those modules were split out. Tables, indexes and how a team uses them:
docs/team.md.

Credentials come from the URL, the ``PG*`` environment variables or a
``.pgpass`` file (libpq reads them); a password is never printed: messages
show the URL with it masked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson

from tracker.core.errors import RunNotFound
from tracker.core.format import RECORD, decode_nonfinite, restore_nonfinite
from tracker.core.records import Problem, Record, RunInfo, label_from_tags
from tracker.query._core import run_status
from tracker.read.protocol import RecordsRunMixin
from tracker.read.reader import LazyHost
from tracker.team.database import (
    DDL,
    EDITS_DDL,
    EDITS_STATUS,
    EDITS_TABLE,
    FREE_FORM,
    INSTALL_HINT,
    LAYOUT,
    NONFINITE,
    SCHEMES,
    check_layout,
    connect,
    is_team_url,
    mask_url,
    require_psycopg,
)
from tracker.team.reading import TeamReading, TeamRunReading
from tracker.team.sync import BATCH, Syncer, SyncReport, sync
from tracker.write.artifact_methods import ArtifactMethods, RunArtifactMethods

_SPECIAL = (b'"NaN"', b'Infinity"')


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
        psycopg = require_psycopg()
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
        # Sorted here, by code point as a folder's are (the database's collation may order otherwise).
        return sorted(r[0] for r in self._query("SELECT run_id FROM tracker_runs"))

    def _infos(self, run_id: str | list[str] | None = None) -> list[RunInfo]:
        if not self.has_tables():
            return []
        if isinstance(run_id, list):
            one, params = " WHERE run_id = ANY(%s)", (run_id,)
        else:
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
            nonfinite = raw.get(NONFINITE) if isinstance(raw.get(NONFINITE), dict) else {}
            for k in FREE_FORM:
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

    def runs(self, project: str | None = None, status: str | None = None, tag: str | list[str] | None = None, *,
             q: str | None = None, group: str | None = None, job_type: str | None = None, sort: str | None = None,
             limit: int | None = None, cursor: str | None = None, offset: int | None = None) -> list[RunInfo]:
        """Runs' infos, newest first (or in ``sort``'s order), filtered; a page of them with ``limit``.

        Filters, sort keys and cursors as for :meth:`tracker.Store.runs`, answered in SQL with keyset
        pages (:mod:`tracker.team.listing`). Returns a :class:`~tracker.read.listing.RunPage`: a list, with
        ``total`` and ``next``.
        """
        from tracker.read.listing import RunFilter, RunPage, parse_sort
        from tracker.team.listing import page_ids

        key = parse_sort(sort)
        flt = RunFilter.of(project, status, tag, q, group, job_type)
        if not self.has_tables():
            from tracker.read.listing import check_page

            check_page(limit, offset, cursor)
            return RunPage([], 0, None)
        ids, total, nxt = page_ids(self, flt, key, limit, cursor, offset, self._timeout)
        by_id = {i.id: i for i in self._infos(ids)} if ids else {}
        return RunPage([by_id[i] for i in ids if i in by_id], total, nxt)

    def run_order(self, project: str | None = None, status: str | None = None, tag: str | list[str] | None = None,
                  *, q: str | None = None, group: str | None = None, job_type: str | None = None,
                  sort: str | None = None) -> tuple[list[str], list[tuple[int, float, str, str]]]:
        """Every run id the filters keep in ``sort``'s order, with their order keys: what a server keeps to
        answer the pages of a sort no index serves (:func:`tracker.read.listing.page_entries`)."""
        from tracker.read.listing import RunFilter, parse_sort
        from tracker.team.listing import page_ids

        if not self.has_tables():
            return [], []
        keys: list[tuple[int, float, str, str]] = []
        ids, _, _ = page_ids(self, RunFilter.of(project, status, tag, q, group, job_type), parse_sort(sort), None,
                             None, None, self._timeout, keys)
        return ids, keys

    def infos_of(self, run_ids: list[str]) -> list[RunInfo]:
        """The infos of ``run_ids``, in that order (a run no longer there is left out)."""
        by_id = {i.id: i for i in self._infos(list(run_ids))} if run_ids else {}
        return [by_id[i] for i in run_ids if i in by_id]

    def run_choices(self) -> dict[str, Any]:
        """What a runs list's filters and columns offer: projects, tags, statuses, groups, job types, config keys,
        metric names, the default metric column (:func:`tracker.read.listing.choices`), from SQL."""
        from tracker.team.listing import choices_sql

        if not self.has_tables():
            from tracker.read.listing import choices

            return choices([])
        return choices_sql(self)

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
        psycopg = require_psycopg()
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


class TeamRunView(TeamRunReading, RunArtifactMethods, RecordsRunMixin):
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
        psycopg = require_psycopg()
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


def open_team_store(url: str, host: Any = None, *, timeout: float | None = None) -> TeamStore:
    """Open the team database at ``url`` for reading (the reading API of :func:`tracker.open_store`).

    :param timeout: seconds a connection attempt or a round trip may take (default: ``[team] timeout``).
    """
    return TeamStore(url, host=host, timeout=timeout)


__all__ = ["BATCH", "DDL", "EDITS_DDL", "EDITS_STATUS", "EDITS_TABLE", "INSTALL_HINT", "LAYOUT", "SCHEMES",
           "SyncReport", "Syncer", "TeamRunView", "TeamStore", "check_layout", "connect", "is_team_url", "mask_url",
           "open_team_store", "sync"]
