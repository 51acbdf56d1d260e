"""Reading a run's metrics from byte offsets, so a growing run costs only its new lines.

Each segment is read from a byte offset to the end of its last complete line
(a line still being written is left for the next read). :class:`MetricsCache`
keeps, per run and per segment, the columns read so far and the offset they
end at: a request after ten new records parses ten lines. Lines are checked
and parsed by the core's line format (checksum included); a damaged line is
reported as a problem and skipped, the rest is read.

Nothing is written anywhere: the cache lives in the server's memory only.
"""

from __future__ import annotations

import os
import threading
from array import array
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

import numpy as np

from .. import MISSING

try:  # the line format's own module (tracker/format.py), once the core is split
    from ..format import LineError, parse_line  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - the layout of tracker 0.1
    from ..store import LineError, parse_line

_SPECIAL = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_RECORD_MARK = b'"kind":"record","schema":"'
_METRICS_MARK = b'"kind":"record","schema":"metrics"'
_CHUNK = 1 << 20
_consume = deque(maxlen=0).extend


class SegmentColumns:
    """The metrics records of one segment read so far: steps, times and one column per name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.offset = 0
        self.ino: int | None = None
        self.lines = 0
        self.steps = array("q")
        self.times = array("d")
        self.cols: dict[str, array] = {}
        self.n = 0
        self.problems: list[dict[str, Any]] = []
        #: Whether ``lines`` counts from the file's start (line numbers in problems are exact).
        self.from_start = True

    def read(self, path: Path, stop: int | None = None) -> int:
        """Read the complete lines after ``self.offset`` (up to byte ``stop``); returns how many records."""
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
            end = st.st_size if stop is None else min(stop, st.st_size)
            before = self.n
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
                self._lines(data[:cut].split(b"\n"))
                self.offset = pos - len(rest)
            return self.n - before
        finally:
            os.close(fd)

    def _lines(self, lines: list[bytes]) -> None:
        steps, times, cols = self.steps, self.times, self.cols
        append = array.append
        names: tuple[str, ...] = ()
        arrs: list[array] = []
        n = self.n
        for line in lines:
            self.lines += 1
            head = line[:80]
            if _METRICS_MARK not in head:
                if _RECORD_MARK in head:
                    continue  # another schema's record: not read here
                try:
                    parse_line(line)  # lifecycle events; damage is reported
                except LineError as exc:
                    self._problem(exc.kind, str(exc))
                continue
            try:
                ev = parse_line(line)
                data = ev["data"]
                step, time = ev["step"], ev["time"]
                if type(data) is not dict or type(step) is not int or not isinstance(time, (int, float)):
                    raise LineError("corrupt", "metrics record without step, time or data")
            except LineError as exc:
                self._problem(exc.kind, str(exc))
                continue
            except (KeyError, TypeError):
                self._problem("corrupt", "metrics record without step, time or data")
                continue
            steps.append(step)
            times.append(time)
            if tuple(data) == names:
                try:
                    _consume(map(append, arrs, data.values()))
                    n += 1
                    continue
                except TypeError:  # "NaN" or an infinity, as the store writes them
                    for a in arrs:
                        del a[n:]
            for k, v in data.items():
                a = cols.get(k)
                if a is None:
                    a = cols[k] = array("d", [MISSING]) * n
                elif len(a) < n:
                    a.extend(array("d", [MISSING]) * (n - len(a)))
                try:
                    a.append(v)
                except TypeError:
                    a.append(_SPECIAL.get(v, float("nan")) if isinstance(v, str) else float("nan"))
            names = tuple(data)
            arrs = [cols[k] for k in names]
            n += 1
        self.n = n

    def _problem(self, kind: str, message: str) -> None:
        if len(self.problems) < 100:
            self.problems.append({"segment": self.name, "line": self.lines if self.from_start else None,
                                  "kind": kind, "message": message})

    def columns(self, start: int = 0) -> dict[str, np.ndarray]:
        """Copies of the columns from record ``start`` on (``step``, ``time`` and every metric)."""
        n = self.n
        out: dict[str, np.ndarray] = {"step": np.array(self.steps[start:], dtype=np.int64),
                                      "time": np.array(self.times[start:], dtype=np.float64)}
        for k, a in self.cols.items():
            if len(a) < n:
                a.extend(array("d", [MISSING]) * (n - len(a)))
            out[k] = np.array(a[start:], dtype=np.float64)
        return out


def merge(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Columns of several segments as one, in log order (by time; stable)."""
    parts = [p for p in parts if p["step"].size]
    if not parts:
        return {"step": np.zeros(0, np.int64), "time": np.zeros(0)}
    if len(parts) == 1:
        return parts[0]
    names = list(dict.fromkeys(k for p in parts for k in p))
    merged = {}
    for k in names:
        dtype = np.int64 if k == "step" else np.float64
        merged[k] = np.concatenate([p[k] if k in p else np.full(p["step"].size, MISSING, dtype) for p in parts])
    order = np.argsort(merged["time"], kind="stable")
    return {k: v[order] for k, v in merged.items()}


def segment_paths(run_dir: Path) -> list[Path]:
    """The run's segment files (what readers merge), sorted by name."""
    try:
        return sorted(p for p in run_dir.iterdir() if p.suffix == ".jsonl" and p.is_file()
                      and not p.name.startswith("."))
    except OSError:
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
