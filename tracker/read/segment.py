"""What a segment's two ends tell: its writer, its finish event, whether it still runs.

Listing runs reads only these few kilobytes of each segment, never its
records; a run's status is derived from its segments' ends here. A writer
is known by its host, pid and process start time (:func:`hostname`,
:func:`process_start`), which it records in its segment's first line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import StoreError
from tracker.core.format import (
    METRICS,
    RECORD,
    RUN_FINISHED,
    RUN_STARTED,
    SEGMENT_SUFFIX,
    WRITER_STARTED,
    LineError,
    decode_nonfinite,
    parse_line,
    restore_nonfinite,
)
from tracker.core.records import Problem, RunInfo, label_from_tags
from tracker.read.edits import apply_edits, read_edits
from tracker.read.liveness import hostname, pid_alive, process_start, safe_hostname  # noqa: F401 - their old home

# "stopped" (a sweep ended the trial) explains the writers it ended, which read as crashed.
_SEVERITY = {"finished": 0, "failed": 1, "crashed": 2, "stopped": 3}


def segment_paths(run_dir: Path) -> list[Path]:
    """The segment files of a run folder, sorted by name (hidden ones, still being created, left out).

    :raises StoreError: when the folder cannot be read.
    """
    try:
        return sorted(p for p in run_dir.iterdir() if p.suffix == SEGMENT_SUFFIX and p.is_file())
    except OSError as exc:
        raise StoreError(f"cannot read {run_dir}: {exc.strerror}") from None


def segment_sizes(run_dir: Path) -> dict[str, int]:
    """Each segment's size now, by file name (none when the folder cannot be read): how far a read
    that begins now reads them."""
    out = {}
    try:
        paths = segment_paths(run_dir)
    except StoreError:
        return out
    for p in paths:
        try:
            out[p.name] = p.stat().st_size
        except OSError:
            continue
    return out


@attrs.define
class Segment:
    """One writer's file, as far as its first line and its tail tell."""

    path: Path
    size: int
    mtime: float
    header: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    tail: list[dict[str, Any]] = attrs.field(factory=list)
    torn: bool = False

    @property
    def finish(self) -> dict[str, Any] | None:
        """The writer's ``run_finished`` event, if it wrote one."""
        return self.last if self.last is not None and self.last.get("kind") == RUN_FINISHED else None

    def facts(self) -> dict[str, Any]:
        """Host, pid and start time of the writer, from its first line or its id."""
        if self.header is not None and isinstance(self.header.get("data"), dict):
            return self.header["data"]
        wid = (self.last or {}).get("w") or self.path.stem
        host, _, rest = str(wid).rpartition("-")
        host, _, pid = host.rpartition("-")
        return {"host": host, "pid": int(pid) if pid.isdigit() else None, "proc_start": None}

    def alive(self, timeout: float | Callable[[], float]) -> bool:
        """Whether the writer may still append (not finished, process still there).

        :param timeout: seconds a writer on another host may stay silent, or a
            function giving them (asked only for such a writer).
        """
        if self.finish is not None:
            return False
        facts = self.facts()
        if facts.get("host") == hostname() and isinstance(facts.get("pid"), int):
            return pid_alive(facts["pid"], facts.get("proc_start"))
        if callable(timeout):
            timeout = timeout()
        return time.time() - self.mtime < timeout


#: Listing reads this much of each end of a segment first, and more only when
#: no complete line fits (a long first line, a finish event with many metrics).
HEAD_WINDOW = 4096
TAIL_WINDOW = 4096


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    parts = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _first_line(fd: int, size: int) -> bytes | None:
    """The first complete line (without its newline), read in growing windows."""
    want, data = HEAD_WINDOW, b""
    while True:
        data += _pread_all(fd, min(want, size) - len(data), len(data))
        end = data.find(b"\n")
        if end >= 0:
            return data[:end]
        if len(data) >= size:
            return None
        want *= 4  # a long first line (a large config) is read whole, however long


def read_segment(path: Path) -> Segment:
    """The first line and the last lines of a segment, parsed (bad lines skipped).

    Reads a few KiB at each end (the whole file when it is small), whatever the
    number of records, so that listing a store costs the same for short and long runs.
    """
    try:
        st = os.stat(path)
        seg = Segment(path, st.st_size, st.st_mtime)
        size = st.st_size
        if size == 0:
            return seg
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        whole = size <= HEAD_WINDOW + TAIL_WINDOW
        if whole:
            data = _pread_all(fd, size, 0)
            end = data.find(b"\n")
            first = data[:end] if end >= 0 else None
        else:
            first = _first_line(fd, size)
        if first is not None:
            try:
                ev = parse_line(first)
                if ev.get("kind") in (RUN_STARTED, WRITER_STARTED):
                    seg.header = ev
            except LineError:
                pass
        want = TAIL_WINDOW
        while True:
            start = 0 if whole else max(0, size - want)
            if not whole:
                data = _pread_all(fd, size - start, start)
            lines = data.split(b"\n")
            seg.torn = bool(lines.pop())
            if start > 0 and lines:
                lines.pop(0)  # may be the end of a line cut in the middle
            parsed = []
            for line in lines:
                try:
                    parsed.append(parse_line(line))
                except LineError:
                    continue
            if parsed or start == 0:
                break
            want *= 4
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    seg.tail = parsed
    seg.last = parsed[-1] if parsed else None
    return seg


def is_observer(seg: Segment) -> bool:
    """Whether the segment is an observer's (its first line says ``"observer"``): not a writer of the run."""
    data = (seg.header or {}).get("data")
    return isinstance(data, dict) and bool(data.get("observer"))


