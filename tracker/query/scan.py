"""Checking segments before DuckDB reads them: every line against its CRC, as the readers check it; a segment
whose damage DuckDB would not skip on its own is read from a copy of its sound lines; damage reported as the
readers report it.

Split from :mod:`tracker.query.sql`, which re-exports these names.
"""

from __future__ import annotations

import os
import warnings
import zlib
from collections.abc import Iterable
from pathlib import Path

import attrs
import orjson

from tracker.core.errors import TrackerError
from tracker.core.records import Problem
from tracker.query._core import LineChunks, LineError, parse_line, segment_finish

_CRC_TAIL = 18
_CRC_FORMAT = b',"crc":"%08x"}'
_METRICS_PREFIX = b'{"v":1,"kind":"record","schema":"metrics",'


@attrs.define
class SegmentScan:
    """What checking one segment found.

    :ivar sound: ``None`` when DuckDB may read the file itself, else the lines to read instead.
    :ivar metric_names: metric names of the segment's ``metrics`` records.
    """

    run_id: str
    path: Path
    problems: list[Problem] = attrs.field(factory=list)
    sound: list[bytes] | None = None
    metric_names: dict[str, None] = attrs.field(factory=dict)


#: Checked segments of this process: (path, size, mtime_ns) -> scan, so repeated
#: queries in one session check each unchanged segment once.
_checked: dict[tuple[str, int, int], SegmentScan] = {}
_CHECKED_MAX = 100_000


def scan_segment(run_id: str, path: Path, quiet_tail: bool) -> SegmentScan:
    """Check every line of a segment against its CRC, as the readers do.

    A torn last line is reported unless ``quiet_tail`` (its writer still runs).
    Metric names come from the writer's finish event when it has one, else
    from the ``metrics`` records themselves.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise TrackerError(f"cannot read {path}: {exc.strerror}") from None
    key = (str(path), st.st_size, st.st_mtime_ns, quiet_tail)
    hit = _checked.get(key)
    if hit is not None:
        return hit
    finish = segment_finish(path)
    names: dict[str, None] = {}
    want_names = finish is None
    if finish is not None:
        last = (finish.get("data") or {}).get("last")
        if isinstance(last, dict):
            names.update(dict.fromkeys(last))
        else:
            want_names = True
    scan = SegmentScan(run_id, path)
    crc32, tail, loads = zlib.crc32, _CRC_FORMAT, orjson.loads
    bad: list[tuple[int, bytes]] = []
    lineno = 0
    reader = LineChunks(path)
    for lines in reader:
        for line in lines:
            lineno += 1
            if line[-_CRC_TAIL:] != tail % crc32(line[:-_CRC_TAIL]):
                bad.append((lineno, line))
            elif want_names and line.startswith(_METRICS_PREFIX):
                try:
                    data = loads(line).get("data")
                except orjson.JSONDecodeError:
                    continue
                if isinstance(data, dict):
                    names.update(dict.fromkeys(data))
    copy = False
    for n, line in bad:
        try:
            parse_line(line)
        except LineError as exc:
            scan.problems.append(Problem(str(path), n, exc.kind, str(exc)))
            copy = True
    rest = reader.rest
    if rest:
        if not quiet_tail:
            scan.problems.append(Problem(str(path), reader.lines + 1, "torn",
                                         f"the last line is incomplete ({len(rest)} bytes): a write was cut off"))
        try:
            loads(rest)
            copy = True  # a whole line but its newline: DuckDB would read it, the readers do not
        except orjson.JSONDecodeError:
            pass  # DuckDB skips it like any line that is not JSON
    if copy:
        scan.sound = _sound_lines(path)
    scan.metric_names = names
    if len(_checked) > _CHECKED_MAX:
        _checked.clear()
    _checked[key] = scan
    return scan


def _sound_lines(path: Path) -> list[bytes]:
    out = []
    crc32, tail = zlib.crc32, _CRC_FORMAT
    for lines in LineChunks(path):
        for line in lines:
            if line[-_CRC_TAIL:] == tail % crc32(line[:-_CRC_TAIL]):
                out.append(line)
                continue
            try:
                parse_line(line)
            except LineError:
                continue
            out.append(line)
    return out


def report(problems: Iterable[Problem]) -> None:
    """Warn about each problem as the readers do (``tracker: <file>:<line>: <kind>: ...``)."""
    from tracker.host.bus import TrackerWarning

    for p in problems:
        warnings.warn(f"tracker: {p}", TrackerWarning, stacklevel=3)
