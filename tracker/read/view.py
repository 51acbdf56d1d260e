"""One run of the folder store, read-only: ``RunView`` and the log order of its segments (``merge_log_order``).

Records stream from each segment's derived columns (:mod:`tracker.read.index`),
or from the JSONL with ``TRACKER_INDEX=off``, and the segments of a run merge
in log order. A view reads each segment up to the size it had when the view
first read it, so that one answer is read from one state of the run.
:mod:`tracker.read.reader` lists a store's runs and opens these views.
"""

from __future__ import annotations

import heapq
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.core.errors import RunNotFound, StoreError, TrackerError
from tracker.core.format import (
    EVENT_KINDS,
    METRICS,
    NONFINITE_MARKS,
    READ_CHUNK,
    RECORD,
    RECORD_SCHEMA_MARK,
    LineChunks,
    LineError,
    check_run_id,
    decode_nonfinite,
    iter_lines,
    merge_chunk,
    parse_line,
)
from tracker.core.records import Problem, Record, RunInfo
from tracker.core.summary import Summary, Table, summarize_run
from tracker.host.bus import TrackerWarning
from tracker.read.index import (
    SchemaCols,
    SegmentIndex,
    Writable,
    combine_stats,
    index_enabled,
    load_segment,
    metric_dicts,
    stream_part,
    warn_once,
)
from tracker.read.index import segments as index_segments
from tracker.read.segment import Segment, read_run_info, read_segment, segment_paths

if TYPE_CHECKING:
    import numpy as np

    from tracker.host.host import Host


class LazyHost:
    """A reader that builds its plugin host only when it first needs schemas or summarizers."""

    _host: Host | Callable[[], Host] | None

    @property
    def host(self) -> Host:
        """The plugin host used for schemas and summarizers (built on first use)."""
        if self._host is None:
            from tracker.host.host import get_host

            self._host = get_host()
        elif callable(self._host):
            self._host = self._host()
        return self._host


def merge_log_order(sources: Sequence[Iterable[Record]], tops: list[float] | None = None) -> Iterator[Record]:
    """The records of a run's segments merged in log order, streaming.

    Within a segment, file order: the writer's sequence, whatever its clock
    did. Across segments, by time, where a segment's time is the largest its
    writer's clock has shown so far, so that a clock stepping back (NTP, a
    resumed virtual machine) never reorders a writer's own records;
    ties go to the earlier segment. :func:`tracker.read.columns.metric_columns`
    orders columns by the same rule.

    :param tops: each source's largest time before this call (updated in
        place), for a reader that merges a growing run in batches.
    """
    def keyed(i: int, source: Iterable[Record]) -> Iterator[tuple[float, int, Record]]:
        top = tops[i] if tops is not None else -math.inf
        for rec in source:
            t = rec.time
            if t > top:
                top = t
                if tops is not None:
                    tops[i] = t
            yield top, i, rec

    for _, _, rec in heapq.merge(*(keyed(i, src) for i, src in enumerate(sources))):
        yield rec


