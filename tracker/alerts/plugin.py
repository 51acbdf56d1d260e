"""The alerts capability as a plugin: every ``alert`` record ``run.alert`` writes goes to the channels.

Registered as the entry point ``alerts`` (group ``tracker``): the write path records the alert and
the bus hands the record here, so nothing below the capabilities imports this folder.
"""

from __future__ import annotations

from typing import Any

from tracker.core.records import Event
from tracker.host.hookspecs import hookimpl


@hookimpl
def tracker_subscribe(bus: Any) -> None:
    # Delivery is queued for a background thread: the logging thread only hands the record over.
    bus.subscribe(_deliver, kinds=["record"], schemas=["alert"])


def _deliver(event: Event) -> None:
    from tracker.alerts.record import deliver_recorded
    from tracker.host.host import get_host

    deliver_recorded(get_host(), event)
