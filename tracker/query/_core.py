"""The few core internals the query package reads (line checks, segment ends), in one place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracker.core.format import LineChunks, LineError, parse_line
from tracker.read.segment import is_observer, read_segment, run_status


def segment_finish(path: Path) -> dict[str, Any] | None:
    """The ``run_finished`` event a segment ends with, if its writer finished."""
    try:
        return read_segment(path).finish
    except OSError:
        return None


__all__ = ["LineChunks", "LineError", "is_observer", "parse_line", "read_segment", "run_status", "segment_finish"]
