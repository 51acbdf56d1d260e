"""Pages of the team database's runs list in SQL: filters, a sort on any column, keyset cursors, choices.

The answer of ``TeamStore.runs(..., sort=, limit=, cursor=)``, the same rows in
the same order as the folder store's (:mod:`tracker.read.listing` defines the
order: numbers, then text by code point, then other values, then runs without
one; ties by run id). Each rank is read by its own query, ordered by one
value and the run id in one direction, so that a keyset condition
``(value, run_id) < (v, id)`` walks an index where there is one: the migration
to layout 4 (:func:`migrate_to_4`) indexes ``created_at``, ``project``,
``run_group`` and ``name`` with the run id, in byte order (``COLLATE "C"``).
A sort on a config key, a metric's figure, ``records``, ``last_step``, ``status``,
``ended_at`` or ``duration`` walks ``tracker_sort_values`` (layouts 5 and 6,
:mod:`tracker.team.sortvalues`: one row per run and key, kept by triggers) the
same way, rank by rank, then the runs without a value by id. A page costs the
rows it shows, whatever the database holds, for those sorts (a status sort
merges the few runs with a writer running into the walk of the settled
statuses; a duration sort puts them with the runs without one); a config or
metric sort whose values could not all be kept
(:data:`tracker.team.sortvalues.TEXT_MAX`) reads each run's value from the JSON
(a top-N sort). Tag and text filters look at layout 6's columns
(:mod:`tracker.team.runtext`), checked per row walked.

A run's status is derived from its writers as :func:`tracker.read.segment.run_status`
does (a running writer silent past the heartbeat timeout is crashed): a filter
on status seeks the run's running writers and the status its writers settled on
(:func:`status_condition`), and so does a sort on status.
"""

from __future__ import annotations

from typing import Any

from tracker.read.listing import (
    MISSING,
    NUMBER,
    OTHER,
    TEXT,
    RunFilter,
    SortKey,
    check_page,
    decode_cursor,
    encode_cursor,
)
from tracker.team.runtext import tags_condition, text_condition
from tracker.team.sortvalues import marker, sort_value_key

#: Layout 4's indexes: the keyset walks of the runs list (text in byte order, as the folder store compares).
INDEXES_4 = [
    'CREATE INDEX IF NOT EXISTS tracker_runs_created_id ON tracker_runs (created_at, run_id COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS tracker_runs_project_created_id ON tracker_runs (project, created_at, '
    'run_id COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS tracker_runs_group_created_id ON tracker_runs (run_group, created_at, '
    'run_id COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS tracker_runs_name_id ON tracker_runs (name COLLATE "C", run_id COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS tracker_runs_id_c ON tracker_runs (run_id COLLATE "C")',
    # What a dashboard asks at each request to know whether anything changed (TeamReading.change_key): at
    # 100,000 runs each of these is a seek instead of a scan.
    "CREATE INDEX IF NOT EXISTS tracker_runs_synced ON tracker_runs (synced_at)",
    "CREATE INDEX IF NOT EXISTS tracker_writers_seen ON tracker_writers (seen_at)",
    "CREATE INDEX IF NOT EXISTS tracker_writers_running ON tracker_writers (run_id) WHERE status = 'running'",
    "CREATE INDEX IF NOT EXISTS tracker_changes_stamp ON tracker_changes (stamp)",
]


def migrate_to_4(cur: Any) -> None:
    """Layout 3 -> 4: the indexes the runs list's keyset pages walk (:data:`INDEXES_4`)."""
    for stmt in INDEXES_4:
        cur.execute(stmt)


#: Each writer's status as a reader sees it, then per run its status and end (as ``TeamStore._infos`` derives them).
_WRITERS = """ws AS (
  SELECT run_id, max(e) AS ended_at,
    CASE WHEN bool_or(st = 'running') THEN 'running'
         WHEN bool_or(cur) THEN (array_agg(st ORDER BY sev DESC) FILTER (WHERE cur))[1]
         ELSE (array_agg(st ORDER BY sev DESC))[1] END AS status
  FROM (SELECT w.run_id, w.e, w.st,
          CASE w.st WHEN 'finished' THEN 0 WHEN 'failed' THEN 1 WHEN 'stopped' THEN 3 ELSE 2 END AS sev,
          -- superseded by a writer that started after it ended (a resume): asked only of runs of several writers
          CASE WHEN w.nw = 1 THEN TRUE ELSE NOT EXISTS (SELECT 1 FROM tracker_writers o WHERE o.run_id = w.run_id
               AND o.is_writer AND o.writer <> w.writer AND COALESCE(o.started_at, 0) > w.e) END AS cur
        FROM (SELECT run_id, writer, COALESCE(ended_at, 0) AS e, count(*) OVER (PARTITION BY run_id) AS nw,
                CASE WHEN status = 'running' AND extract(epoch FROM now() - seen_at) > %(timeout)s
                     THEN 'crashed' ELSE status END AS st
              FROM tracker_writers WHERE is_writer) w) x
  GROUP BY run_id)"""

