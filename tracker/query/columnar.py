"""The SQL views over the derived columns (``<store>/index/``) instead of the JSONL text.

Each segment's derived data (:mod:`tracker.read.index`) is loaded, and extended
by the lines appended since it was built, so a query sees every record the
Python readers see. Its numpy columns become Arrow arrays without copies and
are registered with DuckDB, which scans only the columns a query touches:

- ``_metrics_wide``: run_id, step, time (writer, seq and the value types too
  when ``records`` is needed), then one DOUBLE column per metric name, NULL
  where a record lacks it (NaN stays NaN);
- ``metrics``: one ``UNION ALL`` branch per name over that table, so that
  ``WHERE name = 'loss'`` leaves DuckDB one column to read;
- ``records``: the ``metrics`` records with their data rebuilt as JSON in
  SQL (NaN and infinities as the store's strings, ints and bools as logged),
  and the records of the other schemas with their data as stored.

DuckDB plans a ``UNION ALL`` in time that grows with the square of its
branches (a second for a hundred, minutes for a thousand), so past
:data:`WIDE_MAX` metric names the long format is built here instead, as one
Arrow table of (run, step, time, name, value) rows, and the data of
``metrics`` records as JSON text.

Needs pyarrow (the ``query`` extra installs it); without it the views read the
JSONL as before (:func:`tracker.query.sql.folder_sources`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import orjson

from tracker.core.errors import StoreError
from tracker.core.records import Problem
from tracker.core.summary import _MISSING_BITS
from tracker.read.index import CatalogEntry, SchemaCols, Writable, load_segment, warn_once
from tracker.read.segment import segment_paths, segment_sizes

METRICS = "metrics"
#: Up to this many metric names, ``metrics`` is a UNION ALL over the wide table; past it, a long table.
WIDE_MAX = 32
#: Views that need records (the others need only the catalog).
_CATALOG_VIEWS = frozenset({"runs", "metric_stats"})


def arrow_module() -> Any:
    """``pyarrow``, or ``None`` when it is not installed (the views then read the JSONL)."""
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class _Codes:
    """Strings to dictionary codes, shared by every chunk of one column."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def code(self, value: str) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.codes)
        return c

    def values(self, pa: Any) -> Any:
        return pa.array(list(self.codes), pa.string())


def _writer_codes(part: SchemaCols, codes: _Codes) -> Any:
    """The dictionary code of each record's writer id (a segment has one writer: one run of codes)."""
    import numpy as np

    bounds = [*part.writers, [part.n, None]]
    if len(part.writers) == 1:
        return np.full(part.n, codes.code(part.writers[0][1]), np.int32)
    out = np.empty(part.n, np.int32)
    for (i, w), (j, _) in zip(bounds, bounds[1:], strict=False):
        out[i:j] = codes.code(w)
    return out


def _float_column(pa: Any, col: Any) -> Any:
    """A float64 Arrow array over ``col``'s buffer, NULL where it holds tracker.MISSING."""
    import numpy as np

    present = col.view(np.uint64) != _MISSING_BITS
    if present.all():
        return pa.array(col)
    bitmap = pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.Array.from_buffers(pa.float64(), len(col), [bitmap, pa.py_buffer(col)], null_count=-1)


