"""Derived data under ``<store>/index/``: columns per segment and the run catalog.

The JSONL segments are the only truth; everything here is derived from them,
checked against them before use and rebuilt when it does not match, so that
deleting ``<store>/index/`` changes no answer, only the time it takes
(docs/format.md, "Derived data"). Readers build it on first need and extend
it with the lines appended since; writers never touch it.

``TRACKER_INDEX=off`` in the environment makes readers parse the JSONL
instead (what the index is tested against).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tracker.read.index.catalog import CatalogEntry, folder_state, gc_paused
from tracker.read.index.catalog import entries as catalog_entries
from tracker.read.index.segments import (
    INDEX_DIR,
    WINDOW_ROWS,
    SchemaCols,
    SegmentIndex,
    Writable,
    index_file,
    stream_part,
    warn_once,
)
from tracker.read.index.segments import load as load_segment
from tracker.read.index.stats import combine_stats, metric_dicts

__all__ = [
    "INDEX_DIR", "WINDOW_ROWS", "CatalogEntry", "SchemaCols", "SegmentIndex", "Writable", "catalog_entries",
    "combine_stats", "folder_state", "gc_paused", "index_enabled", "index_file", "load_segment", "metric_dicts",
    "prune", "stream_part", "warn_once",
]


def prune(store: Path, keep: set[str]) -> list[str]:
    """Remove the derived columns of runs not in ``keep`` (runs removed for good); returns their ids.

    Derived data of a run that is gone is only a cost: it is rebuilt if a run of that id comes back.
    """
    base = store / INDEX_DIR / "segments"
    gone = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return gone
    for e in entries:
        if e.name not in keep and e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path, ignore_errors=True)
            gone.append(e.name)
    return gone


def index_enabled() -> bool:
    """Whether readers use derived data (``TRACKER_INDEX`` is not ``off``, ``0`` or ``no``)."""
    return os.environ.get("TRACKER_INDEX", "").strip().lower() not in ("off", "0", "no", "false")


