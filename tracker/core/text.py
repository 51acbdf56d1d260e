"""Values as the commands show them: times, durations, short ids, dotted config keys."""

from __future__ import annotations

import datetime as _dt
import math
import re
import time
from collections.abc import Iterable
from typing import Any

#: Short ids are at least this long, longer where needed to stay unique (like git).
SHORT_ID_LEN = 8


def when(ts: float | None) -> str:
    """A timestamp as local date and time (as seconds when no date holds it)."""
    if ts is None:
        return "-"
    try:
        return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):  # a writer's clock far off: shown, never fatal
        return f"{ts:.6g} s"


def clock(ts: float | None) -> str:
    """A timestamp as local time of day with milliseconds (as seconds when no date holds it)."""
    if ts is None:
        return "-"
    try:
        return _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):
        return f"{ts:.6g} s"


def human_bytes(n: float | None) -> str:
    """A size in bytes as ``512 B``, ``1.5 KiB``, ``3.2 MiB``, ``1.04 GiB`` (``-`` for none)."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            break
        size /= 1024
    if unit == "B":
        return f"{int(size)} B"
    return f"{size:.2f} {unit}" if abs(size) < 10 else f"{size:.1f} {unit}"


#: Table columns whose numbers are Unix times (by their names).
_TIME_NAMES = ("created_at", "ended_at", "started_at", "finished_at", "updated_at", "time", "timestamp")


def is_size_column(name: str) -> bool:
    """Whether a column of that name holds sizes in bytes: ``size``, or ``bytes`` as a word (``total_bytes``).

    ``batch_size`` is no size in bytes: only the word ``bytes`` or the bare name ``size`` count.
    """
    low = name.lower()
    return low == "size" or "bytes" in low.replace(" ", "_").split("_")


def is_time_column(name: str) -> bool:
    """Whether a column of that name holds Unix times (``created_at``, ``time``, ``*_at``...)."""
    low = name.lower()
    return low in _TIME_NAMES or low.endswith(("_at", "_time"))


#: Columns whose numbers are durations in seconds (the page's rule in static/util.js, SECONDS_COL).
_SECONDS = re.compile(r"(^|_)(duration|elapsed|seconds|wall|secs)($|_s$)|_s$|_seconds$")


def is_seconds_column(name: str) -> bool:
    """Whether a column of that name holds a duration in seconds (``duration``, ``wall_time_s``...)."""
    return bool(_SECONDS.search(name.lower()))


def human_cell(column: str, value: Any) -> Any:
    """A table cell as people read it: Unix times in time columns as dates, byte counts as KiB, MiB, GiB,
    durations in seconds as ``32ms``, ``4.2s`` (as the page shows them).

    Other values (and values of other types) are returned unchanged; JSON and
    CSV output never goes through this.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if is_time_column(column) and 1e8 <= value <= 1e11:  # 1973..5138: a Unix time, not a duration
        return when(value)
    if is_size_column(column) and value >= 0 and value == int(value):
        return human_bytes(value)
    if is_seconds_column(column) and math.isfinite(value) and value >= 0:
        return duration(value)
    return value


#: Columns that hold a statistic of the quantity the row's label names ("peak" of "memory_used_bytes").
STAT_COLUMNS = frozenset({"mean", "peak", "last", "first", "min", "max", "median", "value", "total"})


def row_unit(row: dict[str, Any]) -> str | None:
    """The column-like name a row is about, when its label says a unit: a text cell naming bytes,
    a time or a duration (``{"metric": "memory_used_bytes", "peak": ...}`` -> ``memory_used_bytes``)."""
    for v in row.values():
        if isinstance(v, str) and (is_size_column(v) or is_seconds_column(v)):
            return v
    return None


def human_rows(columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`human_cell` over every cell of ``rows``; a statistic column (mean, peak, last...) takes
    the unit of the quantity its row names (the page does the same: static/panels.js tableNode)."""
    cols = list(columns)
    out = []
    for row in rows:
        unit = row_unit(row)
        out.append({**row, **{c: human_cell(unit if unit and c.lower() in STAT_COLUMNS else c, row.get(c))
                              for c in cols if c in row}})
    return out


def duration(seconds: float | None) -> str:
    """Seconds as ``32ms``, ``4.2s``, ``3m05s``, ``1h02m`` or ``2d07h``."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{max(seconds, 0.0) * 1000:.0f}ms"
    if seconds < 60:
        return f"{max(seconds, 0.0):.1f}s"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def run_duration(info: Any) -> float | None:
    """A run's duration; for a running run, from its start until now."""
    if info.status == "running" and info.created_at is not None:
        return time.time() - info.created_at
    return info.duration


def _common(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def short_ids(ids: Iterable[str], min_len: int = SHORT_ID_LEN) -> dict[str, str]:
    """The shortest prefix of each id (at least ``min_len``) that no other id shares."""
    ordered = sorted(set(ids))
    if not ordered:
        return {}
    # What each id shares with the next one; an id needs one character past what it shares with either neighbour.
    shared = [_common(a, b) for a, b in zip(ordered, ordered[1:], strict=False)]
    before = [-1, *shared]
    after = [*shared, -1]
    return {rid: rid[:max(min_len, b + 1, a + 1)] for rid, b, a in zip(ordered, before, after, strict=True)}


def short_ids_of(ids: list[str], wanted: Iterable[str], min_len: int = SHORT_ID_LEN) -> dict[str, str]:
    """:func:`short_ids` of the ``wanted`` ids only, among all ``ids`` (sorted, as ``run_ids()`` gives them):
    each looks at its two neighbours, so a page of 50 runs of 100,000 costs 50 look-ups."""
    from bisect import bisect_left

    out = {}
    for rid in wanted:
        i = bisect_left(ids, rid)
        need = min_len
        if i > 0:
            need = max(need, _common(ids[i - 1], rid) + 1)
        j = i + 1 if i < len(ids) and ids[i] == rid else i
        if j < len(ids):
            need = max(need, _common(ids[j], rid) + 1)
        out[rid] = rid[:need]
    return out


def flatten(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as ``("a.b", value)`` pairs, in order."""
    out: list[tuple[str, Any]] = []
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out += flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out