class ColumnSources:
    """The derived columns of a folder store's runs, as the Arrow tables the views scan.

    :param store: the :class:`tracker.Store`.
    :param entries: the runs' catalog entries (their ids are the runs read).
    :param needed: the views a query refers to (``None``: all).
    :param sizes: per run, how far to read each segment (by file name): its size when the query began
        (default: noted for every run before the first is read). A run logging faster than the query
        reads is read as it was, never chased.
    """

    def __init__(self, store: Any, entries: list[CatalogEntry], needed: set[str] | None,
                 sizes: dict[str, dict[str, int]] | None = None) -> None:
        pa = arrow_module()
        assert pa is not None
        self.pa = pa
        self.folder = store.path / "index"
        self.entries = entries
        want = None if needed is None else needed - _CATALOG_VIEWS
        self.want_records = want is None or bool(want - {METRICS})
        self.want_any = want is None or bool(want)
        self.metric_names: dict[str, int] = {}
        self.kind_names: set[str] = set()
        self._mw_batches: list[tuple[int, SchemaCols, Any]] = []
        self._other: list[tuple[int, SchemaCols]] = []
        self.runs = _Codes()
        self.writers = _Codes()
        self.problems: list[Problem] = []
        if self.want_any:
            self._load(store, sizes)

    def _load(self, store: Any, sizes: dict[str, dict[str, int]] | None) -> None:
        writable = Writable()
        warn = warn_once(set())
        schemas = None if self.want_records else {METRICS}
        if sizes is None:
            sizes = {e.info.id: segment_sizes(store.path / "runs" / e.info.id) for e in self.entries}
        for entry in self.entries:
            rid = entry.info.id
            quiet = entry.info.status == "running"
            code = self.runs.code(rid)
            run_dir = store.path / "runs" / rid
            ends = sizes.get(rid, {})
            for path in segment_paths(run_dir):
                try:
                    ix = load_segment(store.path, rid, path, schemas, writable, warn, end=ends.get(path.name))
                except (StoreError, OSError) as exc:
                    from tracker.host.bus import TrackerWarning

                    warnings.warn(f"tracker: run {rid} read in part: {exc}", TrackerWarning, stacklevel=3)
                    continue
                for line, kind, message in ix.problems:
                    self.problems.append(Problem(str(path), line, kind, message))
                if ix.rest and not quiet:
                    self.problems.append(Problem(str(path), ix.lines + 1, "torn",
                                                 f"the last line is incomplete ({len(ix.rest)} bytes): "
                                                 "a write was cut off"))
                for name, part in ix.parts.items():
                    if not part.n:
                        continue
                    if name == METRICS:
                        for k in part.cols:
                            self.metric_names.setdefault(k, len(self.metric_names))
                        self.kind_names.update(k for k, a in part.kinds.items() if a.any())
                        self._mw_batches.append((code, part, _writer_codes(part, self.writers)
                                                 if self.want_records else None))
                    elif self.want_records:
                        self._other.append((code, part))

    # --- Arrow tables ---------------------------------------------------------------------------

    def _dict(self, codes: Any, values: Any) -> Any:
        pa = self.pa
        return pa.DictionaryArray.from_arrays(pa.array(codes), values)

    @property
    def wide(self) -> bool:
        """Whether ``metrics`` is a UNION ALL over ``_metrics_wide`` (few names) rather than a long table."""
        return len(self.metric_names) <= WIDE_MAX

    def long_table(self) -> Any:
        """``_metrics_long``: one row per metric value a record holds (run_id, step, time, name, value)."""
        import numpy as np

        pa = self.pa
        codes = self.metric_names
        cols: dict[str, list[Any]] = {k: [] for k in ("run_id", "step", "time", "name", "value")}
        for code, part, _ in self._mw_batches:
            for name, col in part.cols.items():
                present = col.view(np.uint64) != _MISSING_BITS
                idx = slice(None) if present.all() else np.flatnonzero(present)
                values = col[idx]
                k = len(values)
                cols["run_id"].append(np.full(k, code, np.int32))
                cols["name"].append(np.full(k, codes[name], np.int32))
                cols["step"].append(part.step[idx])
                cols["time"].append(part.time[idx])
                cols["value"].append(values)

        def cat(key: str, dtype: Any) -> Any:
            return np.concatenate(cols[key]) if cols[key] else np.zeros(0, dtype)

        return pa.table({
            "run_id": self._dict(cat("run_id", np.int32), self.runs.values(pa)),
            "step": pa.array(cat("step", np.int64)), "time": pa.array(cat("time", np.float64)),
            "name": self._dict(cat("name", np.int32), pa.array(list(codes), pa.string())),
            "value": pa.array(cat("value", np.float64)),
        })

    def metrics_table(self) -> Any:
        """``_metrics_wide``: one row per ``metrics`` record, one column per metric name (``m0``, ``m1``...).

        With more than :data:`WIDE_MAX` names, no value columns but ``data``: each record's JSON text.
        """
        import numpy as np

        pa = self.pa
        names = list(self.metric_names) if self.wide else []
        kinds = [n for n in names if n in self.kind_names]
        run_values = self.runs.values(pa)
        writer_values = self.writers.values(pa)
        fields = [("run_id", pa.dictionary(pa.int32(), pa.string())), ("step", pa.int64()), ("time", pa.float64())]
        if self.want_records:
            fields += [("writer", pa.dictionary(pa.int32(), pa.string())), ("seq", pa.int64())]
        fields += [(f"m{i}", pa.float64()) for i in range(len(names))]
        fields += [(f"k{self.metric_names[n]}", pa.uint8()) for n in kinds]
        if not self.wide and self.want_records:
            fields.append(("data", pa.string()))
        schema = pa.schema(fields)
        batches = []
        for code, part, wcodes in self._mw_batches:
            n = part.n
            arrays = [self._dict(np.full(n, code, np.int32), run_values), pa.array(part.step), pa.array(part.time)]
            if self.want_records:
                arrays += [self._dict(wcodes, writer_values), pa.array(part.seq)]
            for name in names:
                col = part.cols.get(name)
                arrays.append(pa.nulls(n, pa.float64()) if col is None else _float_column(pa, col))
            for name in kinds:
                k = part.kinds.get(name)
                arrays.append(pa.array(k) if k is not None else pa.nulls(n, pa.uint8()))
            if not self.wide and self.want_records:
                arrays.append(pa.array(_json_texts(part), pa.string()))
            batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
        return pa.Table.from_batches(batches, schema=schema)

    def other_table(self) -> Any:
        """``_records_other``: the records of every schema but ``metrics``, data as stored (JSON text)."""
        import numpy as np

        pa = self.pa
        schemas = _Codes()
        cols: dict[str, list[Any]] = {k: [] for k in ("run_id", "schema", "step", "time", "writer", "seq", "data")}
        for code, part in self._other:
            n = part.n
            cols["run_id"].append(np.full(n, code, np.int32))
            cols["schema"].append(np.full(n, schemas.code(part.name), np.int32))
            cols["step"].append(part.step)
            cols["time"].append(part.time)
            cols["writer"].append(_writer_codes(part, self.writers))
            cols["seq"].append(part.seq)
            cols["data"].extend(orjson.dumps(d).decode() for d in part.datas())

        def cat(key: str, dtype: Any) -> Any:
            return np.concatenate(cols[key]) if cols[key] else np.zeros(0, dtype)

        return pa.table({
            "run_id": self._dict(cat("run_id", np.int32), self.runs.values(pa)),
            "schema": self._dict(cat("schema", np.int32), schemas.values(pa)),
            "step": pa.array(cat("step", np.int64)),
            "time": pa.array(cat("time", np.float64)),
            "writer": self._dict(cat("writer", np.int32), self.writers.values(pa)),
            "seq": pa.array(cat("seq", np.int64)),
            "data": pa.array(cols["data"], pa.string()),
        })

    # --- views ----------------------------------------------------------------------------------

    def prepare(self, con: Any) -> None:
        """Register the tables and create the ``metrics`` and ``records`` views on ``con``."""
        if self.wide or self.want_records:
            con.register("_metrics_wide", self.metrics_table())
        names = list(self.metric_names) if self.wide else []
        parts = [f"SELECT run_id::VARCHAR AS run_id, step, time, {literal(n)} AS name, m{i} AS value "
                 f"FROM _metrics_wide WHERE m{i} IS NOT NULL" for i, n in enumerate(names)]
        if not self.wide:
            con.register("_metrics_long", self.long_table())
            parts = ["SELECT run_id::VARCHAR AS run_id, step, time, name::VARCHAR AS name, value FROM _metrics_long"]
        elif not parts:
            parts = ["SELECT NULL::VARCHAR AS run_id, NULL::BIGINT AS step, NULL::DOUBLE AS time, "
                     "NULL::VARCHAR AS name, NULL::DOUBLE AS value WHERE false"]
        con.execute("CREATE TEMP VIEW metrics AS " + " UNION ALL ".join(parts))
        if not self.want_records:
            return
        con.register("_records_other", self.other_table())
        pieces = [f"CASE WHEN m{i} IS NULL THEN NULL ELSE {literal(orjson.dumps(n).decode() + ':')} || "
                  f"{_json_value(i, n in self.kind_names)} END" for i, n in enumerate(names)]
        data = f"('{{' || concat_ws(',', {', '.join(pieces)}) || '}}')" if pieces else "'{}'"
        if not self.wide:
            data = "data"
        con.execute(
            "CREATE TEMP VIEW records AS "
            f"SELECT run_id::VARCHAR AS run_id, 'metrics' AS schema, step, time, writer::VARCHAR AS writer, seq, "
            f"CAST({data} AS JSON) AS data FROM _metrics_wide UNION ALL "
            "SELECT run_id::VARCHAR AS run_id, schema::VARCHAR AS schema, step, time, writer::VARCHAR AS writer, "
            "seq, CAST(data AS JSON) AS data FROM _records_other")


