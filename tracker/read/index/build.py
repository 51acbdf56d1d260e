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

import zlib
from array import array
from collections import deque
from collections.abc import Iterable
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
        """Take the next complete lines of the segment (without their newlines)."""
        loads, crc32, consume, append = orjson.loads, zlib.crc32, _consume, array.append
        head, tail, tail_len = METRICS_HEAD, CRC_TAIL, CRC_TAIL_LEN
        lineno = self.lineno
        metrics = self.metrics
        for line in lines:
            lineno += 1
            ev = None
            # A line of this version's writer for `metrics`: its CRC and a cheap shape check, one parse.
            if line.startswith(head) and line[-tail_len:] == tail % crc32(line[:-tail_len]):
                try:
                    ev = loads(line)
                except ValueError:
                    ev = None
                if ev is not None:
                    data, step, t = ev.get("data"), ev.get("step"), ev.get("time")
                    if type(data) is not dict or type(step) is not int or \
                            (type(t) is not float and type(t) is not int) or not -MAX_STEP <= step <= MAX_STEP \
                            or type(ev.get("seq")) is not int or type(ev.get("w")) is not str:
                        ev = None
                    else:
                        if metrics is None:
                            metrics = self._part(METRICS)  # type: ignore[assignment]
                        vals = data.values()
                        # The names and float types of the previous record, as in a training loop:
                        # the values go to their columns in one C-level map.
                        if tuple(data) == metrics.names and tuple(map(type, vals)) == metrics.float_types:
                            consume(map(append, metrics.arrs, vals))
                            ok = True
                        else:
                            ok = metrics.add(data)
                        if ok:
                            w = ev["w"]
                            if w != metrics.last_writer:
                                metrics.writer(w)
                            metrics.steps.append(step)
                            metrics.times.append(t)
                            metrics.seqs.append(ev["seq"])
                            metrics.lines.append(lineno)
                            continue
                        ev = None
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
                if not metrics.add(ev["data"]):
                    self.problems.append([lineno, "corrupt",
                                          shape_problem(ev) or "a metric value that is not a number"])
                    continue
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
