"""SQL over a store with DuckDB: the views ``runs``, ``metrics``, ``records`` and one per schema.

DuckDB reads the JSONL segments itself. Every line is first checked against
its CRC here, as the Python readers check it; a segment whose damage DuckDB
would not skip on its own (a changed byte in a line that is still JSON, a
torn last line that parses) is read from a copy of its sound lines instead.
Damage is reported as the readers report it (one warning per line) and never
fails a query. That is the reference path (``use_index=False``,
``TRACKER_INDEX=off``, no pyarrow); otherwise the views read the derived
columns under ``<store>/index/`` (:mod:`tracker.query.columnar`), which hold
the same records and the same damage reports.

Views (see DESIGN.md, "Query and team store"):

- ``runs``: id, name, project, status, created_at, ended_at, tags, config,
  ``"group"`` (quoted: a keyword of SQL), job_type, then one column per
  top-level config key (``config_<key>`` on a clash);
- ``records``: run_id, schema, step, time, writer, seq, data (JSON);
- ``metrics``: run_id, step, time, name, value (DOUBLE, long format);
- ``"<schema>"``: run_id, step, time and one typed column per field;
- ``metric_stats``: run_id, name, count, first, last, min, max and the steps
  of first, last, min and max, per run and metric (the run catalog's figures).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from tracker.core.errors import QueryError, TrackerError
from tracker.core.records import Problem, RunInfo

# Checking segments and checking statements live in their own modules; their names stay importable from here.
from tracker.query.scan import SegmentScan, report, scan_segment
from tracker.query.statements import (  # noqa: F401 - INSTALL_HINT and READING re-exported for old import paths
    INSTALL_HINT,
    READING,
    check_read_only,
    check_utf8,
    duckdb_module,
    referenced,
)

if TYPE_CHECKING:
    import duckdb

#: The columns DuckDB reads from each line (the CRC was checked before).
EVENT_COLUMNS = ("{kind: 'VARCHAR', schema: 'VARCHAR', step: 'BIGINT', time: 'DOUBLE', w: 'VARCHAR', "
                 "seq: 'BIGINT', data: 'JSON'}")
#: DuckDB refuses longer lines by default (16 MiB); a heatmap record may be long.
MAX_LINE = 1 << 30
BASE_RUN_COLUMNS = ("id", "name", "project", "status", "created_at", "ended_at", "tags", "config", "group", "job_type")
#: The views that are not one per schema (a schema of one of these names gets no typed view).
VIEW_NAMES = frozenset({"runs", "metrics", "records", "metric_stats"})
STATS_COLUMNS = (("run_id", "VARCHAR"), ("name", "VARCHAR"), ("count", "BIGINT"), ("first", "DOUBLE"),
                 ("last", "DOUBLE"), ("min", "DOUBLE"), ("max", "DOUBLE"), ("first_step", "BIGINT"),
                 ("last_step", "BIGINT"), ("min_step", "BIGINT"), ("max_step", "BIGINT"))
_RUN_OF_FILE = r"([^/\\]+)[/\\][^/\\]+$"


def quote(name: str) -> str:
    """``name`` as a SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


# --- typed columns -------------------------------------------------------------------------------

def field_type(tp: Any) -> str:
    """The DuckDB type of a schema field's annotation (float DOUBLE, int BIGINT, str VARCHAR, ...)."""
    origin = typing.get_origin(tp)
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        kinds = {field_type(a) for a in args}
        if len(kinds) == 1:
            return kinds.pop()
        if kinds <= {"DOUBLE", "BIGINT"}:
            return "DOUBLE"
        return "JSON"
    if tp is bool:
        return "BOOLEAN"
    if tp is int:
        return "BIGINT"
    if tp is float:
        return "DOUBLE"
    if tp is str:
        return "VARCHAR"
    if origin is typing.Literal:
        values = typing.get_args(tp)
        if all(isinstance(v, str) for v in values):
            return "VARCHAR"
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return "BIGINT"
        return "JSON"
    if origin in (list, tuple, Sequence, typing.Sequence) or origin is getattr(__import__("collections.abc").abc,
                                                                               "Sequence", None):
        inner = {field_type(a) for a in args if a is not Ellipsis}
        if inner == {"BIGINT"}:
            return "BIGINT[]"
        if inner and inner <= {"DOUBLE", "BIGINT"}:
            return "DOUBLE[]"
        return "JSON"
    return "JSON"


def schema_columns(compiled: Any) -> dict[str, str] | None:
    """``{field: DuckDB type}`` of a registered schema, or ``None`` for a free-form one."""
    if getattr(compiled, "free_form", False):
        return None
    cls = compiled.cls
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an unresolvable annotation reads as JSON
        hints = {}
    return {f.name: field_type(hints.get(f.name, Any)) for f in attrs.fields(cls)}