def _json_texts(part: SchemaCols) -> list[str]:
    """The data of each ``metrics`` record of a part as the store's JSON (non-finite values as strings)."""
    from tracker.core.format import encode_nonfinite
    from tracker.read.index import metric_dicts

    dumps = orjson.dumps
    out = []
    for d in metric_dicts(part):
        text = dumps(d)
        if b"null" in text:  # orjson writes NaN and infinities as null
            text = dumps(encode_nonfinite(d))
        out.append(text.decode())
    return out


def _json_value(i: int, has_kinds: bool) -> str:
    """SQL giving metric column ``m{i}`` as the JSON text the store holds."""
    m = f"m{i}"
    as_float = (f"CASE WHEN isnan({m}) THEN '\"NaN\"' WHEN {m} = 'inf'::DOUBLE THEN '\"Infinity\"' "
                f"WHEN {m} = '-inf'::DOUBLE THEN '\"-Infinity\"' ELSE {m}::VARCHAR END")
    if not has_kinds:
        return f"({as_float})"
    return (f"(CASE k{i} WHEN 1 THEN CAST({m} AS BIGINT)::VARCHAR "
            f"WHEN 2 THEN (CASE WHEN {m} <> 0 THEN 'true' ELSE 'false' END) ELSE {as_float} END)")


def stats_rows(entries: Iterable[CatalogEntry]) -> list[dict[str, Any]]:
    """The rows of the ``metric_stats`` view: one per run and metric, from the catalog."""
    out = []
    for e in entries:
        for name, s in e.metrics.items():
            row: dict[str, Any] = {"run_id": e.info.id, "name": name}
            for k in ("count", "first", "last", "min", "max", "first_step", "last_step", "min_step", "max_step"):
                v = s.get(k)
                row[k] = float(v) if k in ("first", "last", "min", "max") and v is not None else v
            out.append(row)
    return out


__all__ = ["ColumnSources", "arrow_module", "stats_rows"]
