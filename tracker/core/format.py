"""The store's on-disk format, in one place: folder layout, event kinds, the line.

Layout: ``<store>/runs/<run_id>/<writer_id>.jsonl``, one segment per writing
process. A line is one event, strict JSON (RFC 8259) in a fixed key order,
ending with a CRC-32 of the bytes before its ``,"crc"`` key (see docs/format.md)::

    {"v":1,"kind":"record","schema":"metrics","step":3,"time":1.7e9,
     "w":"host-123-a1b2c3","seq":5,"data":{"loss":0.4},"crc":"1c291ca3"}

NaN, +Inf and -Inf are written as the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` where a number stands. Everything that writes, reads, checks
or scans lines (the writer, the readers, ``verify``, ``tail``, ``export``)
takes the format from here.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from tracker.core.errors import SchemaError, StoreError, TrackerError

#: The format version every line carries as ``v``.
FORMAT_VERSION = 1

# --- event kinds -------------------------------------------------------------------------------

#: The first event of a run, in the segment of the process that created it.
RUN_STARTED = "run_started"
#: The first event of every other segment of a run (a resume, another rank, a forked child).
WRITER_STARTED = "writer_started"
#: One logged record of a schema.
RECORD = "record"
#: The last event of a writer's segment: status, error, counts.
RUN_FINISHED = "run_finished"
#: Every kind, in the order they occur in a segment.
EVENT_KINDS = (RUN_STARTED, WRITER_STARTED, RECORD, RUN_FINISHED)

# --- layout ------------------------------------------------------------------------------------

RUN_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
#: A segment file's suffix; a hidden segment (being created) starts with a dot and ends otherwise.
SEGMENT_SUFFIX = ".jsonl"


def check_run_id(run_id: Any) -> str:
    """Return ``run_id`` if it is a valid folder name, else raise :class:`TrackerError`."""
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        shown = repr(run_id) if len(repr(run_id)) <= 80 else repr(run_id)[:77] + "..."
        raise TrackerError(f"invalid run id {shown}: expected 1 to 64 characters from A-Z a-z 0-9 _ -")
    return run_id


def new_run_id() -> str:
    """A fresh random run id: 12 lowercase hex digits."""
    return secrets.token_hex(6)


# --- non-finite numbers ------------------------------------------------------------------------

#: The strings that stand for non-finite floats, and the floats they stand for.
SPECIAL_IN: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
#: Bytes found in a line only if it may hold a non-finite number (``"NaN"``, ``"Infinity"``, ``"-Infinity"``).
NONFINITE_MARKS = (b'"NaN"', b'Infinity"')


def _special(v: float) -> str:
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")


def encode_nonfinite(obj: Any) -> Any:
    """A copy of ``obj`` with NaN and infinities replaced by their store strings."""
    t = type(obj)
    if t is float:
        return obj if obj - obj == 0.0 else _special(obj)
    if t is dict:
        return {k: encode_nonfinite(v) for k, v in obj.items()}
    if t is list or t is tuple:
        return [encode_nonfinite(v) for v in obj]
    return obj


def decode_nonfinite(obj: Any) -> Any:
    """Undo :func:`encode_nonfinite` wherever a special string stands."""
    t = type(obj)
    if t is str:
        return SPECIAL_IN.get(obj, obj)
    if t is dict:
        return {k: decode_nonfinite(v) for k, v in obj.items()}
    if t is list:
        return [decode_nonfinite(v) for v in obj]
    return obj


def nonfinite_paths(obj: Any) -> list[list[str | int]]:
    """The paths (keys and list indices) of the NaN and infinite floats in ``obj``.

    Stored beside free-form data whose strings must stay strings (a run's
    config), so that readers restore exactly those as floats.
    """
    out: list[list[str | int]] = []

    def walk(v: Any, path: list[str | int]) -> None:
        t = type(v)
        if t is float:
            if v - v != 0.0:
                out.append(path)
        elif t is dict:
            for k, x in v.items():
                walk(x, [*path, k])
        elif t is list or t is tuple:
            for i, x in enumerate(v):
                walk(x, [*path, i])

    walk(obj, [])
    return out


def restore_nonfinite(obj: Any, paths: Any) -> Any:
    """``obj`` with the store strings at ``paths`` (see :func:`nonfinite_paths`) back as floats.

    Paths that do not lead to such a string (a damaged or foreign line) are ignored.
    """
    if not paths or type(paths) is not list:
        return obj
    for path in paths:
        if type(path) is not list or not path:
            continue
        parent = obj
        for key in path[:-1]:
            parent = _child(parent, key)
        last = path[-1]
        value = _child(parent, last)
        if type(value) is str and value in SPECIAL_IN:
            parent[last] = SPECIAL_IN[value]
    return obj


def _child(container: Any, key: Any) -> Any:
    if type(container) is dict and type(key) is str:
        return container.get(key)
    if type(container) is list and type(key) is int and 0 <= key < len(container):
        return container[key]
    return None


# --- encoding ----------------------------------------------------------------------------------

#: orjson options of the ``run.log`` fast path: ints beyond ±(2**53 - 1) and
#: subclasses of str, int, dict and list raise, so that the caller falls back
#: to the full check (which accepts exactly ±2**53 and names any problem).
STRICT = orjson.OPT_STRICT_INTEGER | orjson.OPT_PASSTHROUGH_SUBCLASS
_CRC_MARK = b',"crc":"'
#: The CRC tail of a line: ``,"crc":"xxxxxxxx"}`` (8 hex digits of the CRC-32 of what precedes it).
CRC_TAIL = b',"crc":"%08x"}'
#: The length of :data:`CRC_TAIL` once formatted.
CRC_TAIL_LEN = len(b',"crc":"00000000"}')


def event(kind: str, schema: str | None, step: int | None, time: float, writer: str, seq: int,
          data: Any) -> dict[str, Any]:
    """An event as a dict in the line's key order."""
    return {"v": FORMAT_VERSION, "kind": kind, "schema": schema, "step": step, "time": time, "w": writer,
            "seq": seq, "data": data}