_TEXT_COLUMNS = {"id": "r.run_id", "name": "r.name", "project": "r.project", "group": "r.run_group",
                 "job_type": "r.job_type"}


def _num(v: str) -> str:
    """A JSON value's number (booleans 0 and 1; ``"Infinity"`` strings as the store writes them), else NULL."""
    v = f"({v})"
    return (f"(CASE json_typeof({v}) WHEN 'number' THEN ({v}#>>'{{}}')::float8 "
            f"WHEN 'boolean' THEN CASE WHEN {v}::text = 'true' THEN 1.0 ELSE 0.0 END "
            f"WHEN 'string' THEN CASE WHEN {v}#>>'{{}}' IN ('Infinity', '-Infinity') THEN ({v}#>>'{{}}')::float8 END "
            "END)")


def _json_rank(v: str, nan_strings: bool) -> str:
    v = f"({v})"
    nan = f"WHEN json_typeof({v}) = 'string' AND {v}#>>'{{}}' = 'NaN' THEN {OTHER} " if nan_strings else ""
    inf = f"WHEN json_typeof({v}) = 'string' AND {v}#>>'{{}}' IN ('Infinity', '-Infinity') THEN {NUMBER} " \
        if nan_strings else ""
    return (f"(CASE {nan}{inf}WHEN json_typeof({v}) IN ('number', 'boolean') THEN {NUMBER} "
            f"WHEN json_typeof({v}) = 'string' THEN {TEXT} WHEN json_typeof({v}) = 'array' THEN {OTHER} "
            f"ELSE {MISSING} END)")


def _ranks(rank_e: str) -> dict[int, str]:
    return {r: f"{rank_e} = {r}" for r in (NUMBER, TEXT, OTHER, MISSING)}


def sort_exprs(key: SortKey, params: dict[str, Any]) -> tuple[str, str, dict[int, str]]:
    """``(number, text, condition per rank)``: SQL of a sort key over ``tracker_runs r``, for the sorts not kept in
    ``tracker_sort_values`` (a run's own columns, and a key whose values could not all be kept).

    A plain column's conditions are ``IS NULL`` / ``IS NOT NULL``, so that its index serves the walk.
    """
    if key.kind == "field":
        name = key.name
        if name in _TEXT_COLUMNS:
            col = _TEXT_COLUMNS[name]
            return "0.0::float8", f'{col} COLLATE "C"', {TEXT: f"{col} IS NOT NULL", MISSING: f"{col} IS NULL"}
        if name == "created_at":
            col = "r.created_at"
            return (col, "''", {NUMBER: f"{col} <> 'NaN'::float8", OTHER: f"{col} = 'NaN'::float8",
                                MISSING: f"{col} IS NULL"})
        # records, last_step (status, ended_at and duration are always kept: layouts 5 and 6)
        v = f"(r.info->'{name}')"
        return f"COALESCE({_num(v)}, 0.0)", "''", _ranks(_json_rank(v, False))
    if key.kind == "config":
        params["cfg_whole"] = key.name
        params["cfg_path"] = key.name.split(".")
        v = "COALESCE(r.info->'config'->%(cfg_whole)s, r.info->'config' #> %(cfg_path)s)"
        return (f"COALESCE({_num(v)}, 0.0)",
                f"(CASE WHEN json_typeof({v}) = 'string' THEN {v}#>>'{{}}' ELSE '' END) COLLATE \"C\"",
                _ranks(_json_rank(v, False)))
    # A metric's figure, combined across the run's writers as the folder store combines its segments': read by
    # the join of :func:`metric_join` (one pass over the writers' figures), as ``m.val``.
    params["metric"] = key.name
    if key.stat in ("min", "max"):
        return "COALESCE(m.val, 0.0)", "''", {NUMBER: "m.val IS NOT NULL", MISSING: "m.val IS NULL"}
    return "COALESCE(m.num, 0.0)", "''", _ranks(_json_rank("m.val", True))


