"""Layout 5: each run's sort values, kept by PostgreSQL itself, so a first page of any sort walks an index.

``tracker_sort_values`` holds one row per run and sort key: ``config.KEY``
(every key :func:`tracker.read.listing.value_of` finds in the run's config,
nested keys dotted), ``metric.NAME.last|min|max`` (the run's figures combined
across its writers, as the folder store combines its segments'), ``records``,
``last_step``, and ``status``: the run's status as its writers settle it
(a running writer counted as crashed; whether one is running is asked of the
writers at read time, since that depends on the heartbeat timeout and the
clock). Layout 6 adds ``ended_at`` and ``duration`` (the SQL function
``tracker_sort_times``: from the writers and the info; a run with a writer
running has no duration, which is asked at read time too). Each row is the
value's place in the order of :mod:`tracker.read.listing`:
``rank`` (numbers, text, other), ``num`` (a number's value), ``txt`` (a
text's), and a run without the value has no row (missing). The index
``(key, rank, num, txt, run_id)`` in byte order serves every such sort:
the first page of ``-metric.loss.min`` is an index walk of a hundred rows,
whatever the database holds.

Triggers on ``tracker_runs`` (its ``info``), ``tracker_writer_figures`` and
``tracker_writers`` (their statuses and times, not the heartbeats) write the
rows in the transaction that changes what they derive from, so no writer
(``tracker sync``, the follower, a script of SQL) can leave them behind. They
run once per statement, over the rows it wrote (:data:`TRIGGERS`): a sync that
writes a few hundred runs a statement (:func:`tracker.team.derived.copy_rows`)
has them derived in one pass. Two transactions writing the same run derive its
rows one after the other (an advisory lock per bucket of runs).
Texts longer than :data:`TEXT_MAX` characters are kept cut (``cut``), and a
config or figures that PostgreSQL's ``jsonb`` cannot hold (a ``\\u0000``)
gives its run a ``cut`` row named ``config``, ``records``, ``last_step`` or
``metric``: a sort such a row concerns is read from the JSON as before (exact,
a scan). Sort keys longer than :data:`KEY_MAX` characters are not kept (read
from the JSON too).

:func:`migrate_to_5` creates the table, its functions and triggers and fills
it from the runs already there (under ``tracker sync``'s layout lock);
:func:`tracker.team.runtext.migrate_to_6` replaces the functions and adds the
end and duration rows.
"""

from __future__ import annotations

from typing import Any

#: Texts are kept up to this many characters (an index row has room for about 2,700 bytes).
TEXT_MAX = 300
#: Sort keys (``config.lr``) up to this many characters are kept (longer ones are sorted from the JSON).
KEY_MAX = 200

_TABLE = """CREATE TABLE IF NOT EXISTS tracker_sort_values (
    run_id text NOT NULL,
    key text NOT NULL,
    rank smallint NOT NULL,
    num double precision NOT NULL DEFAULT 0,
    txt text COLLATE "C" NOT NULL DEFAULT '',
    cut boolean NOT NULL DEFAULT false,
    PRIMARY KEY (run_id, key))"""

#: Advisory locks of the runs whose rows a trigger derives (``tracker_sort_lock``): a run's is the key
#: ``_LOCK_BASE`` plus a hash of its id modulo ``LOCK_BUCKETS``.
LOCK_BUCKETS = 1024
_LOCK_BASE = 0x736F727400000000

#: What each trigger function runs with: index seeks by run id even while a table is new and its statistics say it
#: is empty (a first sync), and no JIT compilation of a statement that touches a few rows.
_SETTINGS = "\n    SET enable_seqscan = off SET jit = off"