def record_template(schema: str, writer: str) -> dict[str, Any]:
    """The event dict a writer fills in (step, time, seq, data) for each record of ``schema``.

    Encoded with one ``orjson.dumps``, a filled-in template gives the same
    bytes as :func:`encode_line` of the same event.
    """
    return event(RECORD, schema, 0, 0.0, writer, 0, None)


def encode_line(env: dict[str, Any]) -> bytes:
    """One event as a store line, checksum and newline included.

    :raises SchemaError: when the data cannot be encoded (e.g. lone surrogates).
    """
    try:
        body = orjson.dumps(env)
        # orjson writes NaN and infinities as null: re-encode those lines only.
        if b"null" in body:
            env = dict(env, data=encode_nonfinite(env["data"]))
            body = orjson.dumps(env)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise SchemaError(env.get("schema") or env.get("kind", "?"),
                          [("(record)", f"expected data encodable as JSON, given a value that is not "
                                        f"({exc})")]) from None
    return with_crc(body[:-1])


def with_crc(head: bytes) -> bytes:
    """The line of an event encoded without its closing brace: ``head``, CRC tail, newline."""
    return b'%b,"crc":"%08x"}\n' % (head, zlib.crc32(head))


# --- byte prefixes for scanners ----------------------------------------------------------------

#: What precedes a record's schema name in a line.
RECORD_SCHEMA_MARK = b'"kind":"record","schema":"'


def schema_mark(schema: str) -> bytes:
    """Bytes found in every line of a record of ``schema`` (a fast byte scan for counting)."""
    return RECORD_SCHEMA_MARK + schema.encode() + b'",'


def record_head(schema: str) -> bytes:
    """How every record line of ``schema`` starts, up to its step's digits."""
    return orjson.dumps({"v": FORMAT_VERSION, "kind": RECORD, "schema": schema})[:-1] + b',"step":'


#: How every ``metrics`` record line starts (the columnar reader's fast loop takes such lines).
METRICS = "metrics"
METRICS_HEAD = record_head(METRICS)

