"""Layout 6: what a tag or text filter matches, as columns of ``tracker_runs`` that PostgreSQL keeps itself.

Before layout 6 a filter on a tag or on text parsed every run's ``info`` JSON at each question (seconds at
100,000 runs). Two generated columns hold what those filters look at, written with the row by whatever
writes it (``tracker sync``, the follower, a script of SQL):

- ``tags``: the run's tags as a ``text[]``, with a GIN index, so that ``tags @> ARRAY['a', 'b']`` (runs with
  every tag asked) is an index lookup for a rare tag and a check per row for a common one, whichever the
  planner finds cheaper;
- ``search``: the lower-cased id, name, project, notes, group, job type and tags, one after the other with
  ``chr(1)`` between them, so that the text filter (is the text in one of them, case folded) is one
  ``LIKE '%text%'`` over a plain column.

:func:`migrate_to_6` adds them, and the end and duration rows of ``tracker_sort_values``
(:mod:`tracker.team.sortvalues`), under ``tracker sync``'s layout lock.
"""

from __future__ import annotations

from typing import Any

#: What separates the fields of ``search`` (a text holding it is matched field by field instead).
SEPARATOR = "\x01"

#: The tags of ``x.j`` (a run's info) as the filter has always compared them: ``json_array_elements_text``
#: (a tag that is not a string is its JSON text).
_TAGS_OF = ("json_array_elements_text(CASE WHEN json_typeof(x.j -> 'tags') = 'array' THEN x.j -> 'tags' "
            "ELSE '[]'::json END)")

FUNCTIONS_6 = [
    # Over the info with each NUL character (which no text may hold) read as U+FFFD (tracker.team.sortvalues).
    f"""CREATE OR REPLACE FUNCTION tracker_info_tags(info json) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(array_agg(DISTINCT t) FILTER (WHERE t IS NOT NULL), '{{}}'::text[])
    FROM (SELECT tracker_json_clean(info) AS j) x, {_TAGS_OF} AS t $$""",
    f"""CREATE OR REPLACE FUNCTION tracker_info_search(run_id text, name text, project text, info json,
                                                   run_group text, job_type text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lower(concat_ws(chr(1), run_id, name, project, x.j ->> 'notes', run_group, job_type,
                           (SELECT string_agg(t, chr(1)) FROM {_TAGS_OF} AS t)))
    FROM (SELECT tracker_json_clean(info) AS j) x $$""",
]

COLUMNS_6 = (
    "ALTER TABLE tracker_runs "
    "ADD COLUMN IF NOT EXISTS tags text[] GENERATED ALWAYS AS (tracker_info_tags(info)) STORED, "
    "ADD COLUMN IF NOT EXISTS search text GENERATED ALWAYS AS "
    "(tracker_info_search(run_id, name, project, info, run_group, job_type)) STORED"
)

INDEXES_6 = ["CREATE INDEX IF NOT EXISTS tracker_runs_tags ON tracker_runs USING gin (tags)"]


def migrate_to_6(cur: Any) -> None:
    """Layout 5 -> 6: the ``tags`` and ``search`` columns and the tag index; the trigger functions of
    :mod:`tracker.team.sortvalues` as this version writes them, and every run's end and duration rows.

    Run under the layout lock (:func:`tracker.team.database.check_layout`), in its transaction.
    """
    from tracker.team.sortvalues import refresh_functions

    refresh_functions(cur)  # tracker_json_clean, which the columns use, and the end and duration rows' functions
    for stmt in FUNCTIONS_6:
        cur.execute(stmt)
    cur.execute(COLUMNS_6)
    for stmt in INDEXES_6:
        cur.execute(stmt)
    cur.execute("SELECT tracker_sort_times(ARRAY(SELECT run_id FROM tracker_runs))")
    cur.execute("ANALYZE tracker_runs")
    cur.execute("ANALYZE tracker_sort_values")


def tags_condition(tags: Any, params: dict[str, Any]) -> str:
    """The condition that run ``r`` has every tag of ``tags``."""
    params["tags"] = list(tags)
    return "r.tags @> %(tags)s::text[]"


def text_condition(q: str, params: dict[str, Any]) -> str:
    """The condition that ``q`` (case folded) is in run ``r``'s id, name, project, notes, group, job type or a tag."""
    params["q"] = q.casefold()
    if SEPARATOR not in params["q"]:
        # LIKE rather than strpos: the planner estimates how many runs a pattern keeps from the column's
        # statistics, so a rare text is looked for over the runs first, not per row of a long walk.
        params["q_like"] = "%" + "".join("\\" + c if c in "\\%_" else c for c in params["q"]) + "%"
        return "r.search LIKE %(q_like)s"
    # A text holding the separator: each field looked at apart (the separator would match across two).
    hay = ["r.run_id", "r.name", "r.project", "r.info->>'notes'", "r.run_group", "r.job_type"]
    parts = [f"strpos(lower(COALESCE({h}, '')), %(q)s) > 0" for h in hay]
    parts.append("EXISTS (SELECT 1 FROM unnest(r.tags) t WHERE strpos(lower(t), %(q)s) > 0)")
    return "(" + " OR ".join(parts) + ")"


__all__ = ["COLUMNS_6", "FUNCTIONS_6", "INDEXES_6", "SEPARATOR", "migrate_to_6", "tags_condition", "text_condition"]