def metric_join(key: SortKey) -> str:
    """The join that gives each run its figure of a metric sort (``m.val``; ``m.num`` for ``last``), or ``""``."""
    if key.kind != "metric":
        return ""
    f = "figures->%(metric)s"
    if key.stat in ("min", "max"):
        agg = "min" if key.stat == "min" else "max"
        return (f" LEFT JOIN (SELECT run_id, {agg}({_num(f + '->' + repr(key.stat))}) AS val FROM "
                f"tracker_writer_figures WHERE {f} IS NOT NULL GROUP BY run_id) m ON m.run_id = r.run_id")
    # The last value: the writer whose last came last in log order (ties: the later segment, as over a folder).
    last = f"{f}->'last'"
    return (f" LEFT JOIN (SELECT DISTINCT ON (run_id) run_id, {last} AS val, {_num(last)} AS num "
            f"FROM tracker_writer_figures WHERE {f} IS NOT NULL "
            f"ORDER BY run_id, ({f}->>'last_key')::float8 DESC, writer COLLATE \"C\" DESC) m ON m.run_id = r.run_id")


def filter_sql(flt: RunFilter, params: dict[str, Any], few: bool = False) -> tuple[list[str], bool]:
    """The WHERE conditions of a filter over ``tracker_runs r``, and whether they need the writers.

    :param few: the status filtered on is that of few runs (:func:`status_condition`).
    """
    where = []
    if flt.project is not None:
        where.append("r.project = %(project)s")
        params["project"] = flt.project
    if flt.group is not None:
        where.append("r.run_group = %(group)s")
        params["group"] = flt.group
    if flt.job_type is not None:
        where.append("r.job_type = %(job_type)s")
        params["job_type"] = flt.job_type
    if flt.tags:  # layout 6's columns (tracker.team.runtext): no JSON parsed per run
        where.append(tags_condition(flt.tags, params))
    if flt.q:
        where.append(text_condition(flt.q, params))
    if flt.status is not None:
        where.append(status_condition(flt.status, few))
        params["status"] = flt.status
    return where, flt.status is not None


#: Whether run ``r`` has a writer running and heard from within the heartbeat timeout.
_LIVE = ("EXISTS (SELECT 1 FROM tracker_writers lw WHERE lw.run_id = r.run_id AND lw.status = 'running' AND "
         "lw.is_writer AND lw.seen_at >= now() - make_interval(secs => %(timeout)s))")


#: The sort values kept as if every running writer had crashed: a run with one running (heard from within the
#: timeout) is walked apart (status: merged in as ``running``; duration: none, with the missing).
_SETTLED_KEYS = ("status", "duration")

#: The runs of one status, a range of the sort values' index.
_SETTLED = ("SELECT sv.run_id FROM tracker_sort_values sv WHERE sv.key = 'status' AND sv.rank = 1 AND sv.num = 0 "
            "AND sv.txt = %(status)s")
#: A status of fewer runs than this is read whole into a hash a page's walk looks runs up in (:func:`page_ids`).
FEW = 20_000


def status_condition(status: str, few: bool = False) -> str:
    """The condition that run ``r``'s status is ``%(status)s`` (as :data:`_WRITERS` derives it): running when a
    writer runs and was heard from within the timeout, else the status its writers settled on (layout 5's
    ``status`` sort value, which every run has; no writer: crashed). Seeks, not a pass over every writer.

    :param few: the status is that of few runs (under :data:`FEW`): they are read first and hashed (a walk of
        the sort's order looks each run up there), instead of a seek per run walked (which a status of most
        runs wants: the walk finds its rows at once).
    """
    if status == "running":
        return _LIVE
    return f"NOT {_LIVE} AND r.run_id IN ({_SETTLED}{' OFFSET 0' if few else ''})"


