"""The console: what a run's process writes to stdout and stderr, kept as ``console`` records.

One :class:`Capture` per process, shared by every run that captures (each run
is a :class:`Sink` of it, with its own byte cap). Two ways in:

- ``"wrap"`` (the default): the ``write`` of the objects found in
  ``sys.stdout`` and ``sys.stderr`` is wrapped on the object itself (its type,
  identity and ``isatty()`` untouched): the original ``write`` runs first and
  the terminal gets exactly what it got before, then the text is appended to
  a list. That is all a ``print()`` pays; nothing is parsed on the caller's
  thread.
- ``"fd"``: file descriptors 1 and 2 are pointed at a pipe (a pseudo-terminal
  when the descriptor was a terminal, so ``isatty()`` and colours hold in
  child processes too), and a reader thread writes every byte on to the
  original descriptor before decoding it for the run.

A flusher thread takes what was written every 0.1 s (at once when much is
waiting), cuts it into lines, collapses ``\\r`` rewrites (a progress bar keeps
its last state), splits lines over 64 KiB, and writes each run's records with
one ``write(2)`` per batch (``_console.c``, or the same bytes in Python). A line
still unfinished 0.4 s after it began is written as a ``partial`` record, so
that every line is on disk within 0.5 s. Stopping restores what was found:
the wrapped objects get their own ``write`` back (when something else has
wrapped them since, the wrapper turns into a plain pass-through), and the
descriptors are pointed back at what they were.

Text that UTF-8 cannot hold (lone surrogates, bytes that do not decode) is
stored with U+FFFD, and named once per stream in the run. Nothing here ever
raises into the code that prints.
"""

from __future__ import annotations

import codecs
import os
import re
import select
import sys
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

import orjson

from tracker.core.files import NotAFileError  # noqa: F401 - capture's modules share core.files' errors

try:
    if os.environ.get("TRACKER_PURE_PYTHON"):
        raise ImportError
    from tracker.capture import _console as _c
except ImportError:  # built without a C compiler: the same records from Python
    _c = None

#: The most text one record holds, in UTF-8 bytes (the ``console`` schema's limit).
MAX_TEXT_BYTES = 64 * 1024
#: How often the flusher looks, in seconds, when little is being written.
FLUSH_INTERVAL = 0.1
#: An unfinished line is written as a ``partial`` record once it is this old, in seconds.
PARTIAL_AFTER = 0.4
#: Seconds ``stop()`` waits for an ``"fd"`` pipe to drain after the descriptors are restored.
DRAIN_TIMEOUT = 0.5
#: Every this many writes waiting (a power of two), the flusher is woken at once: what waits stays small.
KICK_EVERY = 4096
#: Writes taken and written at a time.
CHUNK = 8192
#: This many writes waiting (the flusher starved of the interpreter): the writing thread takes them itself.
BACKLOG = 65536
STDOUT, STDERR = 0, 1
_NAMES = ("stdout", "stderr")
_SURROGATES = re.compile("[\ud800-\udfff]")
_LINE_BREAKS = re.compile("(\r|\n)")
#: A note in the run is text of this form, written as a stderr line (it is what a user should see first).
NOTE = "tracker: {}"


def lines_py(pre: bytes, crc_pre: int, seq: int, texts: list[str], mids: tuple[bytes, bytes],
             tails: tuple[bytes, bytes], kinds: bytes) -> bytes:
    """``_console.lines`` in Python: one store line per text, numbered after ``seq``, each with its CRC-32.

    :param pre: the line up to its sequence number (``{"v":1,...,"seq":``); ``crc_pre`` its CRC-32.
    :param mids: what goes between the sequence number and the text, for stdout and for stderr.
    :param tails: what closes the record after the text, for a whole line and for a partial one.
    :param kinds: one byte per text: bit 0 stderr, bit 1 partial.
    """
    out = []
    dumps = orjson.dumps
    crc32 = zlib.crc32
    for i, text in enumerate(texts):
        seq += 1
        k = kinds[i]
        body = b"%d%b%b%b" % (seq, mids[k & 1], dumps(text)[1:-1], tails[(k >> 1) & 1])
        out.append(b'%b%b,"crc":"%08x"}\n' % (pre, body, crc32(body, crc_pre)))
    return b"".join(out)


_lines: Callable[..., bytes] = _c.lines if _c is not None else lines_py


