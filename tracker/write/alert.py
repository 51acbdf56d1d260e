"""``run.alert``: an ``alert`` record written by the run, with W&B's repeat suppression.

The record goes through the run's own writer; delivering it to people is the
alerts capability's work, which receives the record on the bus (the built-in
``alert`` plugin subscribes it), so the write path imports nothing above it.
"""

from __future__ import annotations

import datetime as _dt
import math
import threading
import time as _time
from typing import Any

from tracker.core.errors import SchemaError
from tracker.core.values import given

ALERT = "alert"
LEVELS = ("INFO", "WARN", "ERROR")
_lock = threading.Lock()


def check_level(level: Any) -> str:
    """``INFO``, ``WARN`` or ``ERROR`` (any case), or W&B's ``AlertLevel`` member; ``None`` is INFO.

    :raises SchemaError: any other level (a :class:`TrackerError` and a ``ValueError``), naming it and
        the allowed ones.
    """
    if level is None:
        return "INFO"
    value = getattr(level, "value", level)
    if isinstance(value, str) and value.upper() in LEVELS:
        return value.upper()
    if isinstance(value, str) and value.upper() == "WARNING":
        return "WARN"
    raise SchemaError(ALERT, [("level", f"expected one of {', '.join(LEVELS)}, given {given(level)}")])


def check_wait(wait_duration: Any) -> float:
    """Seconds from a number, a ``datetime.timedelta`` or ``None`` (0)."""
    if wait_duration is None:
        return 0.0
    if isinstance(wait_duration, _dt.timedelta):
        return wait_duration.total_seconds()
    if isinstance(wait_duration, bool) or not isinstance(wait_duration, (int, float)) or \
            not math.isfinite(wait_duration) or wait_duration < 0:
        raise SchemaError(ALERT, [("wait_duration", "expected seconds >= 0 or a datetime.timedelta, "
                                                    f"given {given(wait_duration)}")])
    return float(wait_duration)


def record_alert(run: Any, title: str, text: str, level: Any = None, wait_duration: Any = None) -> bool:
    """``run.alert``: record an ``alert`` in ``run`` and deliver it to every configured channel.

    The same ``title`` again within ``wait_duration`` seconds of the last one
    sent is recorded with ``suppressed=True`` and not sent. Returns whether it
    was sent (queued for delivery: the channels are reached in the background).

    :raises SchemaError: a title or text that is not a string, an unknown level or a negative
        ``wait_duration`` (a :class:`TrackerError`, and a ``ValueError`` as before).
    """
    lvl = check_level(level)
    wait = check_wait(wait_duration)
    for what, value in (("title", title), ("text", text)):
        if not isinstance(value, str):
            raise SchemaError(ALERT, [(what, f"expected a str, given {given(value)}")])
    now = _time.time()
    with _lock:
        sent_at: dict[str, float] = run.__dict__.setdefault("_alerts_sent", {})
        last = sent_at.get(title)
        suppressed = last is not None and now - last < wait
        if not suppressed:
            sent_at[title] = now
    from tracker.capture import side_writer

    # Written at the run's latest step; a record that is not suppressed reaches the channels through
    # the bus (tracker.builtin.alert subscribes the alerts capability's delivery).
    side_writer(run)(ALERT, {"title": title, "text": text, "level": lvl, "suppressed": suppressed,
                             "condition": ""}, None)
    return not suppressed