# A JSON value's rank (0 number, 1 text, 2 other, 3 missing) and number, as tracker.read.listing.rank sees the
# value a reader decodes: with ``special``, the store's strings of NaN and infinities are those floats.
_FUNCTIONS = [
    """CREATE OR REPLACE FUNCTION tracker_sort_rank(v jsonb, special boolean) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (CASE jsonb_typeof(v)
        WHEN 'number' THEN 0 WHEN 'boolean' THEN 0
        WHEN 'string' THEN CASE WHEN special AND v #>> '{}' = 'NaN' THEN 2
                                WHEN special AND v #>> '{}' IN ('Infinity', '-Infinity') THEN 0 ELSE 1 END
        WHEN 'array' THEN 2 WHEN 'object' THEN 2 ELSE 3 END)::smallint $$""",
    """CREATE OR REPLACE FUNCTION tracker_sort_num(v jsonb) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(v)
        WHEN 'number' THEN CASE
            WHEN abs(v::numeric) > 1.7976931348623157e308 THEN sign(v::numeric)::float8 * 'Infinity'::float8
            WHEN abs(v::numeric) < 1e-320 THEN 0.0::float8 ELSE v::float8 END
        WHEN 'boolean' THEN CASE WHEN v = 'true'::jsonb THEN 1.0::float8 ELSE 0.0::float8 END
        WHEN 'string' THEN CASE v #>> '{}' WHEN 'Infinity' THEN 'Infinity'::float8
                                           WHEN '-Infinity' THEN '-Infinity'::float8 ELSE 0.0::float8 END
        ELSE 0.0::float8 END $$""",
    # The rows of one run's info: its config's keys (a key holding dots taken whole first, as
    # tracker.read.listing does; a nested object has no value, a top-level one is "other"), records, last_step.
    f"""CREATE OR REPLACE FUNCTION tracker_info_sort_rows(info json)
    RETURNS TABLE (key text, rank smallint, num double precision, txt text, cut boolean)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH RECURSIVE doc AS (
        SELECT CASE WHEN strpos(info::text, '\\u0000') > 0 THEN NULL ELSE info::jsonb END AS j),
    cfg AS (SELECT CASE WHEN jsonb_typeof(j->'config') = 'object' THEN j->'config' ELSE '{{}}'::jsonb END AS c,
                   CASE WHEN jsonb_typeof(j->'nonfinite'->'config') = 'array' THEN j->'nonfinite'->'config'
                        ELSE '[]'::jsonb END AS nf FROM doc),
    top AS (SELECT e.key AS k, e.value AS v FROM cfg, jsonb_each(cfg.c) e),
    walk(path, arr, v) AS (
        SELECT t.k, jsonb_build_array(t.k), t.v FROM top t WHERE jsonb_typeof(t.v) = 'object' AND strpos(t.k, '.') = 0
        UNION ALL
        SELECT w.path || '.' || e.key, w.arr || jsonb_build_array(e.key), e.value
        FROM walk w, jsonb_each(w.v) e WHERE jsonb_typeof(w.v) = 'object' AND strpos(e.key, '.') = 0),
    leaf AS (
        SELECT t.k AS k, jsonb_build_array(t.k) AS arr, t.v FROM top t
        UNION ALL
        SELECT w.path, w.arr, w.v FROM walk w
        WHERE strpos(w.path, '.') > 0 AND jsonb_typeof(w.v) <> 'object' AND NOT EXISTS (SELECT 1 FROM top t
            WHERE t.k = w.path)),
    vals AS (
        SELECT 'config.' || l.k AS key, l.v,
               jsonb_typeof(l.v) = 'string' AND l.v #>> '{{}}' IN ('NaN', 'Infinity', '-Infinity') AND EXISTS (
                   SELECT 1 FROM cfg, jsonb_array_elements(cfg.nf) p WHERE p = l.arr) AS special
        FROM leaf l
        UNION ALL
        SELECT f, j->f, false FROM doc, (VALUES ('records'), ('last_step')) AS x(f) WHERE doc.j IS NOT NULL)
    SELECT v.key, tracker_sort_rank(v.v, v.special), tracker_sort_num(v.v),
           CASE WHEN jsonb_typeof(v.v) = 'string' AND tracker_sort_rank(v.v, v.special) = 1
                THEN left(v.v #>> '{{}}', {TEXT_MAX}) ELSE '' END,
           jsonb_typeof(v.v) = 'string' AND length(v.v #>> '{{}}') > {TEXT_MAX}
    FROM vals v WHERE tracker_sort_rank(v.v, v.special) < 3 AND length(v.key) <= {KEY_MAX}
    UNION ALL
    SELECT m, 3::smallint, 0.0::float8, '', true FROM doc, (VALUES ('config'), ('records'), ('last_step')) AS x(m)
    WHERE doc.j IS NULL $$""",
    # The rows of one run's metric figures, combined across its writers as tracker.team.listing.metric_join reads
    # them: min and max over the writers' numbers; last of the writer whose last came last in log order.
    f"""CREATE OR REPLACE FUNCTION tracker_metric_sort_rows(rid text)
    RETURNS TABLE (key text, rank smallint, num double precision, txt text, cut boolean)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    WITH w AS (
        SELECT writer, CASE WHEN strpos(figures::text, '\\u0000') > 0 THEN NULL ELSE figures::jsonb END AS f
        FROM tracker_writer_figures WHERE run_id = rid),
    m AS (SELECT w.writer, e.key AS name, e.value AS s FROM w, jsonb_each(CASE WHEN jsonb_typeof(w.f) = 'object'
              THEN w.f ELSE '{{}}'::jsonb END) e WHERE jsonb_typeof(e.value) = 'object'),
    mm AS (SELECT name, min(CASE WHEN tracker_sort_rank(s->'min', true) = 0 THEN tracker_sort_num(s->'min') END) AS lo,
                  max(CASE WHEN tracker_sort_rank(s->'max', true) = 0 THEN tracker_sort_num(s->'max') END) AS hi
           FROM m WHERE length(name) <= {KEY_MAX} - 11 GROUP BY name),
    last AS (SELECT DISTINCT ON (name) name, s->'last' AS v FROM m
             ORDER BY name, (s->>'last_key')::float8 DESC, writer COLLATE "C" DESC)
    SELECT 'metric.' || name || '.min', 0::smallint, lo, '', false FROM mm WHERE lo IS NOT NULL
    UNION ALL
    SELECT 'metric.' || name || '.max', 0::smallint, hi, '', false FROM mm WHERE hi IS NOT NULL
    UNION ALL
    SELECT 'metric.' || name || '.last', tracker_sort_rank(v, true), tracker_sort_num(v),
           CASE WHEN tracker_sort_rank(v, true) = 1 THEN left(v #>> '{{}}', {TEXT_MAX}) ELSE '' END,
           tracker_sort_rank(v, true) = 1 AND length(v #>> '{{}}') > {TEXT_MAX}
    FROM last WHERE tracker_sort_rank(v, true) < 3 AND length(name) <= {KEY_MAX} - 12
    UNION ALL
    SELECT 'metric', 3::smallint, 0.0::float8, '', true WHERE EXISTS (SELECT 1 FROM w WHERE w.f IS NULL) $$""",
    # The run's status as its writers settle it (tracker.read.segment.run_status with every running writer counted
    # as crashed: a reader asks whether one is running); no writer: crashed. Every run has this row.
    """CREATE OR REPLACE FUNCTION tracker_status_sort_rows(rid text)
    RETURNS TABLE (key text, rank smallint, num double precision, txt text, cut boolean)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    WITH w AS (
        SELECT writer, COALESCE(started_at, 0) AS s, COALESCE(ended_at, 0) AS e,
               CASE WHEN status = 'running' THEN 'crashed' ELSE status END AS st
        FROM tracker_writers WHERE run_id = rid AND is_writer),
    c AS (SELECT * FROM w WHERE NOT EXISTS (SELECT 1 FROM w o WHERE o.writer <> w.writer AND o.s > w.e))
    SELECT 'status', 1::smallint, 0.0::float8, COALESCE((
        SELECT x.st FROM (SELECT * FROM c UNION ALL SELECT * FROM w WHERE NOT EXISTS (SELECT 1 FROM c)) x
        ORDER BY CASE x.st WHEN 'finished' THEN 0 WHEN 'failed' THEN 1 WHEN 'stopped' THEN 3 ELSE 2 END DESC, x.st
        LIMIT 1), 'crashed'), false $$""",
    # Two transactions writing writers of the same run (a run resumed elsewhere while its first host syncs) derive
    # its rows one after the other: each waits for the other's commit, then reads what it wrote (a statement of
    # a read-committed transaction sees what committed before it began). One lock per bucket of runs, so that a
    # statement of 100,000 runs takes at most LOCK_BUCKETS of them, in one order.
    f"""CREATE OR REPLACE FUNCTION tracker_sort_lock(ids text[]) RETURNS void LANGUAGE sql AS $$
    SELECT count(pg_advisory_xact_lock(k)) FROM (
        SELECT DISTINCT {_LOCK_BASE} + (hashtextextended(i, 0) & {LOCK_BUCKETS - 1}) AS k
        FROM unnest(ids) AS i ORDER BY 1) x $$""",
    # What the triggers call: the rows of runs ``ids`` that derive from their writers' figures, or their status.
    f"""CREATE OR REPLACE FUNCTION tracker_sort_metrics(ids text[]) RETURNS void LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        PERFORM tracker_sort_lock(ids);
        DELETE FROM tracker_sort_values WHERE run_id = ANY(ids) AND key LIKE 'metric%';
        INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
        SELECT i.rid, x.key, x.rank, x.num, x.txt, x.cut FROM unnest(ids) AS i(rid),
            LATERAL tracker_metric_sort_rows(i.rid) x;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tracker_sort_status(ids text[]) RETURNS void LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        PERFORM tracker_sort_lock(ids);
        DELETE FROM tracker_sort_values WHERE run_id = ANY(ids) AND key = 'status';
        INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
        SELECT i.rid, x.key, x.rank, x.num, x.txt, x.cut FROM unnest(ids) AS i(rid),
            LATERAL tracker_status_sort_rows(i.rid) x;
        PERFORM tracker_sort_times(ids);
    END $$""",
    # Layout 6. A JSON document PostgreSQL can read: each \u0000 (which no text may hold, and which stops every
    # JSON operator on the document) read as U+FFFD; an escaped backslash before "u0000" is left as it is.
    r"""CREATE OR REPLACE FUNCTION tracker_json_clean(v json) RETURNS json
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN strpos(v::text, '\u0000') = 0 THEN v
                ELSE regexp_replace(v::text, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\ufffd', 'g')::json END $$""",
    # A JSON value as a float, as a reader casts the info's created_at and ended_at (numbers; the
    # strings of NaN and infinities the store writes), else NULL (never an error inside a trigger).
    """CREATE OR REPLACE FUNCTION tracker_json_float(v json) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE json_typeof(v)
        WHEN 'number' THEN tracker_sort_num((v #>> '{}')::jsonb)
        WHEN 'string' THEN CASE WHEN v #>> '{}' IN ('NaN', 'Infinity', '-Infinity') THEN (v #>> '{}')::float8 END
        END $$""",
    # Each run's end (its writers' latest end, a running one's counted as 0; no writer: the info's) and duration
    # (that end less the info's start: a run with a writer running has none, which a reader asks at read time), as
    # TeamStore._infos and tracker.read.listing derive them; NaN is "other", a run without the value has no row.
    f"""CREATE OR REPLACE FUNCTION tracker_sort_times(ids text[]) RETURNS void LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        PERFORM tracker_sort_lock(ids);
        DELETE FROM tracker_sort_values WHERE run_id = ANY(ids) AND key IN ('ended_at', 'duration');
        INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
        SELECT t.run_id, k.key, CASE WHEN k.v = 'NaN'::float8 THEN 2 ELSE 0 END,
               CASE WHEN k.v = 'NaN'::float8 THEN 0.0 ELSE k.v END, '', false
        FROM (SELECT r.run_id, COALESCE((SELECT max(COALESCE(w.ended_at, 0)) FROM tracker_writers w
                                         WHERE w.run_id = r.run_id AND w.is_writer),
                                        tracker_json_float(r.info -> 'ended_at')) AS e,
                     tracker_json_float(r.info -> 'created_at') AS c
              FROM (SELECT run_id, tracker_json_clean(info) AS info FROM tracker_runs WHERE run_id = ANY(ids)) r) t,
             LATERAL (VALUES ('ended_at', t.e), ('duration', t.e - t.c)) AS k(key, v)
        WHERE k.v IS NOT NULL;
    END $$""",
    # The triggers, once per statement over the rows it changed (a sync writes hundreds of runs a statement).
    f"""CREATE OR REPLACE FUNCTION tracker_runs_sort_ins() RETURNS trigger LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        -- A new run has none of these rows (a run's are deleted with it; a second insert of the same run waits
        -- for the first's commit and then updates it).
        INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
        SELECT n.run_id, x.key, x.rank, x.num, x.txt, x.cut FROM new_rows n, LATERAL tracker_info_sort_rows(n.info) x;
        -- a run listed before its writers came: crashed until they do
        INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
        SELECT n.run_id, 'status', 1, 0.0, 'crashed', false FROM new_rows n WHERE NOT EXISTS (
            SELECT 1 FROM tracker_sort_values s WHERE s.run_id = n.run_id AND s.key = 'status')
        ON CONFLICT (run_id, key) DO NOTHING;
        PERFORM tracker_sort_times(ARRAY(SELECT run_id FROM new_rows));
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tracker_runs_sort_upd() RETURNS trigger LANGUAGE plpgsql{_SETTINGS} AS $$
    DECLARE ids text[];
    BEGIN
        SELECT array_agg(n.run_id) INTO ids FROM new_rows n LEFT JOIN old_rows o ON o.run_id = n.run_id
        WHERE o.run_id IS NULL OR o.info::text IS DISTINCT FROM n.info::text;
        IF ids IS NULL THEN RETURN NULL; END IF;
        DELETE FROM tracker_sort_values WHERE run_id = ANY(ids)
            AND (key LIKE 'config%' OR key IN ('records', 'last_step'));
        INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
        SELECT n.run_id, x.key, x.rank, x.num, x.txt, x.cut FROM new_rows n, LATERAL tracker_info_sort_rows(n.info) x
        WHERE n.run_id = ANY(ids);
        PERFORM tracker_sort_times(ids);
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tracker_runs_sort_del() RETURNS trigger LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        DELETE FROM tracker_sort_values WHERE run_id IN (SELECT run_id FROM old_rows)
            AND (key LIKE 'config%' OR key IN ('records', 'last_step', 'status', 'ended_at', 'duration'));
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tracker_figures_sort_new() RETURNS trigger LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        PERFORM tracker_sort_metrics(ARRAY(SELECT DISTINCT run_id FROM new_rows));
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tracker_figures_sort_del() RETURNS trigger LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        PERFORM tracker_sort_metrics(ARRAY(SELECT DISTINCT run_id FROM old_rows));
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tracker_writers_sort_ins() RETURNS trigger LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        PERFORM tracker_sort_status(ARRAY(SELECT DISTINCT run_id FROM new_rows));
        RETURN NULL;
    END $$""",
    # Not after a heartbeat (only seen_at moved): after a change of what the settled status derives from.
    f"""CREATE OR REPLACE FUNCTION tracker_writers_sort_upd() RETURNS trigger LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        PERFORM tracker_sort_status(ARRAY(SELECT DISTINCT n.run_id FROM new_rows n LEFT JOIN old_rows o
            ON o.run_id = n.run_id AND o.writer = n.writer
            WHERE o.run_id IS NULL OR (o.is_writer, o.started_at, o.ended_at, o.status)
                IS DISTINCT FROM (n.is_writer, n.started_at, n.ended_at, n.status)));
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tracker_writers_sort_del() RETURNS trigger LANGUAGE plpgsql{_SETTINGS} AS $$
    BEGIN
        PERFORM tracker_sort_status(ARRAY(SELECT DISTINCT run_id FROM old_rows));
        RETURN NULL;
    END $$""",
]


