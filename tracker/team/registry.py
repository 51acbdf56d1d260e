"""The artifact registry of the team database: versions, aliases and lineage, the same as over the folder.

What runs logged and used are their ``artifact`` and ``artifact_use``
records in ``tracker_events``; alias edits are rows of
``tracker_alias_edits``, copied by ``tracker sync`` from each run's edit
segments with its other edits (keyed like events, by run, edit segment and
sequence number, so a second sync adds nothing) or written there by ``tracker artifact alias`` over
``postgresql://`` (the one write the team store takes besides sync). The
same figures as the folder store's run catalog holds are made from these
rows, and :class:`tracker.read.registry.Registry` numbers them the same way.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from typing import Any

import orjson

from tracker.core.errors import StoreUnavailable, TrackerError
from tracker.core.records import Record
from tracker.read.registry import ALIAS_EDIT, ARTIFACT, Registry, figures
from tracker.team.database import edit_table_ddl, ensure_edit_table

#: The table of alias edits (created by ``tracker sync``, or by the first alias edit over the database).
ALIAS_TABLE = "tracker_alias_edits"
ALIAS_DDL = edit_table_ddl(ALIAS_TABLE)  # keyed as the runs' other edits are (tracker_edits)


def ensure_alias_table(cur: Any) -> None:
    """Create the alias edits table when it is not there (``tracker sync``'s role may)."""
    ensure_edit_table(cur, ALIAS_TABLE)


def add_alias_edits(cur: Any, rows: list[tuple]) -> None:
    """Add the alias edits among edit event rows ``(run, writer, seq, kind, schema, step, time, data)`` that
    ``tracker sync`` copies from a run's edit segments (in its transaction; what is there is skipped)."""
    out = []
    for rid, writer, seq, _kind, _schema, _step, t, text in rows:
        if f'"{ALIAS_EDIT}"' not in text:  # most edits are of tags, names, notes, config or summary
            continue
        a = orjson.loads(text).get(ALIAS_EDIT)
        if isinstance(a, dict):
            out.append((rid, writer, seq, t, orjson.dumps(a).decode()))
    if out:
        ensure_alias_table(cur)
        cur.executemany(f"INSERT INTO {ALIAS_TABLE} (run_id, writer, seq, time, data) VALUES (%s, %s, %s, %s, %s) "
                        "ON CONFLICT DO NOTHING", out)


def _has_alias_table(store: Any) -> bool:
    return bool(store._fetch(f"SELECT to_regclass('{ALIAS_TABLE}') IS NOT NULL")[0][0])


def team_figures(store: Any) -> dict[str, dict[str, Any]]:
    """Per run, the figures :func:`tracker.read.registry.figures` makes from its records and alias edits."""
    if not store.has_tables():
        return {}
    projects = dict(store._fetch("SELECT run_id, project FROM tracker_runs"))
    # Only the runs whose writers logged such records (from the writers' figures), each read by its index.
    rows = store._fetch(
        "SELECT e.run_id, e.writer, e.seq, e.step, e.time, e.schema, e.data::text FROM tracker_events e "
        "WHERE e.run_id IN (SELECT DISTINCT run_id FROM tracker_writer_figures "
        "WHERE (schemas::jsonb) ?| array['artifact', 'artifact_use']) "
        "AND e.kind = 'record' AND e.schema IN ('artifact', 'artifact_use')")
    outs: dict[str, list[Record]] = {}
    uses: dict[str, list[Record]] = {}
    for rid, writer, seq, step, t, schema, text in rows:
        rec = Record(step, float(t), schema, orjson.loads(text), writer, int(seq))
        (outs if schema == ARTIFACT else uses).setdefault(rid, []).append(rec)
    edits: dict[str, list[dict[str, Any]]] = {}
    if _has_alias_table(store):
        rows = store._fetch(f"SELECT run_id, writer, seq, time, data::text FROM {ALIAS_TABLE}")
        for rid, writer, seq, t, text in rows:
            edits.setdefault(rid, []).append({"w": writer, "seq": int(seq), "time": float(t),
                                              "data": {ALIAS_EDIT: orjson.loads(text)}})
    out = {}
    for rid in set(outs) | set(uses) | set(edits):
        order = sorted(outs.get(rid, []), key=lambda r: (r.time, r.writer, r.seq))
        used = sorted(uses.get(rid, []), key=lambda r: (r.time, r.writer, r.seq))
        figs = figures(projects.get(rid), order, used, edits.get(rid, []))
        if figs:
            out[rid] = figs
    return out


def team_registry(store: Any) -> Registry:
    """The registry of team store ``store``, kept while nothing was synced or edited since."""
    key: tuple[Any, ...] = ()
    if store.has_tables():
        key = tuple(store._fetch("SELECT (SELECT max(stamp) FROM tracker_changes), (SELECT count(*) FROM tracker_runs)")
                    [0])
        if _has_alias_table(store):
            key += tuple(store._fetch(f"SELECT count(*), max(time) FROM {ALIAS_TABLE}")[0])
    cached = store.__dict__.get("_registry")
    if cached is not None and cached[0] == key:
        return cached[1]
    registry = Registry(team_figures(store))
    store.__dict__["_registry"] = (key, registry)
    return registry


def write_alias_edit(store: Any, run_id: str, data: dict[str, Any]) -> None:
    """An alias edit written to the team database (a row of ``tracker_alias_edits`` in run ``run_id``).

    :raises TrackerError: one line when the role may not write (the dashboard's read-only role), naming it.
    """
    import psycopg  # the team store is open: psycopg is there

    from tracker.core.urls import redact_url as mask_url
    host = socket.gethostname().replace("-", "_") or "host"
    writer = f"edits-{host}-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        with store.conn.transaction(), store.conn.cursor() as cur:
            ensure_alias_table(cur)
            cur.execute(f"INSERT INTO {ALIAS_TABLE} (run_id, writer, seq, time, data) VALUES (%s, %s, 1, %s, %s)",
                        (run_id, writer, time.time(), orjson.dumps(data[ALIAS_EDIT]).decode()))
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrackerError(f"{mask_url(store.url)}: this role may not write alias edits ({first}); "
                           "use a role that `tracker sync` uses, not the dashboard's read-only one") from None
    except psycopg.OperationalError as exc:
        raise StoreUnavailable(f"{mask_url(store.url)}: {store._error(exc)}") from None
    store.__dict__.pop("_registry", None)


__all__ = ["ALIAS_DDL", "ALIAS_TABLE", "add_alias_edits", "ensure_alias_table", "team_figures", "team_registry",
           "write_alias_edit"]
