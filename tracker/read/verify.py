"""Integrity scan of a store: every damaged line, gap and duplicate, with file and line.

For each segment it checks, line by line and in constant memory:

- ``empty``: a segment with no bytes at all;
- ``torn``: a last line without its newline (a write cut off), unless the
  segment's writer is still running and may be writing it;
- ``corrupt``: a line that is not an event of this format, or that names
  another writer than its segment;
- ``checksum``: a line whose bytes changed after it was written;
- ``gap`` and ``duplicate``: the writer's sequence numbers must run 1, 2, 3...
  without holes or repeats (lines already reported as corrupt are not counted
  twice), and a writer's finish event must count the records its segment holds;
- ``no_start``: a segment that does not begin with ``run_started`` or
  ``writer_started``, or a run folder in which no segment begins with
  ``run_started``.

Nothing is ever changed: the scan only reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs

from tracker.core.errors import StoreError
from tracker.core.format import (
    FORMAT_VERSION,
    RECORD,
    RUN_FINISHED,
    RUN_ID_RE,
    RUN_STARTED,
    WRITER_STARTED,
    LineError,
    iter_lines,
    parse_line,
)
from tracker.core.records import Problem
from tracker.read.edits import EDIT, edit_paths, editor_alive
from tracker.read.segment import read_segment, segment_paths

#: How many bytes are scanned between two calls of the progress callback.
PROGRESS_STEP = 1 << 20


@attrs.define
class VerifyReport:
    """What a scan found: counts and every problem, in file and line order."""

    runs: int = 0
    segments: int = 0
    events: int = 0
    records: int = 0
    bytes: int = 0
    problems: list[Problem] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        """Whether no problem was found."""
        return not self.problems


def scan_segment(path: Path, report: VerifyReport, *, live: bool = False,
                 progress: Callable[[int], None] | None = None, edits: bool = False) -> dict | None:
    """Check one segment, adding its problems and counts to ``report``.

    :param live: the segment's writer may still be writing (its torn tail is not reported).
    :param edits: an edit segment (``edits-*.jsonl``): only ``edit`` events, no start event.
    :param progress: called with the number of bytes scanned since its last call.
    :returns: the segment's first event when it is a ``run_started`` or ``writer_started`` one.
    """
    where = str(path)
    size = os.path.getsize(path)
    report.segments += 1
    report.bytes += size
    if size == 0:
        if not live:
            report.problems.append(Problem(where, None, "empty", "the segment has no lines"))
        return None
    header = None
    writer = path.stem
    prev_seq, prev_line = 0, 0
    lost = 0  # corrupt lines since the last good one: a gap they explain is not reported again
    records = 0
    finish: tuple[int, dict] | None = None
    lineno = end = reported = 0
    for end, line in iter_lines(path):
        lineno += 1
        if progress is not None and end - reported >= PROGRESS_STEP:
            progress(end - reported)
            reported = end
        try:
            ev = parse_line(line)
        except LineError as exc:
            report.problems.append(Problem(where, lineno, exc.kind, str(exc)))
            lost += 1
            continue
        report.events += 1
        kind, seq, v, w = ev.get("kind"), ev.get("seq"), ev.get("v"), ev.get("w")
        if type(v) is not int or v > FORMAT_VERSION:
            report.problems.append(Problem(where, lineno, "corrupt",
                                           f"format version {v!r}: this reader knows version {FORMAT_VERSION}"))
        if w != writer:
            report.problems.append(Problem(where, lineno, "corrupt",
                                           f"written by writer {w!r}, found in the segment of {writer!r}"))
        if edits:
            # A writer's event has no place here; a kind of a newer version is left alone, as elsewhere.
            if kind in (RUN_STARTED, WRITER_STARTED, RECORD, RUN_FINISHED):
                report.problems.append(Problem(where, lineno, "corrupt", f"a {kind!r} event in an edit segment, "
                                                                         f"expected only {EDIT} events"))
        elif lineno == 1:
            if kind in (RUN_STARTED, WRITER_STARTED):
                header = ev
            else:
                report.problems.append(Problem(where, 1, "no_start", f"the segment begins with a {kind!r} event, "
                                                                     "expected run_started or writer_started"))
        if kind == RECORD:
            records += 1
            report.records += 1
        elif kind == RUN_FINISHED:
            finish = (lineno, ev)
        if type(seq) is not int:
            report.problems.append(Problem(where, lineno, "corrupt", f"sequence number {seq!r} is not an int"))
            continue
        if seq == prev_seq:
            report.problems.append(Problem(where, lineno, "duplicate", f"seq {seq} repeats line {prev_line}"))
        elif seq < prev_seq:
            report.problems.append(Problem(where, lineno, "duplicate",
                                           f"seq {seq} after seq {prev_seq} (line {prev_line}): "
                                           "a repeated or out-of-order event"))
        elif seq > prev_seq + 1 + lost:
            missing = seq - prev_seq - 1 - lost
            since = f"seq {prev_seq} (line {prev_line})" if prev_line else "the start"
            events = f"{missing} event{'s' if missing != 1 else ''}"
            report.problems.append(Problem(where, lineno, "gap", f"seq jumps from {since} to {seq}: {events} missing"))
        if seq > prev_seq:
            prev_seq, prev_line = seq, lineno
        lost = 0
    if progress is not None and size > reported:
        progress(size - reported)
    if size > end and not live:
        report.problems.append(Problem(where, lineno + 1, "torn",
                                       f"the last line is incomplete ({size - end} bytes): a write was cut off"))
    if finish is not None:
        counted = (finish[1].get("data") or {}).get("records")
        if isinstance(counted, int) and counted != records:
            report.problems.append(Problem(where, finish[0], "gap", f"the finish event counts {counted} records, "
                                                                    f"the segment holds {records}"))
    return header


def verify_run(run_dir: Path, report: VerifyReport, *, timeout: float = 120.0,
               progress: Callable[[int], None] | None = None) -> None:
    """Check every segment of one run folder and that the run has a start event."""
    report.runs += 1
    started = False
    paths = segment_paths(run_dir)
    for path in paths:
        live = read_segment(path).alive(timeout)
        header = scan_segment(path, report, live=live, progress=progress)
        started = started or (header is not None and header.get("kind") == RUN_STARTED)
    for path in edit_paths(run_dir):
        scan_segment(path, report, live=editor_alive(path.stem), progress=progress, edits=True)
    if not started:
        what = "no segment" if not paths else "no segment begins with run_started"
        report.problems.append(Problem(str(run_dir), None, "no_start", f"{what}: the run's start event is missing"))


def verify_store(store: Path, run_ids: Iterable[str] | None = None, *, timeout: float = 120.0,
                 progress: Callable[[int], None] | None = None) -> VerifyReport:
    """Scan the given runs (default: every run) of the store at ``store``."""
    report = VerifyReport()
    runs_dir = Path(store) / "runs"
    if run_ids is None:
        try:
            run_ids = sorted(e.name for e in os.scandir(runs_dir) if e.is_dir() and RUN_ID_RE.match(e.name))
        except FileNotFoundError:
            run_ids = []
    for rid in run_ids:
        verify_run(runs_dir / rid, report, timeout=timeout, progress=progress)
    return report


def store_size(store: Path, run_ids: Iterable[str]) -> int:
    """The total size in bytes of the segments of the given runs (for a progress bar)."""
    total = 0
    for rid in run_ids:
        run_dir = Path(store) / "runs" / rid
        try:
            total += sum(p.stat().st_size for p in segment_paths(run_dir))
        except (OSError, StoreError):
            continue
    return total