def page_ids(store: Any, flt: RunFilter, key: SortKey, limit: int | None, cursor: str | None,
             offset: int | None, timeout: Any, keys_out: list[Any] | None = None) -> tuple[list[str], int, str | None]:
    """``(run ids of the page, runs the filter keeps, next cursor)`` in SQL.

    :param timeout: gives the heartbeat timeout (seconds), asked only when the status is (the plugin host's
        configuration is not loaded for a page that does not need it).
    :param keys_out: a list that receives the page's order keys (a server keeping a whole order asks for them).
    """
    check_page(limit, offset, cursor)
    params: dict[str, Any] = {}
    few = False
    if flt.status is not None and flt.status != "running":
        few = store._fetch(f"SELECT count(*) FROM ({_SETTLED} LIMIT {FEW}) x", {"status": flt.status})[0][0] < FEW
    where, w2 = filter_sql(flt, params, few)
    if w2:
        params["timeout"] = timeout()
    cond = " AND ".join(where) or "TRUE"
    skey = sort_value_key(key)
    if skey is not None and not store._fetch(
            "SELECT EXISTS (SELECT 1 FROM tracker_sort_values WHERE cut AND key IN (%s, %s))", (skey, marker(skey))
    )[0][0]:
        total = store._fetch(f"SELECT count(*) FROM tracker_runs r WHERE {cond}", params)[0][0]
        if skey in _SETTLED_KEYS and "timeout" not in params:
            params["timeout"] = timeout()
        return _walk_values(store, skey, cond, params, key, limit, cursor, offset, keys_out, int(total))
    num_e, text_e, rank_conds = sort_exprs(key, params)
    total = store._fetch(f"SELECT count(*) FROM tracker_runs r WHERE {cond}", params)[0][0]
    at = decode_cursor(cursor, key) if cursor is not None else None
    skip = offset or 0
    want = None if limit is None else limit + 1  # one more: whether a next page exists
    rows: list[tuple[Any, ...]] = []
    found = 0  # runs read (skipped ones too): once all the filter keeps are, the ranks left are not asked
    op, order = ("<", "DESC") if key.desc else (">", "ASC")
    first_rank = at[0] if at is not None else NUMBER
    for r in range(first_rank, MISSING + 1):
        if want is not None and len(rows) >= want or (at is None and found >= total):  # every run counted found
            break
        if r not in rank_conds:
            continue
        # Within one rank the order is (value, id) in one direction; numbers and text are the values of their ranks.
        value = num_e if r == NUMBER else text_e if r == TEXT else None
        if value in ("''", "0.0::float8"):  # a rank this sort never gives a value in: by id alone
            value = None
        p = dict(params)
        conds = [cond, rank_conds[r]]
        if at is not None and r == at[0]:
            if value is None:
                conds.append(f'r.run_id COLLATE "C" {op} %(at_id)s')
            else:
                conds.append(f'({value}, r.run_id COLLATE "C") {op} (%(at_v)s, %(at_id)s)')
                p["at_v"] = at[1] if r == NUMBER else at[2]
            p["at_id"] = at[3]
        ordering = (f"{value} {order}, " if value is not None else "") + f'r.run_id COLLATE "C" {order}'
        sql = (f"SELECT r.run_id, {num_e}, {text_e} FROM tracker_runs r{metric_join(key)} "
               f"WHERE {' AND '.join(conds)} "
               f"ORDER BY {ordering}")
        if want is not None:
            sql += f" LIMIT {int(want - len(rows) + skip)}"
        got = store._fetch(sql, p)
        found += len(got)
        if skip:
            used = min(skip, len(got))
            got, skip = got[used:], skip - used
        rows.extend((r, *row) for row in got)
    ids, nxt = _page_of(rows, want, limit, key, keys_out)
    return ids, int(total), nxt


