"""The few core internals the query package reads (segment ends, line checks), in one place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

try:  # the layout after the core move
    from ..format import LineChunks, LineError, parse_line  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - the layout before it
    from ..store import LineChunks, LineError, parse_line  # type: ignore[no-redef]

try:
    from ..reader import read_segment, run_status  # type: ignore[import-not-found,attr-defined]
except ImportError:  # pragma: no cover
    from ..segment import read_segment, run_status  # type: ignore[no-redef]


def segment_finish(path: Path) -> dict[str, Any] | None:
    """The ``run_finished`` event a segment ends with, if its writer finished."""
    try:
        return read_segment(path).finish
    except OSError:
        return None


__all__ = ["LineChunks", "LineError", "parse_line", "read_segment", "run_status", "segment_finish"]
