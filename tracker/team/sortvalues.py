"""Layout 5: each run's sort values, kept by PostgreSQL itself, so a first page of any sort walks an index.

``tracker_sort_values`` holds one row per run and sort key: ``config.KEY``
(every key :func:`tracker.read.listing.value_of` finds in the run's config,
nested keys dotted), ``metric.NAME.last|min|max`` (the run's figures combined
across its writers, as the folder store combines its segments'), ``records``,
``last_step``, and ``status``: the run's status as its writers settle it
(a running writer counted as crashed; whether one is running is asked of the
writers at read time, since that depends on the heartbeat timeout and the
clock). Each row is the value's place in the order of :mod:`tracker.read.listing`:
``rank`` (numbers, text, other), ``num`` (a number's value), ``txt`` (a
text's), and a run without the value has no row (missing). The index
``(key, rank, num, txt, run_id)`` in byte order serves every such sort:
the first page of ``-metric.loss.min`` is an index walk of a hundred rows,
whatever the database holds.

Triggers on ``tracker_runs`` (its ``info``), ``tracker_writer_figures`` and
``tracker_writers`` (their statuses and times, not the heartbeats) write the
rows in the transaction that changes what they derive from, so no writer
(``tracker sync``, the follower, a script of SQL) can leave them behind.
Texts longer than :data:`TEXT_MAX` characters are kept cut (``cut``), and a
config or figures that PostgreSQL's ``jsonb`` cannot hold (a ``\\u0000``)
gives its run a ``cut`` row named ``config`` or ``metric``: a sort such a row
concerns is read from the JSON as before (exact, a scan). Sort keys longer
than :data:`KEY_MAX` characters are not kept (read from the JSON too).

:func:`migrate_to_5` creates the table, its functions and triggers and fills
it from the runs already there (under ``tracker sync``'s layout lock).
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
    mm AS (SELECT name, stat, min(tracker_sort_num(s->'min')) AS lo, max(tracker_sort_num(s->'max')) AS hi
           FROM m, (VALUES ('min'), ('max')) AS x(stat)
           WHERE tracker_sort_rank(s->stat, true) = 0 GROUP BY name, stat),
    last AS (SELECT DISTINCT ON (name) name, s->'last' AS v FROM m
             ORDER BY name, (s->>'last_key')::float8 DESC, writer COLLATE "C" DESC)
    SELECT 'metric.' || name || '.' || stat, 0::smallint, CASE stat WHEN 'min' THEN lo ELSE hi END, '', false
    FROM mm WHERE length(name) <= {KEY_MAX} - 11
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
    # The triggers: each replaces the rows of the run it concerns that it derives.
    """CREATE OR REPLACE FUNCTION tracker_runs_sort_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            DELETE FROM tracker_sort_values WHERE run_id = OLD.run_id
                AND (key LIKE 'config%' OR key IN ('records', 'last_step'));
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
            SELECT NEW.run_id, x.key, x.rank, x.num, x.txt, x.cut FROM tracker_info_sort_rows(NEW.info) x
            ON CONFLICT (run_id, key) DO UPDATE SET rank = EXCLUDED.rank, num = EXCLUDED.num, txt = EXCLUDED.txt,
                cut = EXCLUDED.cut;
        END IF;
        IF TG_OP = 'INSERT' THEN  -- a run listed before its writers came: crashed until they do
            INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
            SELECT NEW.run_id, x.key, x.rank, x.num, x.txt, x.cut FROM tracker_status_sort_rows(NEW.run_id) x
            ON CONFLICT (run_id, key) DO NOTHING;
        ELSIF TG_OP = 'DELETE' THEN
            DELETE FROM tracker_sort_values WHERE run_id = OLD.run_id AND key = 'status';
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE FUNCTION tracker_figures_sort_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE rid text := CASE WHEN TG_OP = 'DELETE' THEN OLD.run_id ELSE NEW.run_id END;
    BEGIN
        DELETE FROM tracker_sort_values WHERE run_id = rid AND key LIKE 'metric%';
        INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
        SELECT rid, x.key, x.rank, x.num, x.txt, x.cut FROM tracker_metric_sort_rows(rid) x;
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE FUNCTION tracker_writers_sort_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE rid text := CASE WHEN TG_OP = 'DELETE' THEN OLD.run_id ELSE NEW.run_id END;
    BEGIN
        DELETE FROM tracker_sort_values WHERE run_id = rid AND key = 'status';
        INSERT INTO tracker_sort_values (run_id, key, rank, num, txt, cut)
        SELECT rid, x.key, x.rank, x.num, x.txt, x.cut FROM tracker_status_sort_rows(rid) x;
        RETURN NULL;
    END $$""",
]

_TRIGGERS = [
    "DROP TRIGGER IF EXISTS tracker_runs_sort ON tracker_runs",
    "CREATE TRIGGER tracker_runs_sort AFTER INSERT OR DELETE OR UPDATE OF info ON tracker_runs "
    "FOR EACH ROW EXECUTE FUNCTION tracker_runs_sort_trigger()",
    "DROP TRIGGER IF EXISTS tracker_figures_sort ON tracker_writer_figures",
    "CREATE TRIGGER tracker_figures_sort AFTER INSERT OR DELETE OR UPDATE OF figures ON tracker_writer_figures "
    "FOR EACH ROW EXECUTE FUNCTION tracker_figures_sort_trigger()",
    # Not on a heartbeat (seen_at): only what the settled status derives from.
    "DROP TRIGGER IF EXISTS tracker_writers_sort ON tracker_writers",
    "CREATE TRIGGER tracker_writers_sort AFTER INSERT OR DELETE OR UPDATE OF is_writer, started_at, ended_at, "
    "status ON tracker_writers FOR EACH ROW EXECUTE FUNCTION tracker_writers_sort_trigger()",
]

#: The walk of every sort (text and run ids in byte order, as the folder store compares), and the rows kept cut.
INDEXES_5 = [
    'CREATE INDEX IF NOT EXISTS tracker_sort_values_walk ON tracker_sort_values (key, rank, num, txt, '
    'run_id COLLATE "C")',
    "CREATE INDEX IF NOT EXISTS tracker_sort_values_cut ON tracker_sort_values (key) WHERE cut",
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


def sort_value_key(key: Any) -> str | None:
    """The ``tracker_sort_values.key`` a sort reads (``config.lr``, ``metric.loss.min``, ``records``), else
    ``None`` (a sort on a run's column, or a key too long to be kept)."""
    if key.kind == "config":
        name = f"config.{key.name}"
    elif key.kind == "metric":
        name = f"metric.{key.name}.{key.stat}"
    elif key.kind == "field" and key.name in ("records", "last_step"):
        return key.name
    else:
        return None
    return name if len(name) <= KEY_MAX else None


def marker(key: str) -> str:
    """The name of the row that says a run's values of sort key ``key`` could not be kept (its config or figures
    hold what ``jsonb`` cannot): ``config``, ``metric``, ``records`` or ``last_step``."""
    return key.split(".", 1)[0]


__all__ = ["INDEXES_5", "KEY_MAX", "TEXT_MAX", "marker", "migrate_to_5", "sort_value_key"]