def _config_type(values: list[Any]) -> str:
    kinds = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("b")
        elif isinstance(v, int):
            kinds.add("i")
        elif isinstance(v, float) or v in ("NaN", "Infinity", "-Infinity"):
            kinds.add("f")
        elif isinstance(v, str):
            kinds.add("s")
        else:
            kinds.add("j")
    if not kinds:
        return "JSON"
    if kinds == {"b"}:
        return "BOOLEAN"
    if kinds == {"i"}:
        return "BIGINT"
    if kinds <= {"i", "f"}:
        return "DOUBLE"
    if kinds == {"s"}:
        return "VARCHAR"
    return "JSON"


def run_columns(infos: Sequence[RunInfo]) -> list[tuple[str, str, str]]:
    """``(column, config key, DuckDB type)`` of the config columns of the ``runs`` view."""
    keys: dict[str, list[Any]] = {}
    for info in infos:
        if isinstance(info.config, dict):
            for k, v in info.config.items():
                keys.setdefault(str(k), []).append(v)
    # DuckDB compares names without case: "lr" and "LR" would be one column twice.
    taken = {c.casefold() for c in BASE_RUN_COLUMNS}
    out = []
    for k, values in keys.items():
        if not k.strip() or "\x00" in k:
            continue  # no column can be named so (stored before keys were checked); still in `config`
        col = k
        while col.casefold() in taken:
            col = f"config_{col}"
        taken.add(col.casefold())
        out.append((col, k, _config_type(values)))
    return out


# --- building the views --------------------------------------------------------------------------

@attrs.define
class Sources:
    """What the views read.

    :ivar infos: every run's info (the ``runs`` view).
    :ivar files: JSONL files DuckDB reads itself, each ``<folder>/<run_id>/<name>.jsonl``.
    :ivar copies: ``(run_id, lines)`` read through a temporary copy instead.
    :ivar metric_names: every metric name of the JSONL part.
    :ivar index: the derived columns (:class:`tracker.query.columnar.ColumnSources`) the record views
        read instead of the JSONL, if used.
    :ivar stats: the rows of ``metric_stats`` (from the run catalog); ``None``: computed from ``metrics``.
    :ivar dump: writes records as JSONL files into a folder (``<folder>/<run_id>/<name>.jsonl``)
        and returns their paths; they are loaded at once (the team store's records).
    """

    infos: list[RunInfo]
    files: list[str] = attrs.field(factory=list)
    copies: list[tuple[str, list[bytes]]] = attrs.field(factory=list)
    metric_names: dict[str, None] = attrs.field(factory=dict)
    index: Any = None
    dump: Callable[[Path], list[str]] | None = None
    stats: list[dict[str, Any]] | None = None


def _write_runs(path: Path, infos: Sequence[RunInfo], cols: list[tuple[str, str, str]]) -> None:
    with open(path, "wb") as f:
        for info in infos:
            cfg = info.config if isinstance(info.config, dict) else {}
            row = {"id": info.id, "name": info.name, "project": info.project, "status": info.status,
                   "created_at": info.created_at, "ended_at": info.ended_at, "tags": list(info.tags or []),
                   "config": cfg, "group": getattr(info, "group", None), "job_type": getattr(info, "job_type", None)}
            for i, (_, key, _) in enumerate(cols):
                row[f"c{i}"] = cfg.get(key)
            f.write(_encode_row(row))


def _encode_row(row: dict[str, Any]) -> bytes:
    from tracker.core.format import encode_nonfinite

    try:
        return orjson.dumps(row) + b"\n" if _finite(row) else orjson.dumps(encode_nonfinite(row)) + b"\n"
    except TypeError:
        return orjson.dumps(row, default=str) + b"\n"


def _finite(obj: Any) -> bool:
    t = type(obj)
    if t is float:
        return obj - obj == 0.0
    if t is dict:
        return all(_finite(v) for v in obj.values())
    if t is list:
        return all(_finite(v) for v in obj)
    return True