def _trigger(table: str, name: str, event: str, function: str) -> list[str]:
    tables = {"INSERT": "NEW TABLE AS new_rows", "UPDATE": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
              "DELETE": "OLD TABLE AS old_rows"}[event]
    return [f"DROP TRIGGER IF EXISTS {name} ON {table}",
            f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {tables} FOR EACH STATEMENT "
            f"EXECUTE FUNCTION {function}()"]


#: Each trigger of layouts 5 and 6: ``(table, trigger, event, function)``.
TRIGGERS = [
    ("tracker_runs", "tracker_runs_sort_ins", "INSERT", "tracker_runs_sort_ins"),
    ("tracker_runs", "tracker_runs_sort_upd", "UPDATE", "tracker_runs_sort_upd"),
    ("tracker_runs", "tracker_runs_sort_del", "DELETE", "tracker_runs_sort_del"),
    ("tracker_writer_figures", "tracker_figures_sort_ins", "INSERT", "tracker_figures_sort_new"),
    ("tracker_writer_figures", "tracker_figures_sort_upd", "UPDATE", "tracker_figures_sort_new"),
    ("tracker_writer_figures", "tracker_figures_sort_del", "DELETE", "tracker_figures_sort_del"),
    ("tracker_writers", "tracker_writers_sort_ins", "INSERT", "tracker_writers_sort_ins"),
    ("tracker_writers", "tracker_writers_sort_upd", "UPDATE", "tracker_writers_sort_upd"),
    ("tracker_writers", "tracker_writers_sort_del", "DELETE", "tracker_writers_sort_del"),
]
_TRIGGERS = [stmt for t in TRIGGERS for stmt in _trigger(*t)]