# --- lines out of text --------------------------------------------------------------------------

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


class _Line:
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


# --- the runs that capture ----------------------------------------------------------------------

class Sink:
    """One run's share of the console: its records, its byte cap, its notes.

    :param run: the ``Run`` (its writer is used for batches; ``_log_side`` otherwise).
    :param max_bytes: the console text kept for the run in this process; then one note and no more.
    """

    def __init__(self, run: Any, max_bytes: int) -> None:
        self.run = run
        self.max_bytes = max_bytes
        self.bytes = 0
        self.full = False
        self.dead = False
        self.noted: set[str] = set()
        self.mode = ""

    def write(self, batch: Batch, now: float) -> None:
        """Write ``batch`` up to the cap; never raises."""
        if self.full or self.dead or not batch.texts:
            return
        size = text_bytes(batch.texts)
        if self.bytes + size > self.max_bytes:
            kept = Batch()
            for text, kind in zip(batch.texts, batch.kinds, strict=True):
                n = text_bytes([text])
                if self.bytes + n > self.max_bytes:
                    break
                self.bytes += n
                kept.add(kind & 1, text, bool(kind & 2))
            batch = kept
            self.full = True
        else:
            self.bytes += size
        try:
            write_batch(self.run, batch, now)
        except Exception:  # noqa: BLE001 - a run that ended or a full disk: the console goes on without it
            self.dead = True
        if self.full:
            self.full_note(now)

    def full_note(self, now: float) -> None:
        """The one line that says capture stopped at ``[run] console_max_bytes``."""
        b = Batch()
        b.add(STDERR, NOTE.format(f"console capture stopped: the run's console reached [run] console_max_bytes "
                                  f"({self.max_bytes} bytes); later output is not stored"))
        try:
            write_batch(self.run, b, now)
        except Exception:  # noqa: BLE001 - as in write
            self.dead = True

    def note(self, key: str, text: str, now: float) -> None:
        """Write the note ``text`` once per ``key`` (e.g. undecodable text on one stream)."""
        if key not in self.noted and not self.full and not self.dead:
            self.noted.add(key)
            b = Batch()
            b.add(STDERR, NOTE.format(text))
            try:
                write_batch(self.run, b, now)
            except Exception:  # noqa: BLE001 - as in write
                self.dead = True


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
            run._log_side("console", {"stream": _NAMES[stream], "text": text, "partial": partial},
                          0 if top is None else top, True)
        return
    texts = batch.texts
    with w.lock:
        if w.closed:
            raise RuntimeError("the run's writer is closed")
        seq, count, top = w.counts
        latest = w.max_step
        pre = _pre(route, 0 if latest is None else latest, now)
        blob = _lines(pre, zlib.crc32(pre), seq, texts, _MIDS, _TAILS, bytes(batch.kinds))
        w.commit(blob, (seq + len(texts), count + len(texts), top), None)


_MIDS = (b',"data":{"stream":"stdout","text":"', b',"data":{"stream":"stderr","text":"')
_TAILS = (b'"}', b'","partial":true}')


def _pre(route: Any, step: int, now: float) -> bytes:
    """The start of this batch's lines, up to the sequence number, from the route's record template."""
    blank = orjson.dumps(dict(route.template, step=step, time=now, seq=0, data=None))
    head, rest = blank.split(b'"seq":0', 1)
    if rest != b',"data":null}':
        raise RuntimeError("unexpected record template")
    return head + b'"seq":'


# --- the process's capture ----------------------------------------------------------------------

_in_flush = threading.local()


