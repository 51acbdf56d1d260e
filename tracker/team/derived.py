"""Derived data of the team database: metric columns by run and name, per-writer figures, change stamps.

``tracker_events`` stays the only truth; these tables are written in the same
transaction as the events they derive from (so they never disagree with
them) and let readers answer without parsing JSON per record:

- ``tracker_metric_chunks`` / ``tracker_metric_values``: the ``metrics``
  records of each writer as binary columns (int64 steps, float64 times and
  one float64 column per metric name, :data:`tracker.MISSING` where a record
  lacks it), in chunks of up to :data:`CHUNK` records, so a chart of a
  million-step run reads a few megabytes instead of a million JSON rows
  (steps that go up by one stride, as in most training loops, are kept as
  their first step and stride: ``steps`` is NULL);
- ``tracker_writer_figures``: per writer, the per-metric figures of
  :meth:`tracker.RunView.metric_stats` (count, first, last, min, max and
  their steps) and its log-order key, combined across writers as the folder
  store combines its segments', and its records per schema with the time
  of the first (``schemas()`` without a scan of the run's events);
- ``tracker_changes``: a stamp per run, from one sequence, taken by every
  commit that adds to the run: a live page asks whether it moved.

Layout 2 adds them; :func:`migrate_to_2` creates and fills them from the events of
a layout-1 database (run by ``tracker sync`` under its creation lock). Layout 3
adds the runs' ``run_group`` and ``job_type`` columns to ``tracker_runs``
(:func:`migrate_to_3` fills them from the runs' infos, 0.4's ``group:<x>`` tags included).
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

import attrs
import orjson

from tracker.core.format import METRICS, decode_nonfinite, encode_nonfinite

#: Metrics records per stored chunk: a writer's last chunk grows until it holds this many.
CHUNK = 65_536

DDL_2 = [
    """CREATE TABLE tracker_metric_chunks (
        run_id text NOT NULL,
        writer text NOT NULL,
        start bigint NOT NULL,
        n integer NOT NULL,
        last_seq bigint NOT NULL,
        names text[] NOT NULL,
        step0 bigint,
        step_by bigint,
        steps bytea,
        times bytea NOT NULL,
        PRIMARY KEY (run_id, writer, start))""",
    """CREATE TABLE tracker_metric_values (
        run_id text NOT NULL,
        name text NOT NULL,
        writer text NOT NULL,
        start bigint NOT NULL,
        vals bytea NOT NULL,
        PRIMARY KEY (run_id, name, writer, start))""",
    """CREATE TABLE tracker_writer_figures (
        run_id text NOT NULL,
        writer text NOT NULL,
        metrics bigint NOT NULL DEFAULT 0,
        max_time double precision,
        figures json NOT NULL,
        schemas json NOT NULL,
        PRIMARY KEY (run_id, writer))""",
    # Stored as they are (no compression): a chart reads megabytes of floats that would barely compress.
    "ALTER TABLE tracker_metric_chunks ALTER COLUMN steps SET STORAGE EXTERNAL, "
    "ALTER COLUMN times SET STORAGE EXTERNAL",
    "ALTER TABLE tracker_metric_values ALTER COLUMN vals SET STORAGE EXTERNAL",
    "CREATE SEQUENCE tracker_change_seq",
    """CREATE TABLE tracker_changes (
        run_id text PRIMARY KEY,
        stamp bigint NOT NULL)""",
]


def _numpy() -> Any:
    import numpy as np

    return np


def part_of(rows: list[tuple]) -> Any:
    """The ``metrics`` records among event rows ``(run, writer, seq, kind, schema, step, time, data)`` as a part.

    Built by the index's own :class:`~tracker.read.index.build.MetricsPart`, so
    values, type codes and missing metrics are what a folder's derived columns hold.
    """
    from tracker.read.index.build import MetricsPart
    from tracker.read.index.segments import SchemaCols

    part = MetricsPart()
    loads = orjson.loads
    for row in rows:
        if row[3] != "record" or row[4] != METRICS or row[5] is None:
            continue
        data = row[7]
        data = loads(data) if isinstance(data, (str, bytes)) else data
        if not isinstance(data, dict) or not part.add(data):
            continue
        part.steps.append(int(row[5]))
        part.times.append(float(row[6]))
        part.seqs.append(int(row[2]))
        part.lines.append(len(part.lines) + 1)
    return SchemaCols.from_part(part) if len(part.steps) else None


def _combine_writer(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One writer's figures followed by those of its next records (keys never go down within a writer)."""
    out = {k: dict(v) for k, v in old.items()}
    for name, s in new.items():
        cur = out.get(name)
        if cur is None:
            out[name] = dict(s)
            continue
        cur["count"] += s["count"]
        cur.update(last=s["last"], last_step=s["last_step"], last_key=s["last_key"])
        if s["min"] is not None and (cur["min"] is None or s["min"] < cur["min"]):
            cur.update(min=s["min"], min_step=s["min_step"], min_key=s["min_key"])
        if s["max"] is not None and (cur["max"] is None or s["max"] > cur["max"]):
            cur.update(max=s["max"], max_step=s["max_step"], max_key=s["max_key"])
    return out