#: The walk of every sort (text and run ids in byte order, as the folder store compares), and the rows kept cut.
INDEXES_5 = [
    'CREATE INDEX IF NOT EXISTS tracker_sort_values_walk ON tracker_sort_values (key, rank, num, txt, '
    'run_id COLLATE "C")',
    "CREATE INDEX IF NOT EXISTS tracker_sort_values_cut ON tracker_sort_values (key) WHERE cut",
    # How many runs a key's rank holds, a status above all (95% of the runs finished, or 1% failed): estimated
    # from the columns together, so that a planner walks the sort's index or starts from the status as it should.
    "CREATE STATISTICS IF NOT EXISTS tracker_sort_values_mcv (mcv) ON key, rank, num, txt FROM tracker_sort_values",
    # Sorts of the runs' own text columns, in byte order.
    'CREATE INDEX IF NOT EXISTS tracker_runs_project_c ON tracker_runs (project COLLATE "C", run_id COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS tracker_runs_group_c ON tracker_runs (run_group COLLATE "C", run_id COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS tracker_runs_job_type_c ON tracker_runs (job_type COLLATE "C", run_id COLLATE "C")',
    # A status filter asks whether a run has a running writer heard from lately.
    "CREATE INDEX IF NOT EXISTS tracker_writers_running_seen ON tracker_writers (run_id, seen_at) "
    "WHERE status = 'running' AND is_writer",
]