class Capture:
    """What this process writes to stdout and stderr, handed to every :class:`Sink` (run) capturing.

    :param mode: ``"wrap"`` (``sys.stdout`` / ``sys.stderr``) or ``"fd"`` (descriptors 1 and 2).
    """

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sinks: list[Sink] = []
        #: What was written and not yet taken: str (stdout) or a 1-tuple of str (stderr).
        self.buf: list[Any] = []
        self.lines = (_Line(), _Line())
        self.lock = threading.RLock()   # the flusher's work: taking, cutting, writing
        self.wake = threading.Event()
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.pid = os.getpid()
        self.wrapped: list[_Wrapped] = []
        self.fds: _Descriptors | None = None
        self.bad_text = [False, False]

    # -- start and stop

    def start(self) -> None:
        """Start capturing (wrap the streams or redirect the descriptors) and the flusher thread."""
        if self.mode == "fd":
            self.fds = _Descriptors(self)
            self.fds.start()
        else:
            self._wrap()
        self.thread = threading.Thread(target=self._loop, name="tracker-console", daemon=True)
        self.thread.start()

    def _wrap(self) -> None:
        out, err = sys.stdout, sys.stderr
        if out is not None:
            self.wrapped.append(_Wrapped.wrap("stdout", out, self.buf, STDOUT, self.kick))
        if err is not None and err is not out:
            self.wrapped.append(_Wrapped.wrap("stderr", err, self.buf, STDERR, self.kick))

    def stop(self) -> None:
        """Restore the streams, write what is left, end the threads (the last sink has gone)."""
        if self.fds is not None:
            self.fds.restore()
            self.fds.close()  # what the pipes still hold is read (at most DRAIN_TIMEOUT)
        for w in self.wrapped:
            w.unwrap()
        self.wrapped = []
        self.stopping = True
        self.wake.set()
        t = self.thread
        if t is not None and t is not threading.current_thread() and os.getpid() == self.pid:
            t.join(5.0)
        self.thread = None
        self.flush(force=True)

    # -- the flusher

    def _loop(self) -> None:
        while True:
            self.wake.clear()
            try:
                self.flush()
            except Exception:  # noqa: BLE001, S110 - the flusher never dies while runs capture
                pass
            if self.stopping:
                return
            self.wake.wait(FLUSH_INTERVAL)

    def flush(self, force: bool = False) -> int:
        """Take what was written, cut it into records and write them to every sink: the writes taken.

        A long backlog is taken :data:`CHUNK` writes at a time (each one write to the segment), so that
        what is being worked on stays small however long the flusher had to wait for the interpreter.

        :param force: write unfinished lines now as partial records (at stop).
        """
        if getattr(_in_flush, "on", False):
            return 0  # a handler of console records printed: that text waits for the next round
        with self.lock:
            _in_flush.on = True
            try:
                taken = 0
                buf = self.buf
                while True:
                    items = buf[:CHUNK]
                    del buf[:len(items)]
                    taken += len(items)
                    self._flush_items(items, force and len(items) < CHUNK)
                    if len(items) < CHUNK:
                        return taken
            finally:
                _in_flush.on = False

    def kick(self) -> None:
        """Called by the tees every :data:`KICK_EVERY` writes waiting: wake the flusher, or, when it has not
        kept up (a busy machine), take the backlog on the writing thread, so that memory stays bounded."""
        if len(self.buf) >= BACKLOG:
            try:
                self.flush()
            except Exception:  # noqa: BLE001, S110 - never into the code that prints
                pass
        else:
            self.wake.set()

    def _flush_items(self, items: list[Any], force: bool) -> None:
        now = time.time()
        batch = Batch()
        if items and not (_c is not None and len(self.sinks) == 1 and self._fast(items, now, self.sinks[0])):
            self._cut(items, now, batch)
        for stream in (STDOUT, STDERR):
            text = self.lines[stream].due(now, force)
            if text is not None:
                batch.add(stream, text, True)
        if batch.texts:
            batch, bad = checked(batch)
            for stream in bad:
                self.bad_text[stream] = True
            for sink in list(self.sinks):
                sink.write(batch, now)
                for stream in (STDOUT, STDERR):
                    if self.bad_text[stream]:
                        sink.note(f"undecodable {stream}", f"{_NAMES[stream]} held text that is not "
                                  "valid UTF-8; it is stored with U+FFFD replacement characters", now)

    def _fast(self, items: list[Any], now: float, sink: Sink) -> bool:
        """Cut ``items`` into the one sink's records and write them in C (``_console.feed``), if it can.

        ``False`` (nothing changed) for anything but the common case: stdout text that UTF-8 can hold,
        a run whose writer takes the batch directly.
        """
        if sink.full or sink.dead:
            return False
        run = sink.run
        att = run._att
        w = att.writer
        if w.stale or not w.direct:
            return False
        route = att.route("console")
        if route is None:
            return False
        line = self.lines[STDOUT]
        with w.lock:
            if w.closed:
                return False
            seq, count, top = w.counts
            latest = w.max_step
            pre = _pre(route, 0 if latest is None else latest, now)
            res = _c.feed(items, line.text, line.cr, pre, zlib.crc32(pre), seq, _MIDS, _TAILS,
                          sink.max_bytes - sink.bytes)
            if res is None:
                return False
            blob, records, size, rest, cr, ended, full = res
            if not line.text and not line.cr:
                line.since = now
            line.text, line.cr, line.shown = rest, bool(cr), False
            if ended:
                line.since = now
            sink.bytes += size
            if records:
                try:
                    w.commit(blob, (seq + records, count + records, top), None)
                except Exception:  # noqa: BLE001 - a full disk: the console goes on without this run
                    sink.dead = True
        if full:
            sink.full = True
            sink.full_note(now)
        return True

    def _cut(self, items: list[Any], now: float, batch: Batch) -> None:
        """Feed the writes, in order, to their stream's line; complete lines go to ``batch``."""
        start = 0
        n = len(items)
        while start < n:
            first = items[start]
            end = start + 1
            if type(first) is not tuple:
                while end < n and type(items[end]) is not tuple:
                    end += 1
                self.lines[STDOUT].feed(_text(items[start:end]), now, batch, STDOUT)
            else:
                while end < n and type(items[end]) is tuple:
                    end += 1
                self.lines[STDERR].feed(_text([x[0] for x in items[start:end]]), now, batch, STDERR)
            start = end

    # -- after a fork

    def after_fork_in_child(self) -> None:
        """In a forked child: what was taken is the parent's to write; lines are written as they end.

        The child has no flusher thread; its wrapped streams write each complete line at once (to the
        child's own segment of the run), and an unfinished line when the child finishes its run.
        """
        self.buf.clear()
        self.lock = threading.RLock()
        self.wake = threading.Event()
        self.thread = None
        self.pid = os.getpid()
        self.lines = (_Line(), _Line())
        if self.fds is not None:
            # The descriptors are the parent's pipe: the parent's reader takes the child's output too.
            self.fds = _Descriptors.inherited()
            return
        for w in self.wrapped:
            w.flush_on_newline(self)


