"""Metric series for the dashboard: downsampling with bucket min/max, gaps, cursors (numpy only).

A series longer than ``max_points`` is cut into ``max_points`` buckets of
consecutive records (in log order): the first record and the last are
buckets of their own (kept as logged, so a chart starts and ends where the
run did: its last step and value), and the records between them are cut
into ``max_points - 2`` buckets (with ``max_points`` under 3, every bucket
is cut alike). Each bucket becomes one point:

- ``x``: the bucket's first x (step or time);
- ``y``: the mean of the bucket's finite values (the representative value);
- ``y_min``, ``y_max``: the smallest and largest finite value of the bucket,
  so a one-record spike in a million-step loss still shows;
- all three are ``None`` (a gap) when the bucket holds no finite value.

A series of at most ``max_points`` records is returned as logged: ``y`` is
the value, ``y_min == y_max == y``, and a NaN or infinite value is a gap.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

import numpy as np

from tracker.core.summary import MISSING

_MISSING_BITS = np.float64(MISSING).view(np.uint64)

#: Default and bounds of ``max_points`` (DESIGN: 1..100000, default 2000).
DEFAULT_MAX_POINTS = 2000
MAX_POINTS_LIMIT = 100_000


class CursorError(ValueError):
    """A ``since`` cursor that does not parse."""


def present(column: np.ndarray) -> np.ndarray:
    """Which entries of a metric column were logged (``MISSING`` marks a record without the metric)."""
    return column.view(np.uint64) != _MISSING_BITS


def downsample(x: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, ...]:
    """At most ``max_points`` points of ``(x, y)``: ``(x, y, y_min, y_max)`` as float arrays.

    NaN in the outputs marks a gap (a bucket, or a record, without a finite value).

    :param x: the x of each record, in log order.
    :param y: the value of each record (NaN and infinities allowed).
    :param max_points: the most points to return (>= 1).
    """
    if max_points < 1:
        raise ValueError(f"max_points: expected an int >= 1, given {max_points!r}")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    finite = np.isfinite(y)
    if n <= max_points:
        shown = np.where(finite, y, np.nan)
        return x.copy(), shown, shown.copy(), shown.copy()
    starts = bucket_starts(n, max_points)
    if finite.all():
        # Every value finite (most series): the same sums, minima and maxima without masked copies.
        counts = np.diff(starts, append=n)
        sums = np.add.reduceat(y, starts)
        y_min = np.minimum.reduceat(y, starts)
        y_max = np.maximum.reduceat(y, starts)
    else:
        counts = np.add.reduceat(finite.astype(np.int64), starts)
        sums = np.add.reduceat(np.where(finite, y, 0.0), starts)
        y_min = np.minimum.reduceat(np.where(finite, y, np.inf), starts)
        y_max = np.maximum.reduceat(np.where(finite, y, -np.inf), starts)
    empty = counts == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
    # The mean of huge finite values can overflow to inf; keep it within the bucket's range.
    mean = np.clip(mean, y_min, y_max)
    mean[empty] = np.nan
    y_min[empty] = np.nan
    y_max[empty] = np.nan
    return x[starts], mean, y_min, y_max


def bucket_starts(n: int, max_points: int) -> np.ndarray:
    """Where each of the ``max_points`` buckets of ``n > max_points`` records starts: the first and the
    last record alone (when ``max_points >= 3``), the records between them in even buckets."""
    if max_points < 3:
        return (np.arange(max_points, dtype=np.int64) * n) // max_points
    inner = max_points - 2
    starts = np.empty(max_points, dtype=np.int64)
    starts[0] = 0
    starts[1:-1] = 1 + (np.arange(inner, dtype=np.int64) * (n - 2)) // inner
    starts[-1] = n - 1
    return starts


def to_list(values: np.ndarray) -> list[float | None]:
    """A float array as a JSON-ready list, NaN and infinities as ``None``."""
    out = values.tolist()
    if not np.isfinite(values).all():
        out = [v if math.isfinite(v) else None for v in out]
    return out


def x_list(values: np.ndarray, steps: bool) -> list[Any]:
    """Steps as ints, times as floats."""
    if steps:
        return [int(v) for v in values.tolist()]
    return to_list(values)


def series_json(x: np.ndarray, y: np.ndarray, max_points: int, steps: bool) -> dict[str, list[Any]]:
    """``{"x", "y", "y_min", "y_max"}`` of one metric, downsampled to ``max_points``."""
    xs, ys, lo, hi = downsample(x, y, max_points)
    return {"x": x_list(xs, steps), "y": to_list(ys), "y_min": to_list(lo), "y_max": to_list(hi)}


def encode_cursor(offsets: dict[str, int]) -> str:
    """An opaque cursor from each segment's byte offset (the end of its last complete line read)."""
    text = ";".join(f"{name}:{off}" for name, off in sorted(offsets.items()))
    return "1." + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> dict[str, int]:
    """The segment offsets of a cursor made by :func:`encode_cursor`.

    :raises CursorError: when it does not parse.
    """
    if not isinstance(cursor, str) or not cursor.startswith("1.") or len(cursor) > 100_000:
        raise CursorError("since: not a cursor of this server (expected the cursor of a previous response)")
    body = cursor[2:]
    try:
        text = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise CursorError("since: the cursor does not decode") from None
    offsets: dict[str, int] = {}
    for part in filter(None, text.split(";")):
        name, sep, off = part.rpartition(":")
        if not sep or not name or not off.isdigit():
            raise CursorError(f"since: malformed cursor entry {part[:60]!r}")
        offsets[name] = int(off)
    return offsets
