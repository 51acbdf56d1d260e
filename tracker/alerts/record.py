"""Alerts written to runs and read back.

``run.alert`` writes its ``alert`` record through the run's own writer. The
watcher, another process, writes into a run through an *observer* segment:
a segment of its own whose first line says ``"observer": "alerts"``, which
readers read like any other but never count as a writer of the run (it
changes no status, start or end time; see docs/format.md).
"""

from __future__ import annotations

import datetime as _dt
import math
import threading
import time as _time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import TrackerError
from ..format import RECORD, WRITER_STARTED
from ..values import given
from .channels import Alert, build_channels
from .delivery import get_sender

ALERT = "alert"
LEVELS = ("INFO", "WARN", "ERROR")
OBSERVER = "alerts"
_lock = threading.Lock()


def check_level(level: Any) -> str:
    """``INFO``, ``WARN`` or ``ERROR`` (any case), or W&B's ``AlertLevel`` member; ``None`` is INFO."""
    if level is None:
        return "INFO"
    value = getattr(level, "value", level)
    if isinstance(value, str) and value.upper() in LEVELS:
        return value.upper()
    if isinstance(value, str) and value.upper() == "WARNING":
        return "WARN"
    raise ValueError(f"alert level: expected one of INFO, WARN, ERROR, given {given(level)}")


def check_wait(wait_duration: Any) -> float:
    """Seconds from a number, a ``datetime.timedelta`` or ``None`` (0)."""
    if wait_duration is None:
        return 0.0
    if isinstance(wait_duration, _dt.timedelta):
        return wait_duration.total_seconds()
    if isinstance(wait_duration, bool) or not isinstance(wait_duration, (int, float)) or \
            not math.isfinite(wait_duration) or wait_duration < 0:
        raise ValueError(f"wait_duration: expected seconds >= 0 or a datetime.timedelta, given {given(wait_duration)}")
    return float(wait_duration)


def alert(run: Any, title: str, text: str, level: Any = None, wait_duration: Any = None) -> bool:
    """``run.alert``: record an ``alert`` in ``run`` and deliver it to every configured channel.

    The same ``title`` again within ``wait_duration`` seconds of the last one
    sent is recorded with ``suppressed=True`` and not sent. Returns whether it
    was sent (queued for delivery: the channels are reached in the background).

    :raises SchemaError: a title or text that is not a string.
    :raises ValueError: an unknown level or a negative ``wait_duration``.
    """
    lvl = check_level(level)
    wait = check_wait(wait_duration)
    for what, value in (("title", title), ("text", text)):
        if not isinstance(value, str):
            raise TypeError(f"alert {what}: expected a str, given {given(value)}")
    now = _time.time()
    with _lock:
        sent_at: dict[str, float] = run.__dict__.setdefault("_alerts_sent", {})
        last = sent_at.get(title)
        suppressed = last is not None and now - last < wait
        if not suppressed:
            sent_at[title] = now
    from ..capture import side_writer

    step, _ = side_writer(run)(ALERT, {"title": title, "text": text, "level": lvl, "suppressed": suppressed,
                                       "condition": ""}, None)
    if suppressed:
        return False
    host = run._host
    deliver(host, Alert(title=title, text=text, level=lvl, run_id=run.id, run_name=run.name, project=run.project,
                        time=now, step=step))
    return True


def deliver(host: Any, item: Alert, channel_names: Iterable[str] | None = None) -> None:
    """Queue ``item`` for the named channels (default: every configured one); never raises.

    A channel configuration that cannot be built is reported on stderr once per call.
    """
    alerts = host.config.alerts
    if not alerts.get("channels"):
        return
    sender = get_sender(alerts)
    try:
        channels = build_channels(alerts, host, host.config.file)
    except TrackerError as exc:
        sender.report(f"tracker: warning: alert {item.title!r} not delivered: {exc}")
        return
    names = list(channels) if channel_names is None else [n for n in channel_names if n in channels]
    sender.submit(item, [channels[n] for n in names], retries=int(alerts.get("retries", 5)),
                  backoff=float(alerts.get("backoff", 1.0)))


def flush(timeout: float | None = None) -> bool:
    """Wait for this process's queued deliveries (at most ``timeout`` seconds); whether all finished."""
    from . import delivery

    if delivery._sender is None:
        return True
    return delivery._sender.flush(delivery._FINISH_TIMEOUT[0] if timeout is None else timeout)


def write_observed(run_dir: Path, data: dict[str, Any], step: int, *, fsync: bool = False) -> None:
    """Append one ``alert`` record to the run in ``run_dir`` through an observer segment of its own.

    :raises StoreError: when the segment cannot be written.
    """
    from ..writer import SegmentWriter

    w = SegmentWriter(run_dir, fsync=fsync, hidden=True)
    try:
        w.append(WRITER_STARTED, None, None, _time.time(), {**w.facts(), "observer": OBSERVER})
        w.reveal()
        w.append(RECORD, ALERT, step, _time.time(), data)
    except BaseException:
        if w.hidden_path is not None:
            w.discard()
        raise
    finally:
        w.close()


def read_alerts(view: Any) -> list[dict[str, Any]]:
    """A run's alerts in log order: step, time, title, text, level, suppressed, condition."""
    out = []
    for rec in view.records(ALERT):
        d = rec.data
        out.append({"run_id": view.id, "step": rec.step, "time": rec.time, "title": d.get("title", ""),
                    "text": d.get("text", ""), "level": d.get("level", "INFO"),
                    "suppressed": bool(d.get("suppressed", False)), "condition": d.get("condition", "")})
    return out
