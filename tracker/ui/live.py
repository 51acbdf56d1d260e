"""Reading a run's metrics from byte offsets, so a growing run costs only its new lines.

Each segment is read from a byte offset to the end of its last complete line
(a line still being written is left for the next read). :class:`MetricsCache`
keeps, per run and per segment, the columns read so far and the offset they
end at: a request after ten new records decodes ten lines. The lines go
through the core's own columnar decoder (:func:`tracker.read.columns.segment_columns`,
checksums included); a damaged line is reported as a problem and skipped, the
rest is read.

Nothing is written anywhere: the cache lives in the server's memory only.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tracker.core.format import METRICS
from tracker.core.records import Problem
from tracker.core.summary import MISSING
from tracker.read.columns import merge_columns, segment_columns
from tracker.read.index import Writable, index_enabled, load_segment
from tracker.read.segment import segment_paths as _segment_paths

_CHUNK = 1 << 20
#: Whether this server may write derived data into the store (off after the first refusal).
_WRITABLE = Writable()


class SegmentColumns:
    """The metrics records of one segment read so far: steps, times and one column per name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.offset = 0
        self.ino: int | None = None
        self.lines = 0
        self.parts: list[tuple[dict[str, np.ndarray], int]] = []
        self.n = 0
        self.problems: list[dict[str, Any]] = []
        #: Whether ``lines`` counts from the file's start (line numbers in problems are exact).
        self.from_start = True

    def _chunks(self, fd: int, end: int) -> Iterator[list[bytes]]:
        """Lists of complete lines from ``self.offset`` up to ``end``, advancing the offset past each."""
        rest = b""
        pos = self.offset
        while pos < end:
            chunk = os.pread(fd, min(_CHUNK, end - pos), pos)
            if not chunk:
                break
            pos += len(chunk)
            data = rest + chunk if rest else chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            rest = data[cut + 1:]
            lines = data[:cut].split(b"\n")
            self.offset = pos - len(rest)
            yield lines

    def seed(self, path: Path) -> None:
        """Start from the segment's derived columns (``<store>/index/``) instead of its first line.

        The store's index covers the segment up to a byte offset (and is
        extended to its last complete line on the way), so the first request
        for a long run costs its columns, not a parse of every line; reading
        then goes on from that offset as from any other.
        """
        if self.offset or self.ino is not None or not index_enabled():
            return
        try:
            ix = load_segment(path.parents[2], path.parent.name, path, {METRICS}, _WRITABLE)
        except Exception:  # noqa: BLE001 - derived data is an optimisation: read the lines instead
            return
        part = ix.parts.get(METRICS)
        self.offset, self.lines, self.ino = ix.offset, ix.lines, ix.ino
        if part is not None and part.n:
            self.parts = [({"step": part.step, "time": part.time, **part.cols}, part.n)]
            self.n = part.n
        for line, kind, message in ix.problems[:100]:
            self.problems.append({"segment": self.name, "line": line, "kind": kind, "message": message})

    def read(self, path: Path) -> int:
        """Read the complete lines after ``self.offset``; returns how many metrics records were new."""
        self.seed(path)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            self.problems.append({"segment": self.name, "line": None, "kind": "unreadable",
                                  "message": f"cannot read {path.name}: {exc.strerror}"})
            return 0
        try:
            st = os.fstat(fd)
            if self.ino is not None and (st.st_ino != self.ino or st.st_size < self.offset):
                self.__init__(self.name)  # the file was replaced: read it again from the start
            self.ino = st.st_ino
            if st.st_size <= self.offset:
                return 0
            base = self.lines
            counted = self._counted(self._chunks(fd, st.st_size))
            cols, n = segment_columns(self.name, counted, lambda p: self._problem(p, base))
        finally:
            os.close(fd)
        if n:
            self.parts.append((cols, n))
            self.n += n
            if len(self.parts) > 1:
                self.parts = [(self._joined(), self.n)]
        return n

    def _counted(self, chunks: Iterator[list[bytes]]) -> Iterator[list[bytes]]:
        for lines in chunks:
            self.lines += len(lines)
            yield lines

    def _problem(self, problem: Problem, base: int) -> None:
        if len(self.problems) < 100:
            line = base + problem.line if self.from_start and problem.line is not None else None
            self.problems.append({"segment": self.name, "line": line, "kind": problem.kind,
                                  "message": problem.message})

    def _joined(self) -> dict[str, np.ndarray]:
        names = list(dict.fromkeys(k for cols, _ in self.parts for k in cols))
        out = {}
        for k in names:
            dtype = np.int64 if k == "step" else np.float64
            out[k] = np.concatenate([c[k] if k in c else np.full(n, MISSING, dtype) for c, n in self.parts])
        return out

    def columns(self) -> dict[str, np.ndarray]:
        """The columns read so far (``step``, ``time`` and every metric)."""
        if not self.parts:
            return {"step": np.zeros(0, np.int64), "time": np.zeros(0)}
        return self.parts[0][0]


def merge(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Columns of several segments as one, in log order (as :func:`tracker.read.columns.merge_columns`)."""
    cols, _ = merge_columns([(p, int(p["step"].size)) for p in parts if p["step"].size])
    return cols


def segment_paths(run_dir: Path) -> list[Path]:
    """The run's segment files (what readers merge), sorted by name; none when the folder is gone."""
    try:
        return _segment_paths(run_dir)
    except Exception:  # noqa: BLE001 - a run removed while the page looks at it has no segments
        return []


def read_since(run_dir: Path, offsets: dict[str, int]) -> tuple[dict[str, np.ndarray], dict[str, int], list]:
    """The metrics records after ``offsets`` (per segment name; a new segment from its start).

    :returns: the new records' columns, the offsets to resume from, problems met.
    """
    parts, new_offsets, problems = [], {}, []
    for path in segment_paths(run_dir):
        seg = SegmentColumns(path.name)
        seg.offset = offsets.get(path.name, 0)
        seg.from_start = seg.offset == 0
        seg.read(path)
        new_offsets[path.name] = seg.offset
        parts.append(seg.columns())
        problems += seg.problems
    return merge(parts), new_offsets, problems


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