#: The rows of the runs already there (the triggers keep them from then on).
_BACKFILL = [
    "INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut) SELECT r.run_id, x.key, x.rank, x.num, "
    "x.txt, x.cut FROM tracker_runs r, LATERAL tracker_info_sort_rows(r.info) x",
    "INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut) SELECT f.run_id, x.key, x.rank, x.num, "
    "x.txt, x.cut FROM (SELECT DISTINCT run_id FROM tracker_writer_figures) f, "
    "LATERAL tracker_metric_sort_rows(f.run_id) x",
    "INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut) SELECT w.run_id, x.key, x.rank, x.num, "
    "x.txt, x.cut FROM (SELECT run_id FROM tracker_runs UNION SELECT run_id FROM tracker_writers WHERE is_writer) w, "
    "LATERAL tracker_status_sort_rows(w.run_id) x",
]


def migrate_to_5(cur: Any) -> None:
    """Layout 4 -> 5: ``tracker_sort_values``, its functions and triggers, filled from the runs already there.

    Run under the layout lock (:func:`tracker.team.database.check_layout`), in its transaction: readers see
    the table full or not at all.
    """
    cur.execute(_TABLE)
    for stmt in _FUNCTIONS + _TRIGGERS:
        cur.execute(stmt)
    cur.execute("DELETE FROM tracker_sort_values")  # a layout-5 table left by an interrupted attempt: made again
    for stmt in _BACKFILL:
        cur.execute(stmt)
    for stmt in INDEXES_5:
        cur.execute(stmt)
    cur.execute("ANALYZE tracker_sort_values")


