"""Reading a run as it grows: records and metrics columns from each segment's byte offset.

:class:`Follower` yields a run's records appended since its last call, in log
order across writers (``tracker tail -f``, watchers). :class:`SegmentColumns`
keeps the ``metrics`` columns of one segment read so far, seeded from the
segment's derived columns and extended by the complete lines after its offset,
so a growing run costs only its new lines (the dashboard's live charts).
Both read complete lines only (:class:`tracker.core.format.LineChunks`): a line
still being written is read once it is complete.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tracker.core.errors import StoreError, TrackerWarning
from tracker.core.format import (
    METRICS,
    RECORD,
    LineChunks,
    LineError,
    decode_nonfinite,
    iter_lines,
    merge_chunk,
    parse_line,
)
from tracker.core.records import Problem, Record
from tracker.core.summary import MISSING
from tracker.read.columns import merge_columns, segment_columns
from tracker.read.index import Writable, index_enabled, load_segment
from tracker.read.reader import merge_log_order
from tracker.read.segment import segment_paths as _segment_paths
from tracker.read.segment import segment_sizes

#: Whether this process may write derived data into the store (off after the first refusal).
_WRITABLE = Writable()


#: Seconds between two looks at the run's files while following.
POLL_INTERVAL = 0.2


class Follower:
    """Reads a run's records incrementally, from every writer's segment.

    :param view: the run.
    :param schema: only records of this schema (``None``: all).
    :param host: the plugin host whose schemas restore NaN and infinities.
    """

    def __init__(self, view: Any, schema: str | None = None, host: Any = None) -> None:
        self.view = view
        self.schema = schema
        self.host = host
        self.offsets: dict[Path, int] = {}
        self.lines: dict[Path, int] = {}
        self.tops: dict[Path, float] = {}  # each segment's largest time so far (merge_log_order)
        self.seqs: dict[str, int] = {}  # over the team database: each writer's last sequence number read

    def _segment(self, path: Path, chunk: int) -> Iterator[Record]:
        for end, line in iter_lines(path, self.offsets.get(path, 0), chunk):
            lineno = self.lines.get(path, 0) + 1
            self.offsets[path], self.lines[path] = end, lineno
            try:
                ev = parse_line(line)
            except LineError as exc:
                warnings.warn(f"tracker: {Problem(str(path), lineno, exc.kind, str(exc))}", TrackerWarning,
                              stacklevel=2)
                continue
            if ev.get("kind") != RECORD or (self.schema is not None and ev.get("schema") != self.schema):
                continue
            data = ev.get("data")
            if not isinstance(data, dict):
                continue
            compiled = self.host.schemas.get(ev.get("schema")) if self.host is not None else None
            data = compiled.decode(data) if compiled is not None else decode_nonfinite(data)
            yield Record(ev.get("step"), ev.get("time"), ev.get("schema"), data, ev.get("w", ""), ev.get("seq", 0))

    def read(self) -> Iterator[Record]:
        """Every record appended since the last call, in log order across writers (streaming).

        The first call reads what the store's derived columns cover (every
        complete line, without parsing them again); later calls parse only
        the lines appended since, from each segment's offset.
        """
        after = getattr(self.view, "records_after", None)
        if after is not None:
            # The team database: each writer's records after the last sequence number read.
            records, self.seqs = after(self.seqs, self.schema)
            return iter(records)
        if not self.offsets and index_enabled():
            records, ends = self.view.covered_records(self.schema)
            for path, (offset, lines, top) in ends.items():
                self.offsets[path], self.lines[path], self.tops[path] = offset, lines, top
            return records
        paths = self.view.segment_paths()
        gens = [self._segment(p, merge_chunk(len(paths))) for p in paths]
        tops = [self.tops.get(p, -math.inf) for p in paths]
        return self._remember(paths, tops, merge_log_order(gens, tops))

    def _remember(self, paths: list[Path], tops: list[float], records: Iterator[Record]) -> Iterator[Record]:
        yield from records
        self.tops.update(zip(paths, tops, strict=True))


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

    def seed(self, path: Path, end: int | None = None) -> bool:
        """Start from the segment's derived columns (``<store>/index/``) instead of its first line.

        The store's index covers the segment up to a byte offset (and is
        extended to its last complete line on the way), so the first request
        for a long run costs its columns, not a parse of every line; reading
        then goes on from that offset as from any other.

        :param end: read no further than this byte offset (the segment's size when the request began).
        :returns: whether the columns were seeded now (they cover the segment as it was at this call).
        """
        if self.offset or self.ino is not None or not index_enabled():
            return False
        try:
            ix = load_segment(path.parents[2], path.parent.name, path, {METRICS}, _WRITABLE, end=end)
        except Exception:  # noqa: BLE001 - derived data is an optimisation: read the lines instead
            return False
        part = ix.parts.get(METRICS)
        self.offset, self.lines, self.ino = ix.offset, ix.lines, ix.ino
        if part is not None and part.n:
            self.parts = [({"step": part.step, "time": part.time, **part.cols}, part.n)]
            self.n = part.n
        for line, kind, message in ix.problems[:100]:
            self.problems.append({"segment": self.name, "line": line, "kind": kind, "message": message})
        return True

    def read(self, path: Path, end: int | None = None) -> int:
        """Read the complete lines after ``self.offset``; returns how many metrics records were new.

        Up to the segment's size at this call (or ``end``, its size when the caller's read began):
        lines appended meanwhile are read by the next call.
        """
        if self.seed(path, end):
            # The seed read the segment as it was a moment ago; what came since is the next call's.
            return self.n
        try:
            st = os.stat(path)
        except OSError as exc:
            self._unreadable(path, exc.strerror)
            return 0
        if self.ino is not None and (st.st_ino != self.ino or st.st_size < self.offset):
            self.__init__(self.name)  # the file was replaced: read it again from the start
        self.ino = st.st_ino
        limit = st.st_size if end is None else min(end, st.st_size)
        if limit <= self.offset:
            return 0
        base = self.lines
        try:
            cols, n = segment_columns(self.name, self._counted(LineChunks(path, self.offset, end=limit)),
                                      lambda p: self._problem(p, base))
        except StoreError as exc:
            self._unreadable(path, str(exc))
            return 0
        if n:
            self.parts.append((cols, n))
            self.n += n
            if len(self.parts) > 1:
                self.parts = [(self._joined(), self.n)]
        return n

    def _unreadable(self, path: Path, why: str | None) -> None:
        self.problems.append({"segment": self.name, "line": None, "kind": "unreadable",
                              "message": f"cannot read {path.name}: {why}"})

    def _counted(self, chunks: Iterator[list[bytes]]) -> Iterator[list[bytes]]:
        for lines in chunks:  # complete lines only: the offset moves past each one's newline
            self.lines += len(lines)
            self.offset += sum(map(len, lines)) + len(lines)
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
    ends = segment_sizes(run_dir)  # all noted before any is read: a run logging fast is not chased
    for path in segment_paths(run_dir):
        seg = SegmentColumns(path.name)
        seg.offset = offsets.get(path.name, 0)
        seg.from_start = seg.offset == 0
        seg.read(path, ends.get(path.name))
        new_offsets[path.name] = seg.offset
        parts.append(seg.columns())
        problems += seg.problems
    return merge(parts), new_offsets, problems