class RunView(LazyHost):
    """One run of a store, read-only.

    ``problems`` collects every damaged line met while reading; each is also
    warned about once.

    A view reads each segment up to the size it had when the view first read
    it, and its later reads (records, metrics, tables, summaries) keep to the
    same sizes, so that one answer is read from one state of the run and a
    writer appending faster than the view reads is never chased:
    :meth:`refresh` takes the run as it is now.
    """

    def __init__(self, store: str | os.PathLike[str], run_id: str,
                 host: Host | Callable[[], Host] | None = None, writable: Writable | None = None) -> None:
        self.store = Path(store)
        self.id = run_id
        try:
            # Only a valid id names a folder: "..", "" or "a/b" must not lead outside the store.
            check_run_id(run_id)
        except TrackerError as exc:
            raise RunNotFound(f"no such run in store {self.store}: {exc}") from None
        self.path = self.store / "runs" / run_id
        if not self.path.is_dir():
            raise RunNotFound(f"no run {run_id!r} in store {self.store}")
        self._host = host
        self._info: RunInfo | None = None
        self.problems: list[Problem] = []
        self._unknown_kinds: set[Any] = set()
        self._said: set[tuple[str, int | None, str]] = set()
        self._ends: list[Segment] = []
        self._writable = writable if writable is not None else Writable()
        self._warn_index = warn_once(set())
        #: Per segment name, the byte offset this view reads it to (its size when first read).
        self._bounds: dict[str, int] = {}

    def segment_paths(self) -> list[Path]:
        """The run's segment files, sorted by name."""
        return segment_paths(self.path)

    def segments(self) -> list[Segment]:
        """Header and tail of every segment."""
        return [read_segment(p) for p in self.segment_paths()]

    @property
    def info(self) -> RunInfo:
        """The run's info (computed on first access; see :meth:`refresh`)."""
        if self._info is None:
            self._info = self._read_info()
        return self._info

    def _repr_html_(self) -> str:
        """The run in a notebook: name, status, config and last metrics (see :mod:`tracker.core.display`)."""
        from tracker.core.display import info_html

        return info_html(self.info)

    def refresh(self) -> RunInfo:
        """Read the run again as it is now: its info (a running run's status and counts change), and
        records appended since the view first read them."""
        self._info = None
        self._bounds.clear()
        return self.info

    def _bound(self, path: Path) -> int:
        """The byte offset this view reads segment ``path`` to: its size when the view first read it."""
        end = self._bounds.get(path.name)
        if end is None:
            try:
                end = os.stat(path).st_size
            except OSError as exc:
                raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
            self._bounds[path.name] = end
        return end

    def _snapshot(self, paths: list[Path]) -> None:
        """Note the size of every segment not read yet, all at once (before any is read)."""
        for p in paths:
            if p.name not in self._bounds:
                try:
                    self._bounds[p.name] = os.stat(p).st_size
                except OSError:
                    pass  # gone or unreadable: the read that follows says so

    def _timeout(self) -> float:
        # [store] heartbeat_timeout of tracker.toml, also for a view opened without a host
        # (open_store()): the process's host is built, but only for a writer on another host.
        return self.host.config.heartbeat_timeout

    def _read_info(self) -> RunInfo:
        # The segments' ends are kept: the catalog asks them about writers on other hosts.
        self._ends = self.segments()
        return read_run_info(self.path, self.id, self._ends, self._timeout, self._warn)

    def max_step(self) -> int | None:
        """The largest step of the run, exact (from the derived data of segments whose writer never finished)."""
        best = None
        if index_enabled():
            steps = [ix.max_step() for ix in self._indexes(set())]
            return max((s for s in steps if s is not None), default=None)
        for s in self.segments():
            fin = s.finish
            if fin is not None:
                step = (fin.get("data") or {}).get("max_step")
            else:
                step = max((r.step for r in self._segment_records(s.path, None, False)), default=None)
            if step is not None and (best is None or step > best):
                best = step
        return best

    # --- records ------------------------------------------------------------------------------

    def _warn(self, problem: Problem) -> None:
        self.problems.append(problem)
        warnings.warn(f"tracker: {problem}", TrackerWarning, stacklevel=3)

    def _lines(self, path: Path, quiet_tail: bool, chunk: int = READ_CHUNK) -> Iterator[tuple[int, bytes]]:
        """Numbered complete lines of a segment; a torn last line is reported (unless ``quiet_tail``)."""
        lineno = 0
        for lines in self._line_chunks(path, quiet_tail, chunk):
            for line in lines:
                lineno += 1
                yield lineno, line

    def _segment_records(self, path: Path, schema: str | None, quiet_tail: bool,
                         chunk: int = READ_CHUNK) -> Iterator[Record]:
        host = self._host if schema is None and not callable(self._host) else self.host
        compiled = None
        for lineno, line in self._lines(path, quiet_tail, chunk):
            try:
                ev = parse_line(line)
            except LineError as exc:
                self._warn(Problem(str(path), lineno, exc.kind, str(exc)))
                continue
            kind = ev.get("kind")
            if kind != RECORD:
                if kind not in EVENT_KINDS and kind not in self._unknown_kinds:
                    # A newer version's event: skipped, said once per kind (docs/format.md).
                    self._unknown_kinds.add(kind)
                    self._warn(Problem(str(path), lineno, "unknown",
                                       f"an event of kind {kind!r}, which this version does not know (ignored)"))
                continue
            if schema is not None and ev.get("schema") != schema:
                continue
            data = ev.get("data")
            if not isinstance(data, dict):
                self._warn(Problem(str(path), lineno, "corrupt", "record without a data object"))
                continue
            if NONFINITE_MARKS[0] in line or NONFINITE_MARKS[1] in line:
                name = ev.get("schema")
                if host is None:
                    # Only the schema tells a non-finite float from a string "NaN" in a str field.
                    host = self.host
                compiled = host.schemas.get(name) if compiled is None or compiled.name != name else compiled
                data = compiled.decode(data) if compiled is not None else decode_nonfinite(data)
            yield Record(ev.get("step"), ev.get("time"), ev.get("schema"), data, ev.get("w", ""), ev.get("seq", 0))

    def _quiet(self) -> bool:
        # A running writer's last line may simply be in progress.
        return self.info.status == "running"

    # --- reading through the derived columns (tracker.read.index) -----------------------------------

    def _indexes(self, schemas: set[str] | None) -> list[SegmentIndex]:
        """Every segment's derived data with the columns of ``schemas`` loaded (``None``: all).

        Damaged lines are reported as a read of the JSONL reports them; a torn
        last line too, unless the run is still running (its last line may be in progress).
        """
        quiet = self._quiet()
        enabled = index_enabled()
        out = []
        paths = self.segment_paths()
        self._snapshot(paths)
        for p in paths:
            ix = load_segment(self.store, self.id, p, schemas, self._writable, self._warn_index,
                              derived=enabled, end=self._bounds.get(p.name))
            self._bounds.setdefault(p.name, ix.size)
            for line, kind, message in ix.problems:
                self._warn_once(Problem(str(p), line, kind, message))
            if ix.rest and not quiet:
                self._warn_once(Problem(str(p), ix.lines + 1, "torn",
                                        f"the last line is incomplete ({len(ix.rest)} bytes): a write was cut off"))
            out.append(ix)
        return out

    def _warn_once(self, problem: Problem) -> None:
        key = (problem.path, problem.line, problem.kind)
        if key not in self._said:
            self._said.add(key)
            self._warn(problem)

    def _decoder(self, schema: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        # Only the schema tells a non-finite float from a string "NaN" in a str field.
        compiled = self.host.schemas.get(schema)
        return compiled.decode if compiled is not None else decode_nonfinite

    def _part_records(self, part: SchemaCols) -> Iterator[tuple[int, Record]]:
        """``(line number, Record)`` of one schema's records in one segment, in file order."""
        steps, times, seqs, lines = part.step.tolist(), part.time.tolist(), part.seq.tolist(), part.line.tolist()
        writers = part.writer_ids()
        name = part.name
        if name == METRICS:
            datas = metric_dicts(part)
        else:
            datas = part.datas()
            special = part.special
            if special is not None and special.any():
                decode = self._decoder(name)
                for i in special.nonzero()[0].tolist():
                    datas[i] = decode(datas[i])
        for i in range(part.n):
            yield lines[i], Record(steps[i], times[i], name, datas[i], writers[i], seqs[i])

    def _streamed(self, ix: SegmentIndex, name: str, rows: int | None) -> Iterator[tuple[int, Record]]:
        for window in stream_part(ix, name, rows):
            yield from self._part_records(window)

    def _segment_records_ix(self, ix: SegmentIndex, schema: str | None, rows: int | None = None) -> Iterator[Record]:
        """One segment's records (of one schema), in file order, streamed from its columns in windows."""
        names = [schema] if schema is not None else list(ix.meta)
        gens = [self._streamed(ix, name, rows) for name in names if name in ix.meta]
        if not gens:
            return
        if len(gens) == 1:
            for _, rec in gens[0]:
                yield rec
        else:
            for _, rec in heapq.merge(*gens, key=lambda lr: lr[0]):
                yield rec

    def records(self, schema: str | None = None) -> Iterator[Record]:
        """Every record (of one schema), in log order (see :func:`merge_log_order`)."""
        if not index_enabled():
            yield from self._jsonl_records(schema)
            return
        ixs = self._indexes(set())  # headers: the columns are streamed in windows
        # A merge holds one window of each segment: smaller windows for many segments, so that
        # memory stays bounded whatever their number (as merge_chunk does for lines).
        rows = max(256, index_segments.WINDOW_ROWS * 16 // max(16, len(ixs)))
        gens = [self._segment_records_ix(ix, schema, rows) for ix in ixs]
        if len(gens) == 1:
            yield from gens[0]
        else:
            yield from merge_log_order(gens)

    def covered_records(self, schema: str | None = None) -> tuple[Iterator[Record], dict[Path, tuple[int, int, float]]]:
        """The records of every complete line now (through the derived data), and where each segment ends.

        For a reader that goes on with the lines appended later (``tracker
        tail -f``): per segment the byte offset after its last complete line,
        the number of lines before it, and the largest time among the records
        given (the key :func:`merge_log_order` goes on from).
        """
        ixs = self._indexes(None if schema is None else {schema})
        ends = {}
        for ix in ixs:
            parts = [p for p in ix.parts.values() if p.n and (schema is None or p.name == schema)]
            top = max((float(p.time.max()) for p in parts), default=-math.inf)
            ends[ix.path] = (ix.offset, ix.lines, top)
        gens = [self._segment_records_ix(ix, schema) for ix in ixs]
        return (gens[0] if len(gens) == 1 else merge_log_order(gens)), ends

    def _jsonl_records(self, schema: str | None = None) -> Iterator[Record]:
        """:meth:`records` parsed from the JSONL, line by line (what the index is checked against)."""
        quiet = self._quiet()
        paths = self.segment_paths()
        self._snapshot(paths)
        # Any number of segments within bounded memory and open files: LineChunks opens a file
        # only while it reads a chunk, and a merge of many segments reads smaller chunks.
        chunk = merge_chunk(len(paths))
        gens = [self._segment_records(p, schema, quiet, chunk) for p in paths]
        if len(gens) == 1:
            yield from gens[0]
        else:
            yield from merge_log_order(gens)

    def schemas(self) -> list[str]:
        """The schema names present in the run, in order of first appearance."""
        if not index_enabled():
            return self._jsonl_schemas()
        seen: dict[str, None] = {}
        for ix in self._indexes(set()):
            for name in ix.schema_names():
                seen.setdefault(name, None)
        return list(seen)

    def _jsonl_schemas(self) -> list[str]:
        seen: dict[str, None] = {}
        mark = RECORD_SCHEMA_MARK
        paths = self.segment_paths()
        self._snapshot(paths)
        for p in paths:
            for _, line in iter_lines(p, end=self._bound(p)):
                i = line.find(mark)
                if i >= 0:
                    j = i + len(mark)
                    seen.setdefault(line[j:line.find(b'"', j)].decode("utf-8", "replace"), None)
        return list(seen)

    def table(self, schema: str) -> Table:
        """The run's records of ``schema`` as columns (an empty table when there are none)."""
        if schema == METRICS:
            cols, n = self._metrics_columns()
            compiled = self.host.schemas.get(METRICS)
            return Table.from_columns(METRICS, cols, n, compiled,
                                      rows=lambda: (r.data for r in self.records(METRICS)))
        compiled = self.host.schemas.get(schema)
        recs = list(self.records(schema))
        return Table(schema, [r.step for r in recs], [r.time for r in recs], [r.data for r in recs], compiled)

    def metrics(self) -> dict[str, np.ndarray]:
        """``{"step": ..., "time": ..., name: ...}``, one entry per ``metrics`` record in log order.

        NaN where a record lacks a metric; bools read as 1.0 and 0.0.
        """
        cols, _ = self._metrics_columns()
        return cols

    def _metrics_columns(self) -> tuple[dict[str, np.ndarray], int]:
        from tracker.read.columns import merge_columns, metric_columns

        if not index_enabled():
            quiet = self._quiet()
            paths = self.segment_paths()
            self._snapshot(paths)
            return metric_columns(((str(p), self._line_chunks(p, quiet)) for p in paths), self._warn)
        parts = []
        for ix in self._indexes({METRICS}):
            part = ix.parts.get(METRICS)
            if part is not None and part.n:
                parts.append(({"step": part.step, "time": part.time, **part.cols}, part.n))
        return merge_columns(parts)

    def dataframe(self, schema: str = "metrics", library: str = "pandas") -> Any:
        """The run's records of ``schema`` as a data frame: ``step``, ``time``, then the schema's fields.

        :param library: ``"pandas"``, ``"polars"`` or ``"arrow"`` (each an optional extra; without it a
            :class:`TrackerError` names the ``pip install`` to run). Numeric columns share the
            reader's arrays where the library allows.
        """
        from tracker.read.frames import record_frame

        return record_frame(self, schema, library)

    def schema_counts(self) -> dict[str, int]:
        """Records per schema, in order of first appearance."""
        counts: dict[str, int] = {}
        for ix in self._indexes(set()):
            for name in ix.schema_names():
                counts[name] = counts.get(name, 0) + ix.meta[name]["n"]
        return counts

    def metric_stats(self) -> dict[str, dict[str, Any]]:
        """Per metric: ``count``, ``first``, ``last``, ``min``, ``max`` and the steps of min, max and last.

        ``count`` counts the records holding the metric (NaN included); ``min``
        and ``max`` are over its non-NaN values (``None`` when there are none);
        ``first`` and ``last`` are the first and last logged, in log order.
        Read from the segments' derived figures, not from the columns.
        """
        return combine_stats([ix.stats for ix in self._indexes(set())])

    def _line_chunks(self, path: Path, quiet_tail: bool, chunk: int = READ_CHUNK) -> Iterator[list[bytes]]:
        """The complete lines of a segment, a list per chunk read; a torn last line is reported.

        Like :meth:`_lines` but with one generator step per 1 MiB instead of one per line.
        """
        reader = LineChunks(path, 0, chunk, self._bound(path))
        yield from reader
        if reader.rest and not quiet_tail:
            self._warn(Problem(str(path), reader.lines + 1, "torn",
                               f"the last line is incomplete ({len(reader.rest)} bytes): a write was cut off"))

    def summarize(self, schema: str | None = None) -> list[Summary]:
        """Every summary of every schema present (or of one schema), in that order.

        A summarizer that raises gives a summary that says so instead of stopping the others.
        """
        return summarize_run(self, schema)
