"""Segment lines to columns: the one pass that turns JSON text into derived data.

:class:`Builder` takes a segment's complete lines in order (from offset 0, or
from the offset an earlier build covered) and keeps, per schema, the step,
time, sequence number and line number of each record; ``metrics`` values go
to float64 columns (:data:`tracker.MISSING` where a record lacks a metric)
with a type code where a value was an int or a bool, so that ``records()``
gives back exactly what was logged; the data of other schemas is kept as the
JSON objects the lines hold, to be parsed back in one call. Damaged lines are
kept as problems (file, line, kind, message) so that every later read reports
them as a read of the JSONL would.
"""

from __future__ import annotations

import gc
import zlib
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, groupby, repeat
from operator import eq, getitem
from typing import Any

import orjson

from tracker.core.format import (
    CRC_TAIL,
    CRC_TAIL_LEN,
    EVENT_KINDS,
    MAX_STEP,
    METRICS,
    METRICS_HEAD,
    NONFINITE_MARKS,
    RECORD,
    SPECIAL_IN,
    LineError,
    parse_line,
    shape_problem,
)
from tracker.core.summary import MISSING

#: Type codes of a ``metrics`` value that was not a float (0: a float, or absent).
KIND_INT = 1
KIND_BOOL = 2
_consume = deque(maxlen=0).extend
_floats_only = frozenset({float}).issuperset
_times_only = frozenset({float, int}).issuperset
_BODY = slice(None, -CRC_TAIL_LEN)
_TAIL = slice(-CRC_TAIL_LEN, None)
#: Consecutive ``metrics`` lines from which the columnar pass (:meth:`Builder._bulk`) is worth its setup,
#: and the most it takes at once (the parsed records of a batch stay in the CPU's caches).
BULK_MIN = 8
BULK_MAX = 512


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector held off, for work that makes many objects and no cycles.

    A listing's collections cost about a quarter of reading the catalog (26 against 19 µs per run at
    10,000 runs); a batch of parsed lines kept for the columnar pass sets off as many.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _record_appenders(part: Any) -> tuple[Any, Any, Any, Any]:
    """The appenders of a metrics part's record fields: step, time, seq, line."""
    return part.steps.append, part.times.append, part.seqs.append, part.lines.append


class SchemaPart:
    """The records of one schema in one segment, as growing arrays."""

    __slots__ = ("name", "steps", "times", "seqs", "lines", "writers", "data", "special", "last_writer")

    def __init__(self, name: str) -> None:
        self.name = name
        self.steps = array("q")
        self.times = array("d")
        self.seqs = array("q")
        self.lines = array("q")  # 1-based line number in the segment: orders schemas within it
        #: ``[index, writer id]`` wherever the writer id changes (one entry for a segment's one writer).
        self.writers: list[list[Any]] = []
        self.last_writer: str | None = None
        self.data: list[bytes] = []  # the record's data object as JSON (other schemas)
        self.special = array("B")  # 1 where the line holds a non-finite mark (other schemas)

    def __len__(self) -> int:
        return len(self.steps)

    def writer(self, w: str) -> None:
        """Note the writer id of the record about to be appended."""
        if w != self.last_writer:
            self.writers.append([len(self.steps), w])
            self.last_writer = w


class MetricsPart(SchemaPart):
    """``metrics`` records: one float64 column per name, type codes where a value was not a float."""

    __slots__ = ("cols", "kinds", "names", "arrs", "float_types")

    def __init__(self) -> None:
        super().__init__(METRICS)
        self.cols: dict[str, array] = {}
        self.kinds: dict[str, array] = {}
        self.names: tuple[str, ...] = ()
        self.arrs: list[array] = []
        #: ``(float, float, ...)`` when the previous record's values were all floats, else ``None``.
        self.float_types: tuple[type, ...] | None = None

    def add(self, data: dict[str, Any]) -> bool:
        """Append one record's values; ``False`` (nothing appended) when a value is not a metric value.

        Type codes are padded lazily: a column of codes is extended with zeros
        (floats) only when a later int or bool, or :meth:`finish`, needs it.
        """
        n = len(self.steps)
        for v in data.values():
            t = type(v)
            if not (t is float or t is int or t is bool or (t is str and v in SPECIAL_IN)):
                return False
        cols, kinds = self.cols, self.kinds
        for k, v in data.items():
            a = cols.get(k)
            if a is None:
                a = cols[k] = array("d", [MISSING]) * n
            elif len(a) != n:
                a.extend(array("d", [MISSING]) * (n - len(a)))
            t = type(v)
            if t is str:
                a.append(SPECIAL_IN[v])
            else:
                a.append(v)
                if t is not float:
                    ks = kinds.get(k)
                    if ks is None:
                        ks = kinds[k] = array("B", bytes(n))
                    elif len(ks) < n:
                        ks.extend(bytes(n - len(ks)))
                    ks.append(KIND_BOOL if t is bool else KIND_INT)
        self.names = tuple(data)
        self.arrs = [cols[k] for k in self.names]
        types = tuple(map(type, data.values()))
        self.float_types = types if all(t is float for t in types) else None
        return True

    def finish(self) -> None:
        """Pad every column to the record count (a metric absent from the last records)."""
        n = len(self.steps)
        for a in self.cols.values():
            if len(a) < n:
                a.extend(array("d", [MISSING]) * (n - len(a)))
        for ks in self.kinds.values():
            if len(ks) < n:
                ks.extend(bytes(n - len(ks)))