def _text(parts: list[Any]) -> str:
    try:
        return "".join(parts)
    except TypeError:  # something that is not a str got through a stream's write (a permissive stream)
        return "".join(p if type(p) is str else p.decode("utf-8", "replace") if isinstance(p, (bytes, bytearray))
                       else str(p) for p in parts)


class _Wrapped:
    """One stream object whose ``write`` is wrapped (or, when that cannot be, replaced by a proxy in ``sys``)."""

    def __init__(self, name: str, obj: Any, orig: Any, prev: Any, own: bool, func: Any, proxy: Any = None) -> None:
        self.name = name
        self.obj = obj
        self.orig = orig    # the stream's ``write`` as found
        self.prev = prev    # the instance's own ``write`` found there (another wrapper), if ``own``
        self.own = own
        self.func = func    # the tee
        self.proxy = proxy

    @classmethod
    def wrap(cls, name: str, obj: Any, buf: list[Any], stream: int, kick: Callable[[], Any]) -> _Wrapped:
        orig = obj.write
        own = "write" in getattr(obj, "__dict__", {})
        func = make_tee(orig, buf, stream, kick)
        try:
            obj.write = func
        except (AttributeError, TypeError):
            proxy = _Proxy(obj, func)
            setattr(sys, name, proxy)
            return cls(name, obj, orig, None, False, func, proxy)
        return cls(name, obj, orig, orig if own else None, own, func)

    def unwrap(self) -> None:
        """Give the stream its ``write`` back; a pass-through if something wrapped it since."""
        self.func.on = False
        try:
            if self.proxy is not None:
                if getattr(sys, self.name) is self.proxy:
                    setattr(sys, self.name, self.obj)
                return
            if self.obj.__dict__.get("write") is self.func:
                if self.own:
                    self.obj.write = self.prev
                else:
                    del self.obj.write
        except Exception:  # noqa: BLE001, S110 - a stream that refuses: the wrapper stays a pass-through
            pass

    def flush_on_newline(self, capture: Capture) -> None:
        """In a forked child: write records as lines end, on the writing thread (no flusher there)."""
        stream = STDERR if self.name == "stderr" else STDOUT
        self.func.on = False
        buf = capture.buf

        def write(s: Any, _w: Any = self.orig, _a: Any = buf.append) -> Any:
            n = _w(s)
            if write.on:
                _a(s if stream == STDOUT else (s,))
                if type(s) is not str or "\n" in s:
                    try:
                        capture.flush()
                    except Exception:  # noqa: BLE001, S110 - never into the code that prints
                        pass
            return n

        write.on = True  # type: ignore[attr-defined]
        try:
            if self.proxy is not None:
                self.proxy._tracker_write = write
            elif self.obj.__dict__.get("write") is self.func:
                self.obj.write = write
            else:
                return
            self.func = write
        except Exception:  # noqa: BLE001, S110 - as above
            pass


