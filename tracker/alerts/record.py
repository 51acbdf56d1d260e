"""Alerts written to runs and read back.

``run.alert`` writes its ``alert`` record through the run's own writer. The
watcher, another process, writes into a run through an *observer* segment:
a segment of its own whose first line says ``"observer": "alerts"``, which
readers read like any other but never count as a writer of the run (it
changes no status, start or end time; see docs/format.md).
"""

from __future__ import annotations

import time as _time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracker.alerts.channels import Alert, build_channels
from tracker.alerts.delivery import get_sender
from tracker.core.errors import TrackerError
from tracker.core.format import RECORD, WRITER_STARTED
from tracker.write.alert import ALERT, LEVELS, check_level, check_wait, record_alert  # noqa: F401 - their names here

OBSERVER = "alerts"


def alert(run: Any, title: str, text: str, level: Any = None, wait_duration: Any = None) -> bool:
    """``run.alert`` (see :func:`tracker.write.alert.record_alert`): record it; delivery follows on the bus."""
    return record_alert(run, title, text, level, wait_duration)


def deliver_recorded(host: Any, event: Any) -> None:
    """Deliver an ``alert`` record that ``run.alert`` wrote (the bus hands it here); never raises.

    Suppressed repeats and the watcher's own records (which name their condition; the watcher
    delivers those itself) are not sent.
    """
    data = event.data or {}
    if data.get("suppressed") or data.get("condition"):
        return
    from tracker.write.api import _active

    run = next((r for r in reversed(_active) if r.id == event.run_id), None)
    deliver(host, Alert(title=data.get("title", ""), text=data.get("text", ""), level=data.get("level", "INFO"),
                        run_id=event.run_id, run_name=getattr(run, "name", None),
                        project=getattr(run, "project", None), time=event.time, step=event.step))


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
    from tracker.alerts import delivery

    if delivery._sender is None:
        return True
    return delivery._sender.flush(delivery._FINISH_TIMEOUT[0] if timeout is None else timeout)


def write_observed(run_dir: Path, data: dict[str, Any], step: int, *, fsync: bool = False) -> None:
    """Append one ``alert`` record to the run in ``run_dir`` through an observer segment of its own.

    :raises StoreError: when the segment cannot be written.
    """
    from tracker.write.writer import SegmentWriter

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


def store_alerts(store: Any, ref: str | None) -> list[dict[str, Any]]:
    """Every alert of run ``ref`` (or of every run holding alerts), in time order, with the run's name."""
    if ref is not None:
        view = store.run(ref)
        views = [(view, view.info.name)]
    else:
        catalog = getattr(store, "catalog", None)
        if catalog is not None:
            views = [(store.run(e.info.id), e.info.name) for e in catalog() if e.schemas.get(ALERT)]
        else:  # the team store: no records per schema in its listing
            views = [(store.run(i.id), i.name) for i in store.runs()]
    out = []
    for view, name in views:
        for a in read_alerts(view):
            out.append({**a, "run_name": name})
    out.sort(key=lambda a: (a["time"], a["run_id"]))
    return out
