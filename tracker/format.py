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
import re
import secrets
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .errors import SchemaError, StoreError, TrackerError

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
    return ev


# --- lines of a segment file -------------------------------------------------------------------

#: How many bytes readers take from a segment file at a time.
READ_CHUNK = 1 << 20


class LineChunks:
    """The complete lines of a file from ``offset``, a list per 1 MiB read.

    Memory stays flat whatever the file's size. After iterating, ``rest``
    holds a last line without its newline (a torn write, or one in
    progress), which is never yielded, and ``lines`` counts the lines yielded.

    :raises StoreError: when the file cannot be opened.
    """

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self.offset = offset
        self.rest = b""
        self.lines = 0

    def __iter__(self) -> Iterator[list[bytes]]:
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - closed below, also when the caller stops early
        except OSError as exc:
            raise StoreError(f"cannot read {self.path}: {exc.strerror}") from None
        with f:
            f.seek(self.offset)
            rest = b""
            while True:
                chunk = f.read(READ_CHUNK)
                if not chunk:
                    break
                if rest:
                    chunk = rest + chunk
                lines = chunk.split(b"\n")
                rest = lines.pop()
                self.lines += len(lines)
                yield lines
            self.rest = rest


def iter_lines(path: Path, offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """Yield ``(end_offset, line)`` for each newline-terminated line from ``offset``.

    A last line without its newline (a torn write, or one in progress) is not
    yielded; ``Segment.torn`` reports it.
    """
    pos = offset
    for lines in LineChunks(path, offset):
        for line in lines:
            pos += len(line) + 1
            yield pos, line