def add_batch(cur: Any, run_id: str, writer: str, rows: list[tuple]) -> None:
    """Derive what ``rows`` (events of one writer, about to be inserted) add; call inside their transaction.

    Takes a lock per writer so that two syncs of the same segment derive each
    record once: only the records after the sequence number the database had
    synced (committed by whoever held the lock before) are added.
    """
    cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s), hashtext(%s))", (run_id, writer))
    cur.execute("SELECT synced_seq FROM tracker_writers WHERE run_id = %s AND writer = %s", (run_id, writer))
    got = cur.fetchone()
    done = int(got[0]) if got is not None else 0
    add_batch_fresh(cur, run_id, writer, [r for r in rows if r[2] > done])


def _stride(steps: Any) -> int | None:
    """The stride of ``steps`` when they go by one (``None``: they do not, or there is only one)."""
    np = _numpy()
    if steps.size < 2:
        return None
    d = np.diff(steps)
    return int(d[0]) if (d == d[0]).all() else None


def _add_columns(cur: Any, run_id: str, writer: str, count: int, part: Any) -> None:
    """Append the part's columns to the writer's last chunk while it has room, else start a new one."""
    from tracker.core.summary import MISSING

    np = _numpy()
    cur.execute("SELECT start, n, names, step0, step_by, steps IS NULL FROM tracker_metric_chunks "
                "WHERE run_id = %s AND writer = %s ORDER BY start DESC LIMIT 1", (run_id, writer))
    last = cur.fetchone()
    n = part.n
    last_seq = int(part.seq[-1])
    new_steps = part.step.astype("<i8")
    if last is not None and last[1] + n <= CHUNK:
        start, old_n, old_names = int(last[0]), int(last[1]), list(last[2])
        names = old_names + [k for k in part.cols if k not in old_names]
        step0, by, ranged = last[3], last[4], last[5]
        if ranged:
            by = by if by is not None else int(new_steps[0]) - int(step0)
            if (new_steps == step0 + by * (old_n + np.arange(n, dtype=np.int64))).all():
                step_sql, step_args = "step_by = %s", [by]
            else:  # the steps stop going by one stride: written out from here on
                old = (step0 + (last[4] or 0) * np.arange(old_n, dtype=np.int64)).astype("<i8")
                step_sql, step_args = "step0 = NULL, step_by = NULL, steps = %s", [old.tobytes() + new_steps.tobytes()]
        else:
            step_sql, step_args = "steps = steps || %s", [new_steps.tobytes()]
        cur.execute(f"UPDATE tracker_metric_chunks SET n = n + %s, last_seq = %s, names = %s, {step_sql}, "  # noqa: S608
                    "times = times || %s WHERE run_id = %s AND writer = %s AND start = %s",
                    (n, last_seq, names, *step_args, part.time.astype("<f8").tobytes(), run_id, writer, start))
        pad_new = np.full(n, MISSING, "<f8").tobytes()
        pad_old = np.full(old_n, MISSING, "<f8").tobytes()
        for name in names:
            col = part.cols.get(name)
            vals = col.astype("<f8").tobytes() if col is not None else pad_new
            if name in old_names:
                cur.execute("UPDATE tracker_metric_values SET vals = vals || %s WHERE run_id = %s AND name = %s "
                            "AND writer = %s AND start = %s", (vals, run_id, name, writer, start))
            else:
                cur.execute("INSERT INTO tracker_metric_values (run_id, name, writer, start, vals) "
                            "VALUES (%s, %s, %s, %s, %s)", (run_id, name, writer, start, pad_old + vals))
        return
    chunk, values = _new_chunk(run_id, writer, count, part)
    cur.execute(_CHUNK_INSERT, chunk)
    cur.executemany(_VALUES_INSERT, values)