class _PyTee:
    """The tee in Python (``_console.Tee`` without the C extension): the original ``write``, then the text kept."""

    __slots__ = ("write", "buf", "wrap", "on", "kick")

    def __init__(self, write: Any, buf: list[Any], wrap: bool, kick: Callable[[], Any]) -> None:
        self.write = write
        self.buf = buf
        self.wrap = wrap
        self.on = True
        self.kick = kick

    def __call__(self, s: Any) -> Any:
        n = self.write(s)
        if self.on:
            buf = self.buf
            buf.append((s,) if self.wrap else s)
            if not len(buf) & (KICK_EVERY - 1):
                self.kick()
        return n


def make_tee(orig: Any, buf: list[Any], stream: int, kick: Callable[[], Any]) -> Any:
    """The wrapped ``write`` of one stream: ``orig`` first (its result returned), then the text kept in ``buf``.

    ``kick()`` is called whenever ``buf`` holds a multiple of :data:`KICK_EVERY` writes. The tee's
    ``on`` attribute set to false makes it a plain pass-through.
    """
    if _c is not None:
        return _c.Tee(orig, buf, stream == STDERR, kick, KICK_EVERY)
    return _PyTee(orig, buf, stream == STDERR, kick)


class _Proxy:
    """A stream that cannot take a wrapped ``write`` itself: everything passes to it, ``write`` through the tee."""

    def __init__(self, stream: Any, write: Any) -> None:
        object.__setattr__(self, "_tracker_stream", stream)
        object.__setattr__(self, "_tracker_write", write)

    def write(self, s: Any) -> Any:
        return self._tracker_write(s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tracker_stream, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_tracker_write":
            object.__setattr__(self, name, value)
        else:
            setattr(self._tracker_stream, name, value)


# --- descriptors 1 and 2 -----------------------------------------------------------------------

_bad_bytes = [0]


def _count_replace(exc: UnicodeError) -> tuple[str, int]:
    _bad_bytes[0] += 1
    if isinstance(exc, UnicodeDecodeError):
        return "\ufffd", exc.end
    raise exc


codecs.register_error("tracker.console", _count_replace)


class _Descriptors:
    """Descriptors 1 and 2 pointed at pipes (pseudo-terminals for terminals) read by one thread."""

    def __init__(self, capture: Capture | None) -> None:
        self.capture = capture
        self.saved: dict[int, int] = {}     # descriptor -> a duplicate of what it was
        self.reads: dict[int, int] = {}     # read end -> descriptor
        self.thread: threading.Thread | None = None
        self.done = False
        self.record = True
        self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("tracker.console") for fd in (1, 2)}
        self.broken: set[int] = set()       # original descriptors that no longer take bytes

    @classmethod
    def inherited(cls) -> _Descriptors:
        d = cls(None)
        d.done = True
        return d

    def start(self) -> None:
        for fd in (1, 2):
            try:
                os.fstat(fd)
            except OSError:
                continue  # a closed descriptor stays closed
            for stream in (sys.stdout, sys.stderr):
                _flush(stream)
            saved = os.dup(fd)
            os.set_inheritable(saved, False)
            if os.isatty(fd):
                master, slave = _pty_like(fd)
                os.dup2(slave, fd)
                os.close(slave)
                self.reads[master] = fd
            else:
                r, w = os.pipe()
                os.dup2(w, fd)
                os.close(w)
                self.reads[r] = fd
            self.saved[fd] = saved
        self.thread = threading.Thread(target=self._loop, name="tracker-console-fd", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        reads = dict(self.reads)
        while reads:
            try:
                ready, _, _ = select.select(list(reads), [], [], FLUSH_INTERVAL)
            except (OSError, ValueError):
                break
            for r in ready:
                try:
                    data = os.read(r, 65536)
                except OSError:  # a pseudo-terminal whose last writer closed it: EIO
                    data = b""
                fd = reads[r]
                if not data:
                    del reads[r]
                    os.close(r)
                    continue
                self._forward(fd, data)
                if self.record and self.capture is not None:
                    before = _bad_bytes[0]
                    text = self.decoders[fd].decode(data)
                    if _bad_bytes[0] != before:
                        self.capture.bad_text[fd - 1] = True
                    if text:
                        self.capture.buf.append(text if fd == 1 else (text,))
        self.done = True

    def _forward(self, fd: int, data: bytes) -> None:
        """Every byte on to the descriptor's original target (a target that went away is left alone)."""
        if fd in self.broken:
            return
        view = memoryview(data)
        try:
            while view:
                n = os.write(self.saved[fd], view)
                view = view[n:]
        except OSError:
            self.broken.add(fd)

    def restore(self) -> None:
        """Point the descriptors back at what they were; the reader drains what is left."""
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
        for fd, saved in self.saved.items():
            try:
                os.dup2(saved, fd)
            except OSError:
                pass

    def close(self) -> None:
        """Wait for the pipes to drain (at most :data:`DRAIN_TIMEOUT`), then close the saved descriptors.

        A child process that still holds a pipe keeps the reader forwarding its bytes (not recording
        them) until it closes it, so that it never writes into a pipe without a reader.
        """
        t = self.thread
        if t is not None and t is not threading.current_thread():
            t.join(DRAIN_TIMEOUT)
            if t.is_alive():
                self.record = False
                return  # the reader closes the saved descriptors' pipes as they end; the saved ones stay
        for saved in self.saved.values():
            try:
                os.close(saved)
            except OSError:
                pass
        self.saved = {}


def _flush(stream: Any) -> None:
    try:
        if stream is not None:
            stream.flush()
    except Exception:  # noqa: BLE001, S110 - a closed or broken stream: nothing to flush
        pass


def _pty_like(fd: int) -> tuple[int, int]:
    """A pseudo-terminal for a descriptor that is a terminal: its size, output passed through unchanged."""
    import fcntl
    import pty
    import termios

    master, slave = pty.openpty()
    try:
        attrs = termios.tcgetattr(fd)
        attrs[1] &= ~termios.OPOST  # bytes reach the real terminal as written; it does its own \n -> \r\n
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        size = fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
    except (OSError, termios.error):
        pass
    os.set_inheritable(master, False)
    return master, slave


# --- one capture per process --------------------------------------------------------------------

_lock = threading.Lock()
_capture: list[Capture] = []


def add_sink(run: Any, mode: str, max_bytes: int) -> Sink:
    """Start capturing into ``run`` (starting the process's capture if none runs): its :class:`Sink`.

    :param mode: ``"wrap"`` or ``"fd"``; a capture already running keeps its own mode.
    """
    sink = Sink(run, max_bytes)
    with _lock:
        if not _capture:
            cap = Capture(mode)
            cap.sinks.append(sink)
            cap.start()
            _capture.append(cap)
        else:
            cap = _capture[0]
            cap.flush()  # what was written before this run started is not this run's
            cap.sinks.append(sink)
    sink.mode = cap.mode
    return sink


def remove_sink(sink: Sink) -> None:
    """Stop capturing into ``sink``'s run: what it is owed is written first; the last one stops the capture."""
    with _lock:
        if not _capture:
            return
        cap = _capture[0]
        if sink not in cap.sinks:
            return
        if len(cap.sinks) > 1:
            cap.flush(force=True)
            cap.sinks.remove(sink)
            return
        _capture.clear()
    cap.stop()
    with cap.lock:
        if sink in cap.sinks:
            cap.sinks.remove(sink)


def flush_all() -> None:
    """Write what was printed so far into every capturing run now (before a crash is recorded)."""
    cap = _capture[0] if _capture else None
    if cap is not None:
        try:
            if cap.fds is not None:
                for stream in (sys.stdout, sys.stderr):
                    _flush(stream)
                time.sleep(0.05)  # let the reader take what the descriptors just got
            cap.flush(force=True)
        except Exception:  # noqa: BLE001, S110 - never in the way of recording the crash
            pass


def _after_fork_in_child() -> None:
    if _capture:
        _capture[0].after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["MAX_TEXT_BYTES", "Batch", "Capture", "Sink", "add_sink", "checked", "flush_all", "lines_py", "remove_sink",
           "split_long", "write_batch"]