# --- parsing -----------------------------------------------------------------------------------


class LineError(Exception):
    """A stored line that cannot be used; ``kind`` is ``checksum`` or ``corrupt``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def crc_ok(line: bytes) -> bool:
    """Whether ``line`` (without its newline) ends with the CRC tail its bytes call for."""
    return line[-CRC_TAIL_LEN:] == CRC_TAIL % zlib.crc32(line[:-CRC_TAIL_LEN])


def parse_line(line: bytes) -> dict[str, Any]:
    """Check a line's checksum and parse it (without the trailing newline).

    :raises LineError: on a checksum mismatch or a line that is not an event.
    """
    if line[-CRC_TAIL_LEN:-10] != _CRC_MARK or line[-2:] != b'"}':
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            raise LineError("corrupt", "not valid JSON") from None
        raise LineError("corrupt", "valid JSON but no checksum at its end")
    try:
        crc = int(line[-10:-2], 16)
    except ValueError:
        raise LineError("corrupt", "malformed checksum") from None
    if zlib.crc32(memoryview(line)[:-CRC_TAIL_LEN]) != crc:
        raise LineError("checksum", "checksum mismatch: the line was changed after it was written")
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise LineError("corrupt", f"not valid JSON ({exc})") from None
    if type(ev) is not dict or "kind" not in ev:
        raise LineError("corrupt", "not an event object")
    problem = shape_problem(ev)
    if problem is not None:
        raise LineError("corrupt", problem)
    return ev


_NUMBER = (int, float)
#: Steps are ints within ±2**53, so that every JSON reader reads them exactly.
MAX_STEP = 2**53
#: The types of the data fields readers use, per lifecycle kind (each may be absent).
_LIFECYCLE_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    RUN_STARTED: {"name": (str, type(None)), "project": (str, type(None)), "config": (dict,), "tags": (list,),
                  "config_nonfinite": (list,),
                  "env": (dict,), "host": (str, type(None)), "pid": (int, type(None)),
                  "proc_start": (str, type(None))},
    RUN_FINISHED: {"status": (str,), "records": (int,), "max_step": (int, type(None)), "last": (dict, type(None)),
                   "error": (dict, type(None))},
}
_LIFECYCLE_FIELDS[WRITER_STARTED] = _LIFECYCLE_FIELDS[RUN_STARTED]


def _what(value: Any) -> str:
    text = orjson.dumps(value).decode() if value is not None else "null"
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def shape_problem(ev: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a parsed event, or ``None`` when it is sound.

    A line can be sound JSON with a correct checksum and still not be an
    event of this format (another tool's bug, a hand edit whose checksum was
    recomputed); readers report it as corrupt instead of failing on it.
    Checked: the types of ``v``, ``kind``, ``w``, ``seq``,
    ``time`` (a number), ``data`` (an object); a record's ``schema`` (str)
    and ``step`` (int); a ``metrics`` record's values (numbers, or the
    strings of non-finite ones); the data fields readers use of lifecycle
    events. Unknown kinds pass, so that newer writers' events are skipped,
    not reported.
    """
    for key, types, expected in (("v", (int,), "an int"), ("kind", (str,), "a str"), ("w", (str,), "a str"),
                                 ("seq", (int,), "an int"), ("time", _NUMBER, "a number (seconds since the epoch)"),
                                 ("data", (dict,), "an object")):
        value = ev.get(key)
        if type(value) not in types:
            given = "missing" if key not in ev else f"given {_what(value)}"
            return f"{key}: expected {expected}, {given}"
    kind = ev["kind"]
    data = ev["data"]
    if kind == RECORD:
        schema, step = ev.get("schema"), ev.get("step")
        if type(schema) is not str:
            return f"schema: expected a str for a record, given {_what(schema)}"
        if type(step) is not int or not -MAX_STEP <= step <= MAX_STEP:
            given = "missing" if "step" not in ev else f"given {_what(step)}"
            return f"step: expected an int within ±2**53 for a record, {given}"
        if schema == METRICS:
            for name, value in data.items():
                t = type(value)
                if t is not float and t is not int and t is not bool and (t is not str or value not in SPECIAL_IN):
                    return f"metric {name!r}: expected a number, given {_what(value)}"
        return None
    fields = _LIFECYCLE_FIELDS.get(kind)
    if fields is not None:
        for key, types in fields.items():
            if key in data and type(data[key]) not in types:
                return f"{kind} {key}: expected {' or '.join(t.__name__ for t in types)}, given {_what(data[key])}"
        tags = data.get("tags")
        if tags is not None and not all(type(t) is str for t in tags):
            return f"{kind} tags: expected a list of str, given {_what(tags)}"
    return None