def run_status(writers: list[tuple[float, float, str, dict | None]]) -> tuple[str, dict | None]:
    """The run's status from its writers' (start, end, status, finish event).

    Running if any writer runs. Otherwise a writer is superseded by another
    that started after it ended (a resume); of the others the worst status
    wins: crashed, then failed, then finished. Times come from the writers'
    clocks, which may step: a writer never supersedes itself, and
    if every writer seems superseded, all of them count.
    """
    if not writers:
        return "crashed", None
    if any(w[2] == "running" for w in writers):
        return "running", None
    current = [w for w in writers if not any(o is not w and o[0] > w[1] for o in writers)] or writers
    worst = max(current, key=lambda w: _SEVERITY.get(w[2], 2))
    error = None
    if worst[2] in ("failed", "stopped") and worst[3] is not None:  # a Ctrl-C keeps its KeyboardInterrupt
        error = (worst[3].get("data") or {}).get("error")
    return worst[2], error


def _writer_figures(seg: Segment, timeout: float | Callable[[], float]) -> tuple[str, float, int, int | None,
                                                                               dict[str, Any]]:
    """One writer's status, end time, record count, largest step and last metrics, from its two ends.

    A finished writer's finish event holds them all; of a running or crashed
    one they come from its last lines (its last ``seq`` counts its records).
    """
    fin = seg.finish
    if fin is not None:
        d = fin.get("data") or {}
        return (d.get("status", "finished"), fin["time"], int(d.get("records") or 0), d.get("max_step"),
                decode_nonfinite(d.get("last") or {}))
    records = [e for e in seg.tail if e.get("kind") == RECORD]
    count = len(records) if seg.last is None else max(0, int(seg.last.get("seq", 1)) - 1)
    steps = [e["step"] for e in records if isinstance(e.get("step"), int)]
    metrics: dict[str, Any] = {}
    for e in records:
        if e.get("schema") == METRICS:
            metrics.update(decode_nonfinite(e.get("data") or {}))
    return ("running" if seg.alive(timeout) else "crashed", (seg.last or {}).get("time") or seg.mtime, count,
            max(steps) if steps else None, metrics)


def read_run_info(path: Path, run_id: str, segs: list[Segment], timeout: float | Callable[[], float],
                  warn: Callable[[Problem], None]) -> RunInfo:
    """A run's info from its segments' two ends and its edits: status, times, counts, labels.

    :param timeout: as for :meth:`Segment.alive`.
    :param warn: called with each damaged line of the run's edits.
    """
    start = next((s.header for s in segs if s.header and s.header["kind"] == RUN_STARTED), None)
    meta = start["data"] if start else {}
    writers = []
    records = 0
    last_step = None
    last_metrics: dict[str, Any] = {}
    system: list[dict[str, Any]] = []
    for s in segs:
        if s.header is None and s.last is None:
            continue
        if is_observer(s):
            # An observer (the alert watcher) adds records to a run that is not its own:
            # they count as records, never as a writer's status, start or end.
            records += max(0, int((s.last or {}).get("seq", 1)) - 1)
            continue
        status, end, count, step, metrics = _writer_figures(s, timeout)
        records += count
        if step is not None and (last_step is None or step > last_step):
            last_step = step
        last_metrics.update(metrics)
        if s.finish is not None and (s.finish.get("data") or {}).get("system"):
            system.append(s.finish["data"]["system"])
        writers.append(((s.header or s.last or {}).get("time") or s.mtime, end, status, s.finish))
    status, error = run_status(writers)
    # Edits (tag, rename, note, config, summary) live in segments of their own, apart from the
    # writers': they change the labels, never the status or the counts.
    config = restore_nonfinite(meta.get("config") or {}, meta.get("config_nonfinite"))
    notes = meta.get("notes") if isinstance(meta.get("notes"), str) else None
    edited = apply_edits(meta.get("name"), meta.get("tags") or [], notes, config, read_edits(path, warn))
    return RunInfo(
        id=run_id, name=edited.name, project=meta.get("project"), status=status,
        created_at=start["time"] if start else (min(w[0] for w in writers) if writers else None),
        ended_at=max(w[1] for w in writers) if writers else None, config=edited.config,
        tags=edited.tags, error=error, env=meta.get("env") or {}, writers=len(writers),
        records=records, last_step=last_step, last_metrics=last_metrics, notes=edited.notes,
        summary=edited.summary, system=_system_totals(system),
        group=_label(meta, "group", edited.tags), job_type=_label(meta, "job_type", edited.tags))


def _label(meta: dict[str, Any], field: str, tags: list[str]) -> str | None:
    """The start event's ``group`` (or ``job_type``); else, for a run of 0.4, its ``group:<x>`` tag."""
    value = meta.get(field)
    return value if isinstance(value, str) else label_from_tags(tags, field)


def _system_totals(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's system figures from its writers' finish events (``Sampler.totals`` of each).

    Peaks take the largest, means are weighted by samples, energy adds up.
    """
    parts = [p for p in parts if isinstance(p, dict) and p]
    if len(parts) <= 1:
        return dict(parts[0]) if parts else {}
    out: dict[str, Any] = {}
    for key in {k for p in parts for k in p}:
        vals = [(p[key], p.get("samples") or 1) for p in parts if isinstance(p.get(key), (int, float))]
        if not vals:
            continue
        if key.endswith("_peak") or key.endswith("_peak_bytes") or key == "gpus":
            out[key] = max(v for v, _ in vals)
        elif key.endswith("_mean"):
            out[key] = sum(v * w for v, w in vals) / sum(w for _, w in vals)
        else:  # samples, gpu_energy_kwh
            out[key] = sum(v for v, _ in vals)
    return out


#: The name the capture package uses.
combine_totals = _system_totals
