"""The tracker's environment variables a test's child process keeps when a test strips the others.

Tests that start children drop every ``TRACKER_*`` variable (so a child never logs to the wrong store
or run), but keep the suite's defaults for what runs record (tests/conftest.py: console and
environment capture off unless a test turns them on).
"""

from __future__ import annotations

import os

#: Kept in a child's environment: the suite's defaults of ``[run] console`` and ``[run] environment``.
SUITE_DEFAULTS = ("TRACKER_CONSOLE", "TRACKER_ENVIRONMENT")


def kept(name: str) -> bool:
    """Whether a child keeps variable ``name``: anything but ``TRACKER_*``, and the suite's defaults."""
    return not name.startswith("TRACKER_") or name in SUITE_DEFAULTS


def child_environ() -> dict[str, str]:
    """``os.environ`` without the tracker's variables other than the suite's defaults."""
    return {k: v for k, v in os.environ.items() if kept(k)}
