"""The API keys of ``tracker server`` over the team database: tables ``tracker_keys`` and ``tracker_run_owners``.

The same :class:`tracker.remote.keys.KeyStore` as a folder's, kept in two
tables that are made when missing (as ``tracker_edits`` is), so a database
keeps its table layout. Only the SHA-256 of a key's secret is stored.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from tracker.core.errors import StoreUnavailable, TrackerError
from tracker.remote.keyinfo import SCOPES, KeyInfo, KeyStore

#: Seconds a key the team database found valid still opens the server while the database is away.
OUTAGE_GRACE = 600.0
#: Seconds the database is not asked again after it failed to answer (each try would wait for the deadline).
AWAY_PAUSE = 5.0

KEYS_DDL = """CREATE TABLE IF NOT EXISTS tracker_keys (
    id text PRIMARY KEY,
    hash text NOT NULL,
    name text NOT NULL,
    scope text NOT NULL,
    projects json NOT NULL,
    creator text NOT NULL,
    created_at double precision NOT NULL,
    expires_at double precision,
    revoked_at double precision,
    revoked_by text,
    last_used double precision)"""
OWNERS_DDL = """CREATE TABLE IF NOT EXISTS tracker_run_owners (
    run_id text PRIMARY KEY,
    key_id text NOT NULL,
    project text,
    created_at double precision NOT NULL)"""


class DatabaseKeys(KeyStore):
    """The keys of the team database (``postgresql://``): tables ``tracker_keys`` and ``tracker_run_owners``.

    One connection, used under a lock; a lost connection is opened again on the next call. While the
    database is away, a key it found valid within :data:`OUTAGE_GRACE` seconds is still taken (the
    server's spool goes on taking shipped runs); a run's creator, once known, is not asked again.
    """

    def __init__(self, url: str, *, timeout: float | None = None) -> None:
        super().__init__()
        from tracker.team.database import mask_url

        self.url = url
        self.timeout = timeout
        self.where = mask_url(url)
        self._seen: dict[str, tuple[KeyInfo, str, float]] = {}
        self._away_until, self._away_why = 0.0, ""
        self._owners: dict[str, tuple[str, str | None]] = {}
        self._conn: Any = None
        self._db_lock = threading.Lock()
        self._exec("SELECT 1")  # the tables (and a wrong URL) now, not at the first request

    def _connect(self) -> Any:
        from tracker.team.database import connect

        conn = connect(self.url, autocommit=True, timeout=self.timeout)
        with conn.cursor() as cur:
            for ddl in (KEYS_DDL, OWNERS_DDL):
                name = ddl.split()[5]
                cur.execute(f"SELECT to_regclass('{name}') IS NOT NULL")
                if not cur.fetchone()[0]:
                    cur.execute(ddl)
        return conn

    def _exec(self, sql: str, params: tuple = ()) -> list[tuple]:
        from tracker.team.database import error_line, require_psycopg

        psycopg = require_psycopg()
        with self._db_lock:
            if time.monotonic() < self._away_until:  # it failed a moment ago: answer at once, not after a deadline
                raise StoreUnavailable(f"the key store in {self.where} cannot be reached: {self._away_why}")
            for attempt in (0, 1):
                try:
                    if self._conn is None or self._conn.closed or self._conn.broken:
                        self._conn = self._connect()
                    with self._conn.cursor() as cur:
                        cur.execute(sql, params)
                        return cur.fetchall() if cur.description else []
                except psycopg.Error as exc:
                    try:
                        if self._conn is not None:
                            self._conn.close()
                    except Exception:  # noqa: BLE001, S110 - closing a broken connection
                        pass
                    self._conn = None
                    if attempt:
                        self._away(error_line(self.url, exc))
                        raise StoreUnavailable(f"the key store in {self.where} cannot be reached: "
                                               f"{self._away_why}") from None
                except TrackerError as exc:
                    self._conn = None
                    if attempt:
                        self._away(str(exc))
                        raise StoreUnavailable(str(exc)) from None
        return []

    def _away(self, why: str) -> None:
        self._away_until, self._away_why = time.monotonic() + AWAY_PAUSE, why

    def close(self) -> None:
        with self._db_lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception:  # noqa: BLE001, S110 - closing a broken connection
                    pass
                self._conn = None

    @staticmethod
    def _row(row: tuple) -> tuple[KeyInfo, str]:
        kid, digest, name, scope, projects, creator, created, expires, revoked, used = row
        if isinstance(projects, str):
            projects = json.loads(projects)
        return KeyInfo(id=kid, name=name, scope=scope if scope in SCOPES else "read", projects=list(projects or []),
                       creator=creator, created=created, expires=expires, revoked=revoked, last_used=used), digest

    _COLUMNS = "id, hash, name, scope, projects, creator, created_at, expires_at, revoked_at, last_used"

    def _add(self, info: KeyInfo, digest: str) -> None:
        self._exec("INSERT INTO tracker_keys (id, hash, name, scope, projects, creator, created_at, expires_at) "
                   "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                   (info.id, digest, info.name, info.scope, json.dumps(info.projects), info.creator, info.created,
                    info.expires))

    def _get(self, kid: str) -> tuple[KeyInfo, str] | None:
        try:
            rows = self._exec(f"SELECT {self._COLUMNS} FROM tracker_keys WHERE id = %s", (kid,))
        except StoreUnavailable:
            # The database is away: a key it said was valid a moment ago still opens the server (whose
            # spool takes shipped runs meanwhile), for OUTAGE_GRACE seconds after that answer.
            known = self._seen.get(kid)
            if known is not None and time.monotonic() - known[2] < OUTAGE_GRACE:
                return known[0], known[1]
            raise
        if not rows:
            self._seen.pop(kid, None)
            return None
        info, digest = self._row(rows[0])
        self._seen[kid] = (info, digest, time.monotonic())
        return info, digest

    def keys(self) -> list[KeyInfo]:
        return [self._row(r)[0] for r in self._exec(f"SELECT {self._COLUMNS} FROM tracker_keys ORDER BY created_at")]

    def _revoke(self, kid: str, when: float, by: str) -> None:
        self._exec("UPDATE tracker_keys SET revoked_at = %s, revoked_by = %s WHERE id = %s AND revoked_at IS NULL",
                   (when, by, kid))

    def _touch(self, kid: str, when: float) -> None:
        self._exec("UPDATE tracker_keys SET last_used = %s WHERE id = %s", (when, kid))

    def owner(self, run_id: str) -> tuple[str, str | None] | None:
        have = self._owners.get(run_id)  # a run's creator never changes: asked once
        if have is not None:
            return have
        rows = self._exec("SELECT key_id, project FROM tracker_run_owners WHERE run_id = %s", (run_id,))
        if not rows:
            return None
        self._owners[run_id] = (rows[0][0], rows[0][1])
        return self._owners[run_id]

    def _claim(self, run_id: str, kid: str, project: str | None) -> None:
        self._exec("INSERT INTO tracker_run_owners (run_id, key_id, project, created_at) VALUES (%s, %s, %s, %s) "
                   "ON CONFLICT (run_id) DO NOTHING", (run_id, kid, project, time.time()))


__all__ = ["AWAY_PAUSE", "KEYS_DDL", "OUTAGE_GRACE", "OWNERS_DDL", "DatabaseKeys"]