class Builder:
    """Parses the lines of one segment, in order, into per-schema parts.

    :param path: the segment, for the problems' messages.
    :param first_line: the number of the first line given (1 for a whole segment).
    """

    def __init__(self, path: str, first_line: int = 1) -> None:
        self.path = path
        self.lineno = first_line - 1
        self.parts: dict[str, SchemaPart] = {}
        self.metrics: MetricsPart | None = None
        self.problems: list[list[Any]] = []
        self.unknown: set[str] = set()

    def _part(self, schema: str) -> SchemaPart:
        part = self.parts.get(schema)
        if part is None:
            part = self.parts[schema] = MetricsPart() if schema == METRICS else SchemaPart(schema)
            if schema == METRICS:
                self.metrics = part  # type: ignore[assignment]
        return part

    def feed(self, lines: Iterable[bytes]) -> None:
        """Take the next complete lines of the segment (without their newlines).

        Each stretch of consecutive ``metrics`` lines is taken column by
        column (:meth:`_bulk`); what that pass does not take (other events,
        a damaged line among them) goes line by line (:meth:`_lines`), with
        the same result.
        """
        lines = lines if type(lines) is list else list(lines)
        starts = list(map(bytes.startswith, lines, repeat(METRICS_HEAD)))
        i, n = 0, len(lines)
        while i < n:
            try:
                j = starts.index(False, i)  # the end of this stretch of `metrics` lines
            except ValueError:
                j = n
            if j - i < BULK_MIN:
                self._lines(lines[i:j])
            else:
                with gc_paused():  # batches of parsed records: many objects, no cycles
                    for at in range(i, j, BULK_MAX):
                        batch = lines[at:min(at + BULK_MAX, j)]
                        if not self._bulk(batch):
                            self._lines(batch)
            if j == n:
                break
            try:
                i = starts.index(True, j)
            except ValueError:
                i = n
            self._lines(lines[j:i])

    def _bulk(self, lines: list[bytes]) -> bool:
        """Take a stretch of ``metrics`` lines of one writer column by column; ``False`` (nothing taken)
        unless every line is whole (its CRC), parses, and has the fields of a record of this version.

        The loops run in C (``map`` over the lines); only a record whose
        names differ from the previous record's, or whose values are not all
        floats, is taken on its own, as :meth:`_lines` takes it.
        """
        if not all(map(eq, map(CRC_TAIL.__mod__, map(zlib.crc32, map(getitem, lines, repeat(_BODY)))),
                       map(getitem, lines, repeat(_TAIL)))):
            return False
        try:
            evs = list(map(orjson.loads, lines))
            datas = list(map(getitem, evs, repeat("data")))
            steps = list(map(getitem, evs, repeat("step")))
            times = list(map(getitem, evs, repeat("time")))
            seqs = list(map(getitem, evs, repeat("seq")))
            writers = set(map(getitem, evs, repeat("w")))
        except (ValueError, KeyError, TypeError):
            return False
        if len(writers) != 1 or set(map(type, writers)) != {str} or set(map(type, datas)) != {dict} \
                or set(map(type, steps)) != {int} or set(map(type, seqs)) != {int} \
                or not _times_only(map(type, times)) or min(steps) < -MAX_STEP or max(steps) > MAX_STEP:
            return False
        (w,) = writers
        metrics = self.metrics
        if metrics is None:
            metrics = self._part(METRICS)  # type: ignore[assignment]
        lineno = self.lineno

        def take(at: int, end: int) -> None:  # the fields of records at..end-1, once their values are in
            metrics.steps.extend(steps[at:end])
            metrics.times.extend(times[at:end])
            metrics.seqs.extend(seqs[at:end])
            metrics.lines.extend(range(lineno + at + 1, lineno + end + 1))

        def one(at: int) -> None:  # a record on its own, as a line would be taken
            if metrics.add(datas[at]):
                take(at, at + 1)
            else:
                self.problems.append([lineno + at + 1, "corrupt",
                                      shape_problem(evs[at]) or "a metric value that is not a number"])

        if w != metrics.last_writer:
            metrics.writer(w)
        at = 0
        for names, group in groupby(map(tuple, datas)):
            end = at + sum(1 for _ in group)
            if names != metrics.names:
                one(at)  # new names: their columns made (or padded) as for a line
                at += 1
            if at == end:
                continue
            flat = list(chain.from_iterable(map(dict.values, datas[at:end])))
            if names == metrics.names and _floats_only(map(type, flat)):
                # The previous record's names, all floats: each column extended at once.
                width = len(names)
                for k, a in enumerate(metrics.arrs):
                    a.extend(flat[k::width] if width > 1 else flat)
                take(at, end)
            else:  # ints, bools or non-finite marks among the values
                for i in range(at, end):
                    one(i)
            at = end
        self.lineno = lineno + len(lines)
        return True

    def _lines(self, lines: list[bytes]) -> None:
        """Take lines one by one."""
        loads, crc32, consume, append, floats_only = orjson.loads, zlib.crc32, _consume, array.append, _floats_only
        head, tail, tail_len = METRICS_HEAD, CRC_TAIL, CRC_TAIL_LEN
        low, high = -MAX_STEP, MAX_STEP
        lineno = self.lineno
        metrics = self.metrics
        # The previous record's names and their columns, and the appenders of the record fields, kept
        # in locals: a training loop's lines differ only in their values.
        names: tuple[str, ...] | None = None
        if metrics is not None:
            names, arrs = metrics.names, metrics.arrs
            add_step, add_time, add_seq, add_line = _record_appenders(metrics)
        for line in lines:
            lineno += 1
            # A line of this version's writer for `metrics`: its CRC and a cheap shape check, one parse.
            if line.startswith(head) and line[-tail_len:] == tail % crc32(line[:-tail_len]):
                try:
                    ev = loads(line)
                    data, step, t, seq, w = ev["data"], ev["step"], ev["time"], ev["seq"], ev["w"]
                except (ValueError, KeyError, TypeError):
                    pass  # the full parse below names what is wrong
                else:
                    if type(data) is dict and type(step) is int and (type(t) is float or type(t) is int) \
                            and low <= step <= high and type(seq) is int and type(w) is str:
                        vals = data.values()
                        # The names of the previous record, all floats: the values go to their columns
                        # in one C-level map.
                        if tuple(data) == names and floats_only(map(type, vals)):
                            consume(map(append, arrs, vals))
                            ok = True
                        else:
                            if metrics is None:
                                metrics = self._part(METRICS)  # type: ignore[assignment]
                                add_step, add_time, add_seq, add_line = _record_appenders(metrics)
                            ok = metrics.add(data)
                            names, arrs = metrics.names, metrics.arrs
                        if ok:
                            if w != metrics.last_writer:
                                metrics.writer(w)
                            add_step(step)
                            add_time(t)
                            add_seq(seq)
                            add_line(lineno)
                            continue
            try:
                ev = parse_line(line)
            except LineError as exc:
                self.problems.append([lineno, exc.kind, str(exc)])
                continue
            kind = ev["kind"]
            if kind != RECORD:
                if kind not in EVENT_KINDS and kind not in self.unknown:
                    # A newer version's event: skipped, said once per kind (docs/format.md).
                    self.unknown.add(kind)
                    self.problems.append([lineno, "unknown",
                                          f"an event of kind {kind!r}, which this version does not know (ignored)"])
                continue
            schema = ev["schema"]
            part = self._part(schema)
            if schema == METRICS:
                metrics = part  # type: ignore[assignment]
                add_step, add_time, add_seq, add_line = _record_appenders(metrics)
                if not metrics.add(ev["data"]):
                    self.problems.append([lineno, "corrupt",
                                          shape_problem(ev) or "a metric value that is not a number"])
                    continue
                names, arrs = metrics.names, metrics.arrs
            else:
                part.data.append(orjson.dumps(ev["data"]))
                part.special.append(NONFINITE_MARKS[0] in line or NONFINITE_MARKS[1] in line)
            part.writer(ev["w"])
            part.steps.append(ev["step"])
            part.times.append(ev["time"])
            part.seqs.append(ev["seq"])
            part.lines.append(lineno)
        self.lineno = lineno
        self.metrics = metrics
