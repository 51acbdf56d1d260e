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
from typing import Any

import numpy as np

from tracker.read.segment import segment_sizes
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
            ends = segment_sizes(run_dir)  # all noted before any is read: a run logging fast is not chased
            for path in segment_paths(run_dir):
                seg = segs.get(path.name)
                if seg is None:
                    seg = segs[path.name] = SegmentColumns(path.name)
                seg.read(path, ends.get(path.name))
                offsets[path.name] = seg.offset
                parts.append(seg.columns())
                problems += seg.problems
            return merge(parts), offsets, problems


class TeamColumnsCache:
    """Columns and drawn series of recently viewed runs of the team database, kept while their stamp holds.

    A run's stamp moves with every sync that adds to it (tracker/team/derived.py),
    so a page loaded again (by anyone: the dashboard is shared) reads one number
    instead of the run's columns.

    :param max_entries: how many reads of each kind to keep.
    """

    def __init__(self, max_entries: int = 16) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, tuple[int, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, key: tuple, stamp: int) -> Any:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] == stamp:
                self._entries.move_to_end(key)
                return hit[1]
        return None

    def _put(self, key: tuple, stamp: int, value: Any) -> None:
        with self._lock:
            self._entries[key] = (stamp, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def read(self, view: Any, names: list[str] | None,
             times: bool = True) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        """The run's columns (of ``names``, or every metric; ``time`` when ``times``) and the cursor after them."""
        key = ("columns", view.id, None if names is None else tuple(sorted(set(names))), times)
        stamp = view.stamp()
        hit = self._get(key, stamp)
        if hit is None:
            hit = view.metric_columns(names, times=times)
            self._put(key, stamp, hit)
        return hit

    def series(self, view: Any, key: tuple, make: Any) -> Any:
        """What ``make()`` returns for ``key`` (a request's series), made again only when the run's stamp moved."""
        stamp = view.stamp()
        full = ("series", *key)
        hit = self._get(full, stamp)
        if hit is None:
            hit = make()
            self._put(full, stamp, hit)
        return hit