def refresh_functions(cur: Any) -> None:
    """(Re)create the functions and triggers of the sort values as this version writes them (a later layout's
    migration: a function changed, the table and its rows stay)."""
    for stmt in _FUNCTIONS + _TRIGGERS:
        cur.execute(stmt)


def sort_value_key(key: Any) -> str | None:
    """The ``tracker_sort_values.key`` a sort reads (``config.lr``, ``metric.loss.min``, ``records``), else
    ``None`` (a sort on a run's column, or a key too long to be kept)."""
    if key.kind == "config":
        name = f"config.{key.name}"
    elif key.kind == "metric":
        name = f"metric.{key.name}.{key.stat}"
    elif key.kind == "field" and key.name in ("records", "last_step", "status", "ended_at", "duration"):
        # status and duration: the settled ones, a running run's put right by the reader (tracker.team.listing)
        return key.name
    else:
        return None
    return name if len(name) <= KEY_MAX else None


def marker(key: str) -> str:
    """The name of the row that says a run's values of sort key ``key`` could not be kept (its config or figures
    hold what ``jsonb`` cannot): ``config``, ``metric``, ``records`` or ``last_step``."""
    return key.split(".", 1)[0]


__all__ = ["INDEXES_5", "LOCK_BUCKETS", "TRIGGERS", "KEY_MAX", "TEXT_MAX", "marker", "migrate_to_5",
           "refresh_functions", "sort_value_key"]
