"""Alerts: ``run.alert``, rules checked by ``tracker watch``, and channels that deliver in the background.
May import the read and write core (``tracker.*`` modules of the core); no other capability folder.

Modules: :mod:`.rules` (the ``when`` conditions of tracker.toml), :mod:`.channels`
(webhook, email, command, desktop, and the plugins' types), :mod:`.delivery`
(the background sender with retries), :mod:`.record` (alerts written to and
read from runs), :mod:`.watch` (the watcher).
"""

from __future__ import annotations

from tracker.alerts.record import alert, read_alerts

__all__ = ["alert", "read_alerts"]