class Catalog:
    """A DuckDB connection with the store's views.

    :param sources: what the views read.
    :param host: the plugin host whose schemas get typed views (``None``: none).
    :param needed: the view names a query refers to; the others are left out
        (``None``: all). ``metrics``, ``records`` and the typed views read records.
    """

    def __init__(self, sources: Sources, host: Any = None, needed: set[str] | None = None) -> None:
        duckdb = duckdb_module()
        self.con: duckdb.DuckDBPyConnection = duckdb.connect(":memory:")
        self.sources = sources
        self.host = host
        self._locked = False
        tmp = Path(tempfile.mkdtemp(prefix="tracker-sql-"))
        try:
            self._build(tmp, needed)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _exec(self, sql: str) -> None:
        self.con.execute(sql)

    def _build(self, tmp: Path, needed: set[str] | None) -> None:
        s = self.sources
        cols = run_columns(s.infos)
        runs_file = tmp / "runs.jsonl"
        _write_runs(runs_file, s.infos, cols)
        types = ["id: 'VARCHAR'", "name: 'VARCHAR'", "project: 'VARCHAR'", "status: 'VARCHAR'",
                 "created_at: 'DOUBLE'", "ended_at: 'DOUBLE'", "tags: 'JSON'", "config: 'JSON'",
                 '"group": \'VARCHAR\'', "job_type: 'VARCHAR'"]
        types += [f"c{i}: {literal(kind)}" for i, (_, _, kind) in enumerate(cols)]
        select = ", ".join(quote(c) for c in BASE_RUN_COLUMNS) + \
            "".join(f", c{i} AS {quote(col)}" for i, (col, _, _) in enumerate(cols))
        self._exec(f"CREATE TEMP TABLE runs AS SELECT {select} FROM read_ndjson({literal(str(runs_file))}, "
                   f"columns={{{', '.join(types)}}})" if s.infos else
                   "CREATE TEMP TABLE runs (id VARCHAR, name VARCHAR, project VARCHAR, status VARCHAR, "
                   "created_at DOUBLE, ended_at DOUBLE, tags JSON, config JSON, \"group\" VARCHAR, job_type VARCHAR)")
        if s.stats is not None and (needed is None or "metric_stats" in needed):
            self._stats_table(tmp / "stats.jsonl", s.stats)
        wants_records = needed is None or bool(needed - {"runs", "metric_stats"}) or \
            (s.stats is None and "metric_stats" in needed)
        if not wants_records:
            return
        if s.index is not None:
            s.index.prepare(self.con)
        else:
            self._events(tmp)
            self._records()
            self._metrics()
        if s.stats is None:
            self._stats_view()
        if self.host is not None:
            for name, compiled in self.host.schemas.items():
                if name in VIEW_NAMES or (needed is not None and name not in needed):
                    continue
                columns = schema_columns(compiled)
                if columns is not None:
                    self._typed(name, columns)

    def _stats_table(self, path: Path, rows: list[dict[str, Any]]) -> None:
        with open(path, "wb") as f:
            for row in rows:
                f.write(_encode_row(row))
        cols = ", ".join(name for name, _ in STATS_COLUMNS)
        if rows:
            types = ", ".join(f"{name}: {literal(kind)}" for name, kind in STATS_COLUMNS)
            self._exec(f"CREATE TEMP TABLE metric_stats AS SELECT {cols} FROM read_ndjson({literal(str(path))}, "
                       f"columns={{{types}}})")
        else:
            self._exec("CREATE TEMP TABLE metric_stats (" + ", ".join(f"{n} {k}" for n, k in STATS_COLUMNS) + ")")

    def _stats_view(self) -> None:
        # Without a catalog (the team store): the figures from the metrics view, log order taken as time order.
        self._exec(
            "CREATE TEMP VIEW metric_stats AS SELECT run_id, name, count(*) AS count, "
            "arg_min(value, time) AS first, arg_max(value, time) AS last, "
            "min(value) FILTER (WHERE NOT isnan(value)) AS min, max(value) FILTER (WHERE NOT isnan(value)) AS max, "
            "arg_min(step, time) AS first_step, arg_max(step, time) AS last_step, "
            "arg_min(step, value) FILTER (WHERE NOT isnan(value)) AS min_step, "
            "arg_max(step, value) FILTER (WHERE NOT isnan(value)) AS max_step FROM metrics GROUP BY run_id, name")

    def _events(self, tmp: Path) -> None:
        s = self.sources
        parts = []
        read = (f"columns={EVENT_COLUMNS}, format='newline_delimited', ignore_errors=true, filename=true, "
                f"maximum_object_size={MAX_LINE}")
        pick = (f"regexp_extract(filename, {literal(_RUN_OF_FILE)}, 1) AS run_id, kind, schema, step, time, "
                "w AS writer, seq, data")
        if s.files:
            self.con.execute("SET VARIABLE tracker_files = $files", {"files": s.files})
            parts.append(f"SELECT {pick} FROM read_ndjson(getvariable('tracker_files'), {read}) "
                         "WHERE kind IS NOT NULL")
        copies: list[str] = []
        if s.dump is not None:
            copies += s.dump(tmp / "dump")
        if s.copies:
            for i, (run_id, lines) in enumerate(s.copies):
                folder = tmp / "copies" / run_id
                folder.mkdir(parents=True, exist_ok=True)
                p = folder / f"{i}.jsonl"
                with open(p, "wb") as f:
                    for line in lines:
                        f.write(line + b"\n")
                copies.append(str(p))
        if copies:
            self.con.execute("SET VARIABLE tracker_copies = $files", {"files": copies})
            self._exec(f"CREATE TEMP TABLE _copied AS SELECT {pick} FROM "
                       f"read_ndjson(getvariable('tracker_copies'), {read}) WHERE kind IS NOT NULL")
            parts.append("SELECT * FROM _copied")
        if not parts:
            parts.append("SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS kind, NULL::VARCHAR AS schema, "
                         "NULL::BIGINT AS step, NULL::DOUBLE AS time, NULL::VARCHAR AS writer, NULL::BIGINT AS seq, "
                         "NULL::JSON AS data WHERE false")
        self._exec("CREATE TEMP VIEW _jsonl_events AS " + " UNION ALL ".join(parts))

    def _records(self) -> None:
        jsonl = "SELECT run_id, schema, step, time, writer, seq, data FROM _jsonl_events WHERE kind = 'record'"
        self._exec(f"CREATE TEMP VIEW records AS {jsonl}")

    def _metrics(self) -> None:
        names = list(self.sources.metric_names)
        parts = []
        if names:
            struct = orjson.dumps(dict.fromkeys(names, "DOUBLE")).decode()
            fields = ", ".join(f"m.d.{quote(n)}" for n in names)
            labels = ", ".join(literal(n) for n in names)
            parts.append(
                "SELECT run_id, step, time, name, value FROM ("
                f"SELECT run_id, step, time, unnest([{labels}]) AS name, unnest([{fields}]) AS value FROM ("
                f"SELECT run_id, step, time, json_transform(data, {literal(struct)}) AS d FROM _jsonl_events "
                "WHERE kind = 'record' AND schema = 'metrics') AS m) WHERE value IS NOT NULL")
        if not parts:
            parts.append("SELECT NULL::VARCHAR AS run_id, NULL::BIGINT AS step, NULL::DOUBLE AS time, "
                         "NULL::VARCHAR AS name, NULL::DOUBLE AS value WHERE false")
        self._exec("CREATE TEMP VIEW metrics AS " + " UNION ALL ".join(parts))

    def _typed(self, name: str, columns: dict[str, str]) -> None:
        struct = orjson.dumps(columns).decode()
        picks = []
        for field in columns:
            alias = field if field not in ("run_id", "step", "time") else f"data_{field}"
            picks.append(f"t.d.{quote(field)} AS {quote(alias)}")
        body = ", ".join(picks)
        self._exec(f"CREATE TEMP VIEW {quote(name)} AS SELECT t.run_id, t.step, t.time{', ' if body else ''}{body} "
                   f"FROM (SELECT run_id, step, time, json_transform(data, {literal(struct)}) AS d FROM records "
                   f"WHERE schema = {literal(name)}) AS t")

    def lock(self) -> None:
        """Make the connection read-only for whatever SQL comes next (once the views are built).

        DuckDB's own settings, then locked so that no statement can change them:
        no file access but reading the folders the views read (the store's
        ``runs/`` and ``index/``), no extension installed or loaded, times in UTC.
        Writing into those folders is refused by :func:`check_read_only`, which
        lets only reading statements through.
        """
        if self._locked:
            return
        s = self.sources
        folders = {str(Path(f).parent.parent) for f in s.files}
        index_folder = getattr(s.index, "folder", None)
        if index_folder is not None:
            folders.add(str(index_folder))
        allowed = ", ".join(literal(f.rstrip("/\\") + os.sep) for f in sorted(folders))
        for setting in ("SET TimeZone = 'UTC'", f"SET allowed_directories = [{allowed}]",
                        "SET autoinstall_known_extensions = false", "SET allow_community_extensions = false",
                        "SET enable_external_access = false", "SET lock_configuration = true"):
            self.con.execute(setting)
        self._locked = True

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        """Run ``query`` over the views, read-only (see :meth:`lock` and :func:`check_read_only`).

        Columns of ``TIMESTAMP WITH TIME ZONE`` come back as UTC ``TIMESTAMP``
        (Python's ``datetime`` without pytz).

        :raises QueryError: carrying DuckDB's message; a statement that would write, saying so.
        """
        duckdb = duckdb_module()
        check_read_only(query)
        self.lock()
        try:
            return plain_times(self.con.sql(query))
        except duckdb.PermissionException as exc:
            raise QueryError(f"{exc} (SQL over the store reads only the store's own files)") from None
        except duckdb.Error as exc:
            raise QueryError(str(exc)) from None