# --- lines of a segment file -------------------------------------------------------------------

#: How many bytes readers take from a segment file at a time.
READ_CHUNK = 1 << 20
#: What a merge of a run's segments may buffer in all, and at least per segment (see :func:`merge_chunk`).
MERGE_BUDGET = 64 << 20
MIN_CHUNK = 64 << 10


def merge_chunk(segments: int) -> int:
    """The read size per segment for a merge of ``segments`` segments.

    A merge holds one chunk of each segment at a time: 1 MiB each for a few
    segments, less for many, so that memory stays bounded (64 MiB, or 64 KiB
    per segment beyond a thousand) whatever the number of segments.
    """
    return max(MIN_CHUNK, min(READ_CHUNK, MERGE_BUDGET // max(1, segments)))


class LineChunks:
    """The complete lines of a file from ``offset``, a list per chunk read (1 MiB by default).

    Memory stays flat whatever the file's size. The file is open only while
    a chunk is read, and reopened at the next offset for the next chunk, so
    a merge of any number of segments holds at most one file open at a time
    whatever the open-file limit. After iterating, ``rest`` holds
    a last line without its newline (a torn write, or one in progress),
    which is never yielded, and ``lines`` counts the lines yielded.

    Reading is bounded: it stops at ``end``, by default the file's size when
    iteration begins, so a file that a writer appends to faster than it is
    read is read up to where it was (the rest on the next look), never chased.
    ``end`` (after iterating) is where reading stopped looking.

    :raises StoreError: when the file cannot be opened or read.
    """

    def __init__(self, path: Path, offset: int = 0, chunk: int = READ_CHUNK, end: int | None = None) -> None:
        self.path = path
        self.offset = offset
        self.chunk = chunk
        self.end = end
        self.rest = b""
        self.lines = 0

    def __iter__(self) -> Iterator[list[bytes]]:
        pos, size, rest = self.offset, self.chunk, b""
        end = self.end
        while True:
            try:
                with open(self.path, "rb") as f:
                    if end is None:
                        end = self.end = os.fstat(f.fileno()).st_size
                    want = min(size, end - pos)
                    if want <= 0:
                        break
                    f.seek(pos)
                    data = f.read(want)
            except OSError as exc:
                raise StoreError(f"cannot read {self.path}: {exc.strerror or exc}") from None
            if not data:
                break
            pos += len(data)
            at_end = len(data) < size or pos >= end  # the end of the file as it is now, or of the bound
            if rest:
                data = rest + data
            lines = data.split(b"\n")
            rest = lines.pop()
            if lines:
                self.lines += len(lines)
                size = self.chunk
                yield lines
            else:
                size *= 2  # inside a line longer than a chunk: read more at once, copying it O(1) times
            if at_end:
                break
        self.rest = rest


def iter_lines(path: Path, offset: int = 0, chunk: int = READ_CHUNK,
               end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(end_offset, line)`` for each newline-terminated line from ``offset``.

    A last line without its newline (a torn write, or one in progress) is not
    yielded; ``Segment.torn`` reports it. Bounded as :class:`LineChunks` is: up to
    ``end``, by default the file's size when iteration begins.
    """
    pos = offset
    for lines in LineChunks(path, offset, chunk, end):
        for line in lines:
            pos += len(line) + 1
            yield pos, line
