"""The C fast path of logging (``tracker/write/_fastline.c``), when it was built here.

Installing from source compiles it when a C compiler is found; without one,
or with ``TRACKER_PURE_PYTHON=1`` in the environment, tracker writes the same
lines through the Python body of :meth:`tracker.write.route.Route.append`.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType

#: The interface of ``_fastline.c`` this Python code is written against (its ``INTERFACE``).
INTERFACE = 2


def _load() -> ModuleType | None:
    if os.environ.get("TRACKER_PURE_PYTHON"):
        return None
    try:
        from tracker.write import _fastline
    except ImportError:
        return None
    # A module left from another version of the sources (an install not rebuilt) is not used.
    return _fastline if getattr(_fastline, "INTERFACE", None) == INTERFACE else None


#: The extension module, or ``None``.
fastline = _load()
#: The writer's lock: the extension's (``threading.Lock``'s behaviour, taken by its append without a
#: method call) or ``threading.Lock``.
Lock = fastline.Lock if fastline is not None else threading.Lock