def plain_times(rel: Any) -> Any:
    """``rel`` with ``TIMESTAMP WITH TIME ZONE`` columns cast to UTC ``TIMESTAMP`` (no pytz needed to fetch)."""
    if rel is None:
        return rel
    types = [str(t) for t in rel.types]
    if not any("TIME ZONE" in t for t in types):
        return rel
    picks = []
    for col, t in zip(rel.columns, types, strict=True):
        plain = t.replace("TIMESTAMP WITH TIME ZONE", "TIMESTAMP")
        picks.append(quote(col) if plain == t else f"CAST({quote(col)} AS {plain}) AS {quote(col)}")
    return rel.project(", ".join(picks))


# --- a folder store ------------------------------------------------------------------------------

def folder_sources(store: Any, needed: set[str] | None = None, use_index: bool = True) -> Sources:
    """The sources of a folder store: the derived columns, or (``use_index=False``) its JSONL segments.

    The derived columns are used unless ``use_index`` is false, ``TRACKER_INDEX=off``
    or pyarrow is missing; both ways give the same answers.
    """
    from tracker.query.columnar import ColumnSources, arrow_module, stats_rows
    from tracker.read.index import index_enabled

    wants_stats = needed is None or "metric_stats" in needed
    if use_index and index_enabled() and arrow_module() is not None:
        from tracker.read.segment import segment_sizes

        # How far each segment reaches as the query begins: the listing reads at least that far, and the
        # columns read no further, so a run logging fast is read once, never chased.
        sizes = {rid: segment_sizes(store.path / "runs" / rid) for rid in store.run_ids()}
        entries = store.catalog()
        cols = ColumnSources(store, entries, needed, sizes)
        report(cols.problems)
        return Sources([e.info for e in entries], index=cols, stats=stats_rows(entries) if wants_stats else None)
    sources = jsonl_sources(store, needed)
    if wants_stats:
        sources.stats = stats_rows(store.catalog())
    return sources


