"""Columnar decoding of ``metrics`` records: segment lines to numpy arrays, the hot loop of reading.

:meth:`tracker.RunView.metrics` and ``table("metrics")`` call
:func:`metric_columns` with each segment's lines; numpy is imported only here,
when columns are asked for.
"""

from __future__ import annotations

import zlib
from array import array
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson

from tracker.core.format import (
    CRC_TAIL,
    CRC_TAIL_LEN,
    MAX_STEP,
    METRICS,
    METRICS_HEAD,
    RECORD,
    SPECIAL_IN,
    LineError,
    parse_line,
    shape_problem,
)
from tracker.core.records import Problem
from tracker.core.summary import MISSING

if TYPE_CHECKING:
    import numpy as np

_consume = deque(maxlen=0).extend
_NAN = float("nan")
Columns = dict[str, "np.ndarray"]


def metric_columns(segments: Iterable[tuple[str, Iterable[list[bytes]]]],
                   warn: Callable[[Problem], None]) -> tuple[Columns, int]:
    """``({"step", "time", name: array}, n)`` of the ``metrics`` records of a run's segments.

    One entry per record in log order (as :func:`tracker.read.reader.merge_log_order`):
    file order within a segment, by time across segments; NaN where a record lacks a metric, bools as 1.0 and 0.0.

    :param segments: ``(path, chunks)`` per segment, ``chunks`` its complete
        lines in lists (as :class:`tracker.core.format.LineChunks` yields them).
    :param warn: called with each damaged line met.
    """
    parts = [segment_columns(path, chunks, warn) for path, chunks in segments]
    return merge_columns([p for p in parts if p[1]])


def merge_columns(parts: list[tuple[Columns, int]]) -> tuple[Columns, int]:
    """The ``metrics`` columns of several segments (each ``(columns, n)``) merged in log order.

    As :func:`tracker.read.reader.merge_log_order`: file order within a segment, by
    each segment's running maximum of time across segments; NaN where a segment lacks a metric.
    """
    import numpy as np

    if not parts:
        return {"step": np.zeros(0, np.int64), "time": np.zeros(0)}, 0
    if len(parts) == 1:
        cols, n = parts[0]
        # Fresh, writable arrays: a caller may change them, and the index's buffers are shared.
        return {k: v.copy() if not v.flags.writeable else v for k, v in cols.items()}, n
    # Names in order of first appearance: the segment whose first record comes first in log order first
    # (not by file name: a writer's id sorts by its pid as text, which says nothing of when it logged).
    names: dict[str, None] = {}
    starts = [float(c["time"][0]) if n else float("inf") for c, n in parts]
    for i in sorted(range(len(parts)), key=lambda i: (starts[i], i)):
        for k in parts[i][0]:
            names.setdefault(k, None)
    merged = {}
    for k in names:
        dtype = np.int64 if k == "step" else np.float64
        merged[k] = np.concatenate([c[k] if k in c else np.full(n, MISSING, dtype) for c, n in parts])
    # Log order, as merge_log_order: each segment's running maximum of time as the key, so that a
    # writer's clock stepping back never reorders its own records; ties: earlier segment.
    keys = np.concatenate([np.maximum.accumulate(c["time"]) for c, _ in parts])
    order = np.argsort(keys, kind="stable")
    return {k: v[order] for k, v in merged.items()}, int(order.size)


def segment_columns(path: str, chunks: Iterable[list[bytes]],
                    warn: Callable[[Problem], None]) -> tuple[dict[str, Any], int]:
    """The metrics records of one segment as arrays.

    A line written by this version's writer (it starts with
    :data:`tracker.core.format.METRICS_HEAD`) is checked by its CRC and parsed
    once; its values go to the columns of the previous record's names with one
    C-level ``map(array.append, ...)`` when the names are the same, as they
    are in a training loop. Every other line takes the full check, which
    reports damage and still reads a metrics record of another layout.
    """
    import numpy as np

    loads, crc32, consume, append = orjson.loads, zlib.crc32, _consume, array.append
    head, tail, tail_len = METRICS_HEAD, CRC_TAIL, CRC_TAIL_LEN
    steps = array("q")
    times = array("d")
    cols: dict[str, array] = {}
    nan1 = array("d", [MISSING])
    names: tuple[str, ...] = ()  # the previous record's metric names, in order ...
    arrs: list[array] = []  # ... and their columns
    n = 0
    lineno = 0
    for lines in chunks:
        for line in lines:
            lineno += 1
            # The whole tail, ``,"crc":"xxxxxxxx"}``, against the one the CRC calls for.
            if line.startswith(head) and line[-tail_len:] == tail % crc32(line[:-tail_len]):
                try:
                    ev = loads(line)
                except ValueError:
                    ev = None
            else:
                ev = None
            if ev is not None:
                # The fast line's shape, cheaply; anything odd takes the full check, which names it.
                data, step, t = ev.get("data"), ev.get("step"), ev.get("time")
                if type(data) is not dict or type(step) is not int or (type(t) is not float and type(t) is not int) \
                        or not -MAX_STEP <= step <= MAX_STEP or type(ev.get("seq")) is not int \
                        or type(ev.get("w")) is not str:
                    ev = None
            if ev is None:
                ev = _other_line(path, lineno, line, warn)
                if ev is None:
                    continue
                data, step, t = ev["data"], ev["step"], ev["time"]
            if tuple(data) == names:
                try:
                    consume(map(append, arrs, data.values()))
                except TypeError:  # NaN or an infinity as its string, or a value of the wrong shape
                    for a in arrs:
                        del a[n:]
                else:
                    steps.append(step)
                    times.append(t)
                    n += 1
                    continue
            if not all(map(_is_metric_value, data.values())):
                warn(Problem(path, lineno, "corrupt", shape_problem(ev) or "a metric value that is not a number"))
                continue
            for k, v in data.items():
                a = cols.get(k)
                if a is None:
                    a = cols[k] = nan1 * n
                elif len(a) != n:
                    a.extend(nan1 * (n - len(a)))
                a.append(SPECIAL_IN[v] if type(v) is str else v)
            steps.append(step)
            times.append(t)
            names = tuple(data)
            arrs = [cols[k] for k in names]
            n += 1
    out: dict[str, Any] = {"step": np.frombuffer(steps, dtype=np.int64) if n else np.zeros(0, np.int64),
                           "time": np.frombuffer(times, dtype=np.float64) if n else np.zeros(0)}
    for k, a in cols.items():
        if len(a) != n:
            a.extend(nan1 * (n - len(a)))
        out[k] = np.frombuffer(a, dtype=np.float64)
    return out, n


def _is_metric_value(v: Any) -> bool:
    t = type(v)
    return t is float or t is int or t is bool or (t is str and v in SPECIAL_IN)


def _other_line(path: str, lineno: int, line: bytes, warn: Callable[[Problem], None]) -> dict[str, Any] | None:
    """A line the fast loop did not take: the event if it is a sound metrics record, else ``None``.

    Damaged lines are reported; lifecycle events and other schemas are skipped.
    """
    try:
        ev = parse_line(line)
    except LineError as exc:
        warn(Problem(path, lineno, exc.kind, str(exc)))
        return None
    if ev.get("kind") != RECORD or ev.get("schema") != METRICS:
        return None
    return ev
