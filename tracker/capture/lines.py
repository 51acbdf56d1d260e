"""Console text as ``console`` records: lines cut from what was written, and store lines put together in batches.

:class:`Line` is one stream's unfinished line: it takes what was written, hands
on each line it completes, collapses ``\\r`` rewrites (a progress bar keeps its
last state) and splits a line past 64 KiB. :func:`checked` makes a batch's
text storable (U+FFFD for lone surrogates). :func:`write_batch` appends a
batch to a run's segment with one ``write(2)``: consecutive lines of a stream
share a record (joined by ``\\n``, at most 64 KiB of text), put between the
constant parts of the writer's record template, escaped, numbered and
checksummed by ``_console.lines`` (C, ``tracker/capture/_console.c``) or
:func:`lines_py` (the same bytes in Python). ``_console.feed`` does the cutting
and the putting together of the common case in one C call
(:meth:`tracker.capture.console.Capture`'s fast path).
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import orjson


def _native() -> ModuleType | None:
    if os.environ.get("TRACKER_PURE_PYTHON"):
        return None
    try:
        from tracker.capture import _console
    except ImportError:  # built without a C compiler: the same records from Python
        return None
    return _console


#: ``tracker.capture._console`` (the tee, ``lines``, ``feed`` in C), or ``None``.
native = _native()

#: The most text one record holds, in UTF-8 bytes (the ``console`` schema's limit).
MAX_TEXT_BYTES = 64 * 1024
#: An unfinished line is written as a ``partial`` record once it is this old, in seconds.
PARTIAL_AFTER = 0.4
STDOUT, STDERR = 0, 1
NAMES = ("stdout", "stderr")
_SURROGATES = re.compile("[\ud800-\udfff]")
_LINE_BREAKS = re.compile("(\r|\n)")
#: A note in the run is text of this form, written as a stderr line (it is what a user should see first).
NOTE = "tracker: {}"


def lines_py(pre: bytes, crc_pre: int, seq: int, texts: list[str], mids: tuple[bytes, bytes],
             tails: tuple[bytes, bytes], kinds: bytes) -> bytes:
    """``_console.lines`` in Python: the texts as store lines numbered after ``seq``, each with its CRC-32.

    Consecutive lines of one stream share a record, joined by ``\\n``, up to :data:`MAX_TEXT_BYTES`
    of text in all; a partial line is the last of its record. Each text is at most that long already
    (:func:`checked`); the records made are ``result.count(b"\\n")``.

    :param pre: the line up to its sequence number (``{"v":1,...,"seq":``); ``crc_pre`` its CRC-32.
    :param mids: what goes between the sequence number and the text, for stdout and for stderr.
    :param tails: what closes the record after the text, for a whole line and for a partial one.
    :param kinds: one byte per text: bit 0 stderr, bit 1 partial.
    """
    out = []
    dumps = orjson.dumps
    crc32 = zlib.crc32

    def close(group: list[str], stream: int, partial: int) -> None:
        nonlocal seq
        seq += 1
        body = b"%d%b%b%b" % (seq, mids[stream], dumps("\n".join(group))[1:-1], tails[partial])
        out.append(b'%b%b,"crc":"%08x"}\n' % (pre, body, crc32(body, crc_pre)))

    group: list[str] = []
    stream = size = 0
    for i, text in enumerate(texts):
        k = kinds[i]
        n = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if group and (stream != k & 1 or size + 1 + n > MAX_TEXT_BYTES):
            close(group, stream, 0)
            group = []
        if group:
            size += 1 + n
        else:
            stream, size = k & 1, n
        group.append(text)
        if k & 2:
            close(group, stream, 1)
            group = []
    if group:
        close(group, stream, 0)
    return b"".join(out)


#: ``lines(pre, crc_of_pre, last_seq, texts, mids, tails, kinds) -> bytes``: C when built, else Python.
lines: Callable[..., bytes] = native.lines if native is not None else lines_py


class Batch:
    """Records about to be written: their texts and one kind byte each (bit 0 stderr, bit 1 partial)."""

    __slots__ = ("texts", "kinds")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.kinds = bytearray()

    def __len__(self) -> int:
        return len(self.texts)

    def add(self, stream: int, text: str, partial: bool = False) -> None:
        self.texts.append(text)
        self.kinds.append(stream | (2 if partial else 0))

    def records(self) -> list[tuple[int, str, bool]]:
        """``(stream, text, partial)`` per record, in order."""
        return [(k & 1, t, bool(k & 2)) for t, k in zip(self.texts, self.kinds, strict=True)]


class Line:
    """One stream's unfinished line: the text so far, and whether a ``\\r`` asks the next text to replace it."""

    __slots__ = ("text", "cr", "since", "shown")

    def __init__(self) -> None:
        self.text = ""
        self.cr = False
        self.since = 0.0     # when the unfinished line began, or its last partial record was written
        self.shown = False   # whether its present state is written already (as a partial record)

    def feed(self, chunk: str, now: float, out: Batch, stream: int) -> None:
        """Take ``chunk``; each line it completes goes to ``out``."""
        if not chunk:
            return
        if not self.text and not self.cr:
            self.since = now
        self.shown = False
        if "\r" not in chunk and not self.cr:
            parts = chunk.split("\n")
            if len(parts) > 1:
                out.texts.append(self.text + parts[0])
                out.texts.extend(parts[1:-1])
                out.kinds.extend(_KIND[stream] * (len(parts) - 1))
                self.text = parts[-1]
                self.since = now
            else:
                self.text += chunk
        else:
            for piece in _LINE_BREAKS.split(chunk):
                if piece == "\n":
                    out.add(stream, self.text)
                    self.text = ""
                    self.cr = False
                    self.since = now
                elif piece == "\r":
                    self.cr = True
                elif piece:
                    if self.cr:
                        self.text = piece  # a rewritten line (a progress bar) keeps its last state
                        self.cr = False
                    else:
                        self.text += piece
        if len(self.text) > MAX_TEXT_BYTES // 4:
            pieces = split_long(self.text)
            for p in pieces[:-1]:  # a line past 64 KiB: its first pieces are records of their own
                out.add(stream, p)
            self.text = pieces[-1]

    def due(self, now: float, force: bool) -> str | None:
        """The unfinished line's state to write as a partial record now, if it is due (or ``force``)."""
        if self.text and not self.shown and (force or now - self.since >= PARTIAL_AFTER):
            self.shown = True
            self.since = now
            return self.text
        return None


_KIND = (b"\x00", b"\x01")


def split_long(text: str) -> list[str]:
    """``text`` in pieces of at most :data:`MAX_TEXT_BYTES` bytes of UTF-8, cut between characters."""
    if len(text) <= MAX_TEXT_BYTES // 4:
        return [text]
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_TEXT_BYTES:
        return [text]
    pieces = []
    start = 0
    while start < len(data):
        end = min(start + MAX_TEXT_BYTES, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end -= 1  # not inside a character
        pieces.append(data[start:end].decode("utf-8", "surrogatepass"))
        start = end
    return pieces


def checked(batch: Batch) -> tuple[Batch, set[int]]:
    """``batch`` with text UTF-8 can hold (U+FFFD for lone surrogates) and at most 64 KiB per record.

    :returns: the batch (a new one when something changed) and the streams whose text was replaced.
    """
    texts = batch.texts
    bad: set[int] = set()
    if "".join(texts).isascii() and max(map(len, texts), default=0) <= MAX_TEXT_BYTES // 4:
        return batch, bad
    out = Batch()
    for text, kind in zip(texts, batch.kinds, strict=True):
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                text = _SURROGATES.sub("\ufffd", text)
                bad.add(kind & 1)
        pieces = split_long(text)
        for i, p in enumerate(pieces):
            # Only the last piece of a partial line is partial: the others are whole records.
            out.add(kind & 1, p, bool(kind & 2) and i == len(pieces) - 1)
    return out, bad


def text_bytes(texts: list[str]) -> int:
    """The UTF-8 size of ``texts`` together."""
    joined = "".join(texts)
    return len(joined) if joined.isascii() else len(joined.encode("utf-8"))


def write_batch(run: Any, batch: Batch, now: float) -> None:
    """Append ``console`` records to the run at its latest step, never advancing the automatic step.

    With the run's route for ``console`` (no plugin handler wants these records) the batch is one
    write; otherwise each record takes the run's side path (the bus, or a forked child's own segment).
    """
    att = run._att
    w = att.writer
    route = att.route("console") if not w.stale else None
    if route is None or not w.direct:
        for stream, text, partial in batch.records():
            top = w.max_step
            run._log_side("console", {"stream": NAMES[stream], "text": text, "partial": partial},
                          0 if top is None else top, True)
        return
    texts = batch.texts
    with w.lock:
        if w.closed:
            raise RuntimeError("the run's writer is closed")
        seq, count, top = w.counts
        latest = w.max_step
        pre = line_start(route, 0 if latest is None else latest, now)
        blob = lines(pre, zlib.crc32(pre), seq, texts, MIDS, TAILS, bytes(batch.kinds))
        records = blob.count(b"\n")  # several lines of a stream share a record
        w.commit(blob, (seq + records, count + records, top), None)


MIDS = (b',"data":{"stream":"stdout","text":"', b',"data":{"stream":"stderr","text":"')
TAILS = (b'"}', b'","partial":true}')


def line_start(route: Any, step: int, now: float) -> bytes:
    """The start of this batch's lines, up to the sequence number, from the route's record template."""
    blank = orjson.dumps(dict(route.template, step=step, time=now, seq=0, data=None))
    head, rest = blank.split(b'"seq":0', 1)
    if rest != b',"data":null}':
        raise RuntimeError("unexpected record template")
    return head + b'"seq":'


__all__ = ["MAX_TEXT_BYTES", "MIDS", "NAMES", "NOTE", "PARTIAL_AFTER", "STDERR", "STDOUT", "TAILS", "Batch", "Line",
           "checked", "line_start", "lines", "lines_py", "native", "split_long", "text_bytes", "write_batch"]