#: A writer's figures row (:func:`add_batch_fresh`).
_FIGURES_INSERT = ("INSERT INTO tracker_writer_figures (run_id, writer, metrics, max_time, figures, schemas) "
                   "VALUES (%s, %s, %s, %s, %s, %s)")


#: A new chunk of a writer's metric columns, and its values per metric name.
_CHUNK_INSERT = ("INSERT INTO tracker_metric_chunks (run_id, writer, start, n, last_seq, names, step0, step_by, "
                 "steps, times) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
_VALUES_INSERT = "INSERT INTO tracker_metric_values (run_id, name, writer, start, vals) VALUES (%s, %s, %s, %s, %s)"


def _schema_counts(recs: list[tuple]) -> dict[str, list[Any]]:
    """Per schema of record rows: ``[count, time of the first]``."""
    counts: dict[str, list[Any]] = {}
    for r in recs:
        c = counts.get(r[4])
        if c is None:
            counts[r[4]] = [1, float(r[6])]
        else:
            c[0] += 1
            c[1] = min(c[1], float(r[6]))
    return counts


def _new_chunk(run_id: str, writer: str, start: int, part: Any) -> tuple[tuple, list[tuple]]:
    """The parameters of :data:`_CHUNK_INSERT` and of :data:`_VALUES_INSERT` for a chunk starting at ``start``."""
    n = part.n
    new_steps = part.step.astype("<i8")
    by = _stride(new_steps)
    ranged = n == 1 or by is not None
    chunk = (run_id, writer, start, n, int(part.seq[-1]), list(part.cols), int(new_steps[0]) if ranged else None,
             by if ranged else None, None if ranged else new_steps.tobytes(), part.time.astype("<f8").tobytes())
    return chunk, [(run_id, name, writer, start, col.astype("<f8").tobytes()) for name, col in part.cols.items()]


def copy_rows(cur: Any, target: str, rows: list[tuple]) -> None:
    """``COPY target FROM STDIN`` of ``rows``: plain inserts of many rows in one statement.

    A row that is there already fails the statement (as a plain ``INSERT`` would), and layout 5's triggers
    (:mod:`tracker.team.sortvalues`, once per statement over the rows it wrote) derive them all in one pass.
    """
    with cur.copy(f"COPY {target} FROM STDIN") as cp:
        for row in rows:
            cp.write_row(row)


#: The ``COPY`` targets of :func:`write_new_writers`.
_FIGURES_COPY = "tracker_writer_figures (run_id, writer, metrics, max_time, figures, schemas)"
_CHUNKS_COPY = "tracker_metric_chunks (run_id, writer, start, n, last_seq, names, step0, step_by, steps, times)"
_VALUES_COPY = "tracker_metric_values (run_id, name, writer, start, vals)"


@attrs.define
class NewWriterRows:
    """What :func:`write_new_writers` inserts for writers the database has nothing of (:func:`new_writer_rows`)."""

    #: the runs whose change stamps move, sorted
    runs: list[str] = attrs.Factory(list)
    #: rows of ``tracker_writer_figures``, ``tracker_metric_chunks`` and ``tracker_metric_values``
    figures: list[tuple] = attrs.Factory(list)
    chunks: list[tuple] = attrs.Factory(list)
    values: list[tuple] = attrs.Factory(list)


def new_writer_rows(writers: list[tuple[str, str, list[tuple]]]) -> NewWriterRows:
    """The derived rows of writers the database has nothing of yet: each item is ``(run_id, writer, rows)``
    (event rows, whose ``data`` may be the parsed object itself). No database: a caller may derive them
    while another batch is being written."""
    out = NewWriterRows(runs=sorted({w[0] for w in writers}))
    for run_id, writer, rows in writers:
        recs = [r for r in rows if r[3] == "record"]
        if not recs:
            continue
        schemas = {name: [n, first] for name, (n, first) in _schema_counts(recs).items()}
        derived = _plain_metrics(run_id, writer, recs) or _metrics(run_id, writer, recs)
        count, top, figures, chunk, vals = derived
        if chunk is not None:
            out.chunks.append(chunk)
            out.values.extend(vals)
        out.figures.append((run_id, writer, count, top, orjson.dumps(encode_nonfinite(figures)).decode(),
                            orjson.dumps(schemas).decode()))
    return out


def _metrics(run_id: str, writer: str, recs: list[tuple]) -> tuple[int, float | None, dict, tuple | None, list]:
    """A new writer's metrics records (among record rows ``recs``) as :func:`new_writer_rows` writes them: their
    count, latest time, figures (:func:`~tracker.read.index.segments.metric_stats`), chunk and values."""
    from tracker.read.index.segments import metric_stats

    part = part_of(recs)
    if part is None:
        return 0, None, {}, None, []
    chunk, vals = _new_chunk(run_id, writer, 0, part)
    return part.n, float(_numpy().max(part.time)), metric_stats(part), chunk, vals


def _plain_metrics(run_id: str, writer: str,
                   recs: list[tuple]) -> tuple[int, float | None, dict, tuple | None, list] | None:
    """:func:`_metrics` without numpy for the common case, where it costs most per record (a lab's many small
    runs): every ``metrics`` record holds the same names, in the same order, all floats. ``None`` otherwise.

    The same figures: ``count`` every record, ``first`` and ``last`` the ends, ``min`` and ``max`` at the first
    record that has them (no NaN: a float read from JSON is finite), keys the running maximum of time.
    """
    mets = [r for r in recs if r[4] == METRICS and r[5] is not None]
    if not mets:
        return None
    first = mets[0][7]
    if type(first) is not dict or not first:
        return None
    names = tuple(first)
    cols: list[list[float]] = [[] for _ in names]
    for r in mets:
        data = r[7]
        if type(data) is not dict or tuple(data) != names:
            return None
        for col, v in zip(cols, data.values(), strict=True):
            if type(v) is not float:
                return None
            col.append(v)
    n = len(mets)
    steps = [int(r[5]) for r in mets]
    times = [float(r[6]) for r in mets]
    keys = []
    key = times[0]
    for t in times:
        key = t if t > key else key
        keys.append(key)
    figures = {}
    at = range(n)
    for name, vals in zip(names, cols, strict=True):
        lo, hi = min(at, key=vals.__getitem__), max(at, key=vals.__getitem__)
        figures[name] = {
            "count": n, "first": vals[0], "first_step": steps[0], "first_key": keys[0],
            "last": vals[-1], "last_step": steps[-1], "last_key": keys[-1],
            "min": vals[lo], "min_step": steps[lo], "min_key": keys[lo],
            "max": vals[hi], "max_step": steps[hi], "max_key": keys[hi]}
    by = steps[1] - steps[0] if n > 1 else None
    if by is not None and any(b - a != by for a, b in zip(steps, steps[1:], strict=False)):
        by = None
    ranged = n == 1 or by is not None
    chunk = (run_id, writer, 0, n, int(mets[-1][2]), list(names), steps[0] if ranged else None,
             by if ranged else None, None if ranged else _le(array("q", steps)), _le(array("d", times)))
    return n, max(times), figures, chunk, [(run_id, name, writer, 0, _le(array("d", vals)))
                                           for name, vals in zip(names, cols, strict=True)]


def _le(values: array) -> bytes:
    """The bytes of ``values`` in little-endian order (what ``astype("<f8").tobytes()`` gives)."""
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


def write_new_writers(cur: Any, rows: NewWriterRows) -> None:
    """Insert :func:`new_writer_rows`: a statement per table, whatever the number of writers.

    Plain inserts (no ``ON CONFLICT``): a writer that another sync has added meanwhile makes the transaction
    fail, and the caller copies those runs the careful way (:func:`add_batch`). The caller holds each
    writer's advisory lock (:func:`lock_writers`).
    """
    if rows.runs:
        cur.execute("INSERT INTO tracker_changes (run_id, stamp) SELECT r, nextval('tracker_change_seq') "
                    "FROM unnest(%b::text[]) AS r ON CONFLICT (run_id) DO UPDATE SET stamp = EXCLUDED.stamp",
                    (rows.runs,))
    for target, params in ((_FIGURES_COPY, rows.figures), (_CHUNKS_COPY, rows.chunks),
                           (_VALUES_COPY, rows.values)):
        if params:
            copy_rows(cur, target, params)


def lock_writers(cur: Any, pairs: list[tuple[str, str]]) -> None:
    """Take :func:`add_batch`'s advisory lock of each ``(run_id, writer)``, in one order (no deadlock between
    two syncs taking several), in one statement."""
    pairs = sorted(pairs)
    cur.execute("SELECT count(pg_advisory_xact_lock(hashtext(r), hashtext(w))) FROM (SELECT r, w FROM "
                "unnest(%b::text[], %b::text[]) WITH ORDINALITY AS t(r, w, i) ORDER BY i) x",
                ([p[0] for p in pairs], [p[1] for p in pairs]))


def stamp(cur: Any, run_id: str) -> None:
    """Move the run's change stamp (live pages compare it with the one they last read)."""
    cur.execute("INSERT INTO tracker_changes (run_id, stamp) VALUES (%s, nextval('tracker_change_seq')) "
                "ON CONFLICT (run_id) DO UPDATE SET stamp = EXCLUDED.stamp", (run_id,))


def migrate_to_2(cur: Any) -> None:
    """Layout 1 -> 2: create the derived tables and fill them from the events already stored."""
    for stmt in DDL_2:
        cur.execute(stmt)
    cur.execute("SELECT run_id, writer FROM tracker_writers ORDER BY run_id, writer")
    pairs = cur.fetchall()
    for run_id, writer in pairs:
        # As if synced again from the start: the derived rows of every record, in order, a chunk at a time.
        with cur.connection.cursor(name="tracker_migrate") as events:
            events.execute("SELECT run_id, writer, seq, kind, schema, step, time, data::text FROM tracker_events "
                           "WHERE run_id = %s AND writer = %s AND kind = 'record' ORDER BY seq", (run_id, writer))
            while rows := events.fetchmany(CHUNK):
                add_batch_fresh(cur, run_id, writer, rows)
        stamp(cur, run_id)


def add_batch_fresh(cur: Any, run_id: str, writer: str, rows: list[tuple]) -> None:
    """:func:`add_batch` for rows known to be new (no lock, no check against ``synced_seq``)."""
    stamp(cur, run_id)
    recs = [r for r in rows if r[3] == "record"]
    if not recs:
        return
    np = _numpy()
    from tracker.read.index.segments import metric_stats

    counts = _schema_counts(recs)
    part = part_of(recs)
    cur.execute("SELECT metrics, max_time, figures::text, schemas::text FROM tracker_writer_figures "
                "WHERE run_id = %s AND writer = %s", (run_id, writer))
    got = cur.fetchone()
    count, prev_max, figures, schemas = (int(got[0]), got[1], decode_nonfinite(orjson.loads(got[2])),
                                         orjson.loads(got[3])) if got else (0, None, {}, {})
    for name, (n, first) in counts.items():
        old = schemas.get(name)
        schemas[name] = [n, first] if old is None else [old[0] + n, min(old[1], first)]
    run_max = prev_max
    if part is not None:
        stats = metric_stats(part)
        top = float(np.max(part.time))
        run_max = top if prev_max is None else max(prev_max, top)
        if prev_max is not None:
            for st in stats.values():
                for k in ("first_key", "last_key", "min_key", "max_key"):
                    if st.get(k) is not None:
                        st[k] = max(prev_max, st[k])
        figures = _combine_writer(figures, stats)
    cur.execute(
        _FIGURES_INSERT + """ ON CONFLICT (run_id, writer) DO UPDATE SET metrics = EXCLUDED.metrics,
               max_time = EXCLUDED.max_time, figures = EXCLUDED.figures, schemas = EXCLUDED.schemas""",
        (run_id, writer, count + (part.n if part is not None else 0), run_max,
         orjson.dumps(encode_nonfinite(figures)).decode(), orjson.dumps(schemas).decode()))
    if part is not None:
        _add_columns(cur, run_id, writer, count, part)


def migrate_to_3(cur: Any) -> None:
    """Layout 2 -> 3: ``tracker_runs.run_group`` and ``job_type`` (SQL users filter and group by them), filled
    from each run's synced info, or from the ``group:<x>`` / ``job_type:<x>`` tag 0.4 kept them as."""
    cur.execute("ALTER TABLE tracker_runs ADD COLUMN IF NOT EXISTS run_group text, "
                "ADD COLUMN IF NOT EXISTS job_type text")
    for column, field in (("run_group", "group"), ("job_type", "job_type")):
        cur.execute(f"UPDATE tracker_runs SET {column} = COALESCE(info->>'{field}', "  # noqa: S608 - fixed names
                    f"(SELECT substr(t, {len(field) + 2}) FROM json_array_elements_text("
                    "CASE WHEN json_typeof(info->'tags') = 'array' THEN info->'tags' ELSE '[]'::json END) AS t "
                    f"WHERE t LIKE '{field}:_%' LIMIT 1))")
    cur.execute("CREATE INDEX IF NOT EXISTS tracker_runs_group ON tracker_runs (run_group)")


def migrate_to_4(cur: Any) -> None:
    """Layout 3 -> 4: the runs list's keyset indexes (:func:`tracker.team.listing.migrate_to_4`)."""
    from tracker.team.listing import migrate_to_4 as indexes

    indexes(cur)


def migrate_to_5(cur: Any) -> None:
    """Layout 4 -> 5: each run's sort values, kept by triggers (:func:`tracker.team.sortvalues.migrate_to_5`)."""
    from tracker.team.sortvalues import migrate_to_5 as sort_values

    sort_values(cur)


def migrate_to_6(cur: Any) -> None:
    """Layout 5 -> 6: tags and search text as columns, end and duration as sort values
    (:func:`tracker.team.runtext.migrate_to_6`)."""
    from tracker.team.runtext import migrate_to_6 as run_text

    run_text(cur)


MIGRATIONS = {2: migrate_to_2, 3: migrate_to_3, 4: migrate_to_4, 5: migrate_to_5, 6: migrate_to_6}

__all__ = ["CHUNK", "DDL_2", "MIGRATIONS", "NewWriterRows", "add_batch", "add_batch_fresh",
           "copy_rows", "lock_writers", "migrate_to_2", "migrate_to_3", "migrate_to_4", "migrate_to_5",
           "migrate_to_6", "new_writer_rows", "part_of", "stamp", "write_new_writers"]
