"""Values as the commands show them: times, durations, short ids, dotted config keys."""

from __future__ import annotations

import datetime as _dt
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


def short_ids(ids: Iterable[str], min_len: int = SHORT_ID_LEN) -> dict[str, str]:
    """The shortest prefix of each id (at least ``min_len``) that no other id shares."""
    ordered = sorted(set(ids))

    def common(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    out = {}
    for i, rid in enumerate(ordered):
        need = 0
        if i > 0:
            need = common(rid, ordered[i - 1]) + 1
        if i + 1 < len(ordered):
            need = max(need, common(rid, ordered[i + 1]) + 1)
        out[rid] = rid[:max(min_len, need)]
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