def _walk_values(store: Any, skey: str, cond: str, params: dict[str, Any], key: SortKey, limit: int | None,
                 cursor: str | None, offset: int | None, keys_out: list[Any] | None,
                 total: int) -> tuple[list[str], int, str | None]:
    """:func:`page_ids` of a sort kept in ``tracker_sort_values`` (layouts 5, 6): per rank, a walk of its index from
    the cursor (numbers, text, other), then the runs without a row (missing), by id."""
    at = decode_cursor(cursor, key) if cursor is not None else None
    skip = offset or 0
    want = None if limit is None else limit + 1
    rows: list[tuple[Any, ...]] = []
    found = 0  # runs read (skipped ones too): once all the filter keeps are, the ranks left are not asked
    op, order = ("<", "DESC") if key.desc else (">", "ASC")
    for r in range(at[0] if at is not None else NUMBER, MISSING + 1):
        if want is not None and len(rows) >= want or (at is None and found >= total):  # every run counted found
            break
        p = {**params, "skey": skey}
        if r == MISSING:
            none = "NOT EXISTS (SELECT 1 FROM tracker_sort_values s WHERE s.run_id = r.run_id AND s.key = %(skey)s)"
            # a run with a writer running has no duration (its kept one is what it would be if it crashed)
            conds = [cond, f"({none} OR {_LIVE})" if skey == "duration" else none]
            if at is not None and r == at[0]:
                conds.append(f'r.run_id COLLATE "C" {op} %(at_id)s')
            sql = (f"SELECT r.run_id, 0.0::float8, '' FROM tracker_runs r WHERE {' AND '.join(conds)} "
                   f'ORDER BY r.run_id COLLATE "C" {order}')
        else:
            conds = [f"s.key = %(skey)s AND s.rank = {r}", cond]
            if at is not None and r == at[0]:
                conds.append(f'(s.num, s.txt, s.run_id COLLATE "C") {op} (%(at_n)s, %(at_t)s, %(at_id)s)')
            if skey in _SETTLED_KEYS:  # the settled values of the runs with no writer running
                conds.append(f"NOT {_LIVE}")
            sql = (f"SELECT s.run_id, s.num, s.txt FROM tracker_sort_values s JOIN tracker_runs r ON "
                   f"r.run_id = s.run_id WHERE {' AND '.join(conds)} "
                   f'ORDER BY s.num {order}, s.txt {order}, s.run_id COLLATE "C" {order}')
        if at is not None and r == at[0]:
            p.update(at_n=at[1], at_t=at[2], at_id=at[3])
        n = None if want is None else int(want - len(rows) + skip)
        if n is not None:
            sql += f" LIMIT {n}"
        got = store._fetch(sql, p)
        if skey == "status" and r == TEXT:
            got = _with_running(store, got, cond, p, key.desc, at if at is not None and r == at[0] else None, n)
        found += len(got)
        if skip:
            used = min(skip, len(got))
            got, skip = got[used:], skip - used
        rows.extend((r, *row) for row in got)
    ids, nxt = _page_of(rows, want, limit, key, keys_out)
    return ids, total, nxt


def _with_running(store: Any, got: list[tuple], cond: str, params: dict[str, Any], desc: bool,
                  at: tuple[int, float, str, str] | None, n: int | None) -> list[tuple]:
    """A status sort's rows ``got`` (the settled statuses of runs with no writer running, in order) with the few
    runs that have one heard from within the timeout, as ``running``, merged in (the first ``n``)."""
    conds = [cond, "r.run_id IN (SELECT lw.run_id FROM tracker_writers lw WHERE lw.status = 'running' AND "
                   "lw.is_writer AND lw.seen_at >= now() - make_interval(secs => %(timeout)s))"]
    if at is not None:
        conds.append(f"('running', r.run_id COLLATE \"C\") {'<' if desc else '>'} (%(at_t)s, %(at_id)s)")
    running = store._fetch(f"SELECT r.run_id, 0.0::float8, 'running' FROM tracker_runs r WHERE {' AND '.join(conds)} "
                           f'ORDER BY r.run_id COLLATE "C" {"DESC" if desc else "ASC"}'
                           + (f" LIMIT {n}" if n is not None else ""), params)
    if not running:
        return got
    # Text and ids compared by code point, as in the database (COLLATE "C") and the folder store.
    merged = sorted([*got, *running], key=lambda row: (row[2], row[0]), reverse=desc)
    return merged if n is None else merged[:n]


def _page_of(rows: list[tuple[Any, ...]], want: int | None, limit: int | None, key: SortKey,
             keys_out: list[Any] | None) -> tuple[list[str], str | None]:
    """The page's run ids out of ``rows`` (``(rank, run id, number, text)``, one more than the page when a next
    page exists) and the next cursor; the page's order keys go to ``keys_out``."""
    page = rows if want is None else rows[:limit]
    nxt = None
    if want is not None and limit is not None and len(rows) > limit and page:
        nxt = encode_cursor(key, _order_key(page[-1]))
    if keys_out is not None:
        keys_out.extend(_order_key(row) for row in page)
    return [row[1] for row in page], nxt


def _order_key(row: tuple[Any, ...]) -> tuple[int, float, str, str]:
    """A row ``(rank, run id, number, text)`` as an order key (:func:`tracker.read.listing.order_key`)."""
    return (row[0], float(row[2]) if row[0] == NUMBER else 0.0, row[3] if row[0] == TEXT else "", row[1])


#: The run fields whose sort walks an index of ``tracker_runs`` (layouts 4 and 5).
_WALKED = ("created_at", "name", "id", "project", "group", "job_type")


