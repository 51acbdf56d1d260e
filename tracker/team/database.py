"""The team database itself: its URL, a connection whose failure is one line, its tables and their layout.

:func:`connect` opens a connection with the team's deadline (:mod:`tracker.team.connection`) and
turns a failure into one line naming the URL, its password masked. :data:`DDL` and the edit-event
tables (``tracker_edits``, and ``tracker_alias_edits`` of :mod:`tracker.team.registry`, both made by
:func:`edit_table_ddl`) are the tables ``tracker sync`` writes and :class:`~tracker.team.postgres.TeamStore`
reads; :func:`check_layout` creates them, migrates an older layout (:mod:`tracker.team.derived`) or
refuses a newer one. Tables, indexes and how a team uses them: docs/team.md.

Credentials come from the URL, the ``PG*`` environment variables or a
``.pgpass`` file (libpq reads them); a password is never printed: messages
show the URL with it masked.
"""

from __future__ import annotations

import os
import re
from typing import Any

from tracker.core.errors import TrackerError

#: The table layout this version reads and writes; a database with a newer one is refused, an older
#: one is migrated by ``tracker sync`` (tracker/team/derived.py) and named in one line by readers.
#: Layout 3: ``tracker_runs.run_group`` and ``job_type``; layout 4: the runs list's keyset indexes; layout 5: each
#: run's sort values kept by triggers (:mod:`tracker.team.sortvalues`); layout 6: the runs' tags and search text as
#: columns, their end and duration as sort values (:mod:`tracker.team.runtext`).
LAYOUT = 6
INSTALL_HINT = 'pip install "tracker-core[team]"'
SCHEMES = ("postgresql://", "postgres://")
LAYOUT_LOCK = _LOCK_KEY = 0x7472616B  # pg_advisory_xact_lock key while creating the tables ("trak")
#: Fields of a run's info whose strings stay strings, and the key of its stored info (``tracker_runs.info``)
#: that lists the paths of the NaN and infinities among them (as the start event's ``config_nonfinite`` does).
FREE_FORM = ("config", "summary")
NONFINITE = "nonfinite"

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


def edit_table_ddl(table: str) -> str:
    """The ``CREATE TABLE IF NOT EXISTS`` of a table of edit events, keyed as events are (run, segment, sequence).

    ``tracker_edits`` (the runs' edits after the fact) and ``tracker_alias_edits`` (the artifact
    registry's, :mod:`tracker.team.registry`) have this shape.
    """
    return f"""CREATE TABLE IF NOT EXISTS {table} (
    run_id text NOT NULL,
    writer text NOT NULL,
    seq bigint NOT NULL,
    time double precision NOT NULL,
    data json NOT NULL,
    PRIMARY KEY (run_id, writer, seq))"""


def ensure_edit_table(cur: Any, table: str) -> None:
    """Create edit-event table ``table`` when it is not there (:func:`edit_table_ddl`): ``tracker sync``'s role may."""
    cur.execute(f"SELECT to_regclass('{table}') IS NOT NULL")
    if not cur.fetchone()[0]:
        # Two machines syncing into a new database at once: one creates it (a second CREATE TABLE IF NOT
        # EXISTS racing the first fails on PostgreSQL's catalog), under the lock the tables are made under.
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        cur.execute(f"SELECT to_regclass('{table}') IS NOT NULL")
        if not cur.fetchone()[0]:
            cur.execute(edit_table_ddl(table))


#: The runs' edit events (tags, name, notes, config, summary changed after the fact), keyed as events are; made by
#: ``tracker sync`` when it is not there (so a database keeps its layout). How far each edit segment was copied
#: is its row of ``tracker_writers`` (``is_writer`` false, status :data:`EDITS_STATUS`).
EDITS_TABLE = "tracker_edits"
EDITS_DDL = edit_table_ddl(EDITS_TABLE)
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


def require_psycopg() -> Any:
    """The ``psycopg`` module; a TrackerError naming the extra when it is not installed."""
    try:
        import psycopg
    except ImportError:
        raise TrackerError(f"the team store needs psycopg, which is not installed: {INSTALL_HINT}") from None
    return psycopg


def error_line(url: str, exc: BaseException) -> str:
    """``exc`` as one line, the password of ``url`` (and ``PGPASSWORD``) masked."""
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

    psycopg = require_psycopg()
    try:
        return open_connection(url, autocommit=autocommit, timeout=team_timeout() if timeout is None else timeout,
                               exclusive=exclusive)
    except psycopg.Error as exc:
        raise TrackerError(f"cannot connect to {mask_url(url)}: {error_line(url, exc)}") from None


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


__all__ = ["DDL", "EDITS_DDL", "EDITS_STATUS", "EDITS_TABLE", "FREE_FORM", "INSTALL_HINT", "LAYOUT", "NONFINITE",
           "SCHEMES", "check_layout", "connect", "edit_table_ddl", "ensure_edit_table", "error_line", "is_team_url",
           "mask_url", "require_psycopg"]
