"""The plugin host: the plugin manager, the hook specifications, the event bus and the registries.

Imports only :mod:`tracker.core`. ``from tracker.host import get_host`` (the module of 0.3) still
works: those names load :mod:`tracker.host.host` on first use.
"""

from __future__ import annotations

from typing import Any

_HOST_NAMES = frozenset({"Host", "get_host", "set_host", "list_plugins"})


def __getattr__(name: str) -> Any:
    if name in _HOST_NAMES:
        from tracker.host import host

        return getattr(host, name)
    raise AttributeError(f"module 'tracker.host' has no attribute {name!r}")