def indexed(key: SortKey, flt: RunFilter) -> bool:
    """Whether a page of this sort and filter walks an index, costing about its rows, not the runs: a sort on a
    run's column (layout 4) or on a value of ``tracker_sort_values`` (a config key, a metric's figure,
    records, last step, status, end, duration: layouts 5 and 6), filtered by project, group, job type,
    status, tags or text (checked per row walked: status by seeks, tags and text over layout 6's columns;
    a rare tag is the tag index's few runs). Not indexed: a sort whose values could not all be kept."""
    del flt  # every filter is checked per row walked
    return sort_value_key(key) is not None or (key.kind == "field" and key.name in _WALKED)


#: The runs newest first (as the folder store lists them), numbered: what "first seen" means below.
_NEWEST = ("r AS (SELECT run_id, project, info, row_number() OVER (ORDER BY COALESCE(created_at, 0) DESC, "
           'run_id COLLATE "C" DESC) AS rn FROM tracker_runs)')


def choices_sql(store: Any) -> dict[str, Any]:
    """What the list's filters and columns offer (:func:`tracker.read.listing.choices`, the same answer), from
    SQL over the runs' rows: the JSON of each info keeps its keys' order, so "first seen" is the folder's."""
    from tracker.read.compare import better

    def column(sql: str, params: Any = ()) -> list[Any]:
        return [row[0] for row in store._fetch(sql, params)]

    projects = store._fetch(f"WITH {_NEWEST} SELECT project, count(*), min(rn) FROM r WHERE project IS NOT NULL "
                            "AND project <> '' GROUP BY project")
    tags = column("SELECT DISTINCT t FROM tracker_runs r, unnest(r.tags) t")
    groups = column("SELECT DISTINCT run_group FROM tracker_runs WHERE run_group IS NOT NULL AND run_group <> ''")
    job_types = column("SELECT DISTINCT job_type FROM tracker_runs WHERE job_type IS NOT NULL AND job_type <> ''")
    # Config keys, nested ones dotted (an empty object is a key of its own), in order of first appearance.
    keys = column(f"""WITH RECURSIVE {_NEWEST},
        c(path, v, ord) AS (
            SELECT e.k, e.v, ARRAY[r.rn, e.o] FROM r, json_each(CASE WHEN json_typeof(r.info->'config') = 'object'
                THEN r.info->'config' ELSE '{{}}'::json END) WITH ORDINALITY AS e(k, v, o)
            UNION ALL
            SELECT c.path || '.' || e.k, e.v, c.ord || e.o FROM c, json_each(c.v) WITH ORDINALITY AS e(k, v, o)
            WHERE json_typeof(c.v) = 'object')
        SELECT path FROM c WHERE json_typeof(v) <> 'object' OR NOT EXISTS (SELECT 1 FROM json_each(c.v))
        GROUP BY path ORDER BY min(ord)""")
    counts = store._fetch(f"""WITH {_NEWEST} SELECT e.k, count(*), min(ARRAY[r.rn, e.o]) FROM r,
        json_each(CASE WHEN json_typeof(r.info->'last_metrics') = 'object' THEN r.info->'last_metrics'
        ELSE '{{}}'::json END) WITH ORDINALITY AS e(k, v, o) GROUP BY e.k""")
    # The default metric column: the one most runs logged, ties to the first seen (as `tracker runs`).
    common = sorted(counts, key=lambda c: (-c[1], c[2]))
    statuses = sorted({row[0] for row in store._fetch(f"WITH {_WRITERS} SELECT DISTINCT COALESCE(ws.status, "
                                                     "'crashed') FROM tracker_runs r LEFT JOIN ws ON "
                                                     "ws.run_id = r.run_id", {"timeout": store._timeout()})})
    largest = min(projects, key=lambda p: (-p[1], p[2]))[0] if projects else None
    metric_names = sorted(c[0] for c in counts)
    return {"projects": sorted(p for p, _, _ in projects), "tags": sorted(tags), "statuses": statuses,
            "groups": sorted(groups), "job_types": sorted(job_types), "config_keys": keys,
            "metric_names": metric_names, "default_metric": common[0][0] if common else None,
            "metric_better": {n: better(n) for n in metric_names}, "largest_project": largest}


__all__ = ["INDEXES_4", "choices_sql", "filter_sql", "indexed", "metric_join", "migrate_to_4", "page_ids",
           "sort_exprs", "status_condition"]