def jsonl_sources(store: Any, needed: set[str] | None = None) -> Sources:
    """The sources of a folder store read from its JSONL segments, every line checked here."""
    from tracker.read.reader import RunView

    infos: list[RunInfo] = []
    host = getattr(store, "_host", None)
    want_records = needed is None or bool(needed - {"runs", "metric_stats"})
    files: list[str] = []
    copies: list[tuple[str, list[bytes]]] = []
    names: dict[str, None] = {}
    problems: list[Problem] = []
    for rid in store.run_ids():
        view = RunView(store.path, rid, host=host)
        try:
            info = view.info
        except TrackerError:
            continue
        infos.append(info)
        if not want_records:
            continue
        quiet = info.status == "running"
        for path in view.segment_paths():
            scan = scan_segment(rid, path, quiet)
            problems += scan.problems
            names.update(scan.metric_names)
            if scan.sound is None:
                files.append(str(path))
            else:
                copies.append((rid, scan.sound))
    infos.sort(key=lambda i: (i.created_at or 0.0, i.id), reverse=True)
    report(problems)
    return Sources(infos, files, copies, names)


def query(store: Any, sql: str, *, use_index: bool = True) -> duckdb.DuckDBPyRelation:
    """Run ``sql`` over a store's views; returns a DuckDB relation (``.fetchall()``, ``.df()``, ...).

    :param store: a :class:`tracker.Store` (a folder) or a team store.
    :param use_index: read the derived columns under ``<store>/index/`` (``False``: parse the JSONL).
    :raises QueryError: carrying DuckDB's message.
    :raises TrackerError: when DuckDB is not installed.
    """
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("expected a SQL query, given an empty one")
    check_utf8(sql)
    check_read_only(sql)  # first: even asking DuckDB for the table names of an EXPORT creates its folder
    needed = referenced(sql)
    own = getattr(store, "sql_sources", None)
    if own is not None:
        sources = own(needed)
    else:
        sources = folder_sources(store, needed, use_index=use_index)
    host = store.host if needed is None or needed - {"runs", "records", "metrics", "metric_stats"} else None
    return Catalog(sources, host, needed).sql(sql)


__all__ = ["Catalog", "SegmentScan", "Sources", "check_read_only", "check_utf8", "duckdb_module", "field_type",
           "folder_sources", "jsonl_sources", "plain_times", "query", "report", "scan_segment", "schema_columns"]
