"""The dashboard's live charts: recently viewed runs' metrics kept in memory, read on through the read path.

:class:`MetricsCache` keeps, per run and per segment, a
:class:`tracker.read.tail.SegmentColumns` (seeded from the derived columns,
extended by the complete lines after its offset): a request after ten new
records decodes ten lines. Nothing is written anywhere but the derived data
the read path keeps; the cache lives in the server's memory only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from tracker.read.tail import SegmentColumns, merge, read_since, segment_paths  # noqa: F401 - the app's names


class MetricsCache:
    """The metrics of recently viewed runs, per segment, kept up to date by reading only new lines.

    :param max_runs: how many runs to keep (least recently used ones are dropped).
    """

    def __init__(self, max_runs: int = 8) -> None:
        self.max_runs = max_runs
        self._runs: OrderedDict[Path, dict[str, SegmentColumns]] = OrderedDict()
        self._locks: dict[Path, threading.Lock] = {}
        self._lock = threading.Lock()

    def read(self, run_dir: Path) -> tuple[dict[str, np.ndarray], dict[str, int], list]:
        """Every metrics record of the run: merged columns, the offsets read to, problems."""
        with self._lock:
            lock = self._locks.setdefault(run_dir, threading.Lock())
        with lock:
            with self._lock:
                segs = self._runs.pop(run_dir, None) or {}
                self._runs[run_dir] = segs
                while len(self._runs) > self.max_runs:
                    old, _ = self._runs.popitem(last=False)
                    self._locks.pop(old, None)
            parts, offsets, problems = [], {}, []
            for path in segment_paths(run_dir):
                seg = segs.get(path.name)
                if seg is None:
                    seg = segs[path.name] = SegmentColumns(path.name)
                seg.read(path)
                offsets[path.name] = seg.offset
                parts.append(seg.columns())
                problems += seg.problems
            return merge(parts), offsets, problems
