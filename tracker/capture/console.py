"""The console: what a run's process writes to stdout and stderr, kept as ``console`` records.

One :class:`Capture` per process, shared by every run that captures (each run
is a :class:`Sink` of it, with its own byte cap). Two ways in:

- ``"wrap"`` (the default): the ``write`` of the objects found in
  ``sys.stdout`` and ``sys.stderr`` is wrapped on the object itself (its type,
  identity and ``isatty()`` untouched): the original ``write`` runs first and
  the terminal gets exactly what it got before, then the text is kept: its
  UTF-8 copied into a ``_console.Spool`` (C), or the str appended to a list
  (Python). That is what a ``print()`` pays, and the recorder never touches
  the caller's objects; with the C extension, each time another 1 MiB waits
  the writing thread cuts and writes it itself (below).
- ``"fd"``: file descriptors 1 and 2 are pointed at a pipe (a pseudo-terminal
  when the descriptor was a terminal, so ``isatty()`` and colours hold in
  child processes too), and a reader thread writes every byte on to the
  original descriptor before decoding it for the run.

A flusher thread takes what was written every 0.1 s (at once when much is
waiting; with the C tee, 1 MiB waiting is taken by the writing thread itself,
in C with the interpreter let go: handing it to the flusher cost more CPU than
the work, since that thread must take the interpreter from a program that
holds it, which wakes and stalls both threads again and again), cuts it into
lines, collapses ``\\r`` rewrites (a progress bar keeps
its last state), splits lines over 64 KiB, and writes each run's records with
one ``write(2)`` per batch (the lines of a stream in one record, joined by
``\\n``, at most 64 KiB of text each) (``_console.c``, or the same bytes in Python). The
parts: :mod:`.lines` (text to records), :mod:`.tee` (the wrapped ``write``),
:mod:`.descriptors` (descriptors 1 and 2); this module runs them. A line
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

import os
import sys
import threading
import time
import zlib
from typing import Any

from tracker.capture.descriptors import Descriptors, flush_stream
from tracker.capture.lines import (
    MIDS,
    NAMES,
    NOTE,
    STDERR,
    STDOUT,
    TAILS,
    Batch,
    Line,
    checked,
    line_start,
    native,
    text_bytes,
    write_batch,
)
from tracker.capture.tee import Wrapped

#: How often the flusher looks, in seconds, when little is being written.
FLUSH_INTERVAL = 0.1
#: Writes taken and written at a time (the list: fd capture, no C extension).
CHUNK = 8192
#: This many writes waiting (the flusher starved of the interpreter): the writing thread takes them itself.
BACKLOG = 65536
#: Bytes of the spool the Python path takes at a time (the C path takes at most 4 MiB of stdout text).
CHUNK_BYTES = 1 << 20
#: This many bytes waiting in the spool: the writing thread takes them itself (as :data:`BACKLOG`). The C tee
#: calls ``kick`` every :data:`tracker.capture.tee.KICK_BYTES` (as much), so a busy program's text is cut and
#: written on its own thread, and the flusher takes what trickles in (CPU time of a captured ``print()`` to a
#: file, paired rounds: 1.03x of a plain one this way, 1.25x handed to the flusher; benchmarks/RESULTS.md).
BACKLOG_BYTES = 1 << 20


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
        #: The same, kept by the C tees (``_console.Spool``), or ``None`` without the C extension.
        self.spool: Any = native.Spool() if native is not None else None
        self.lines = (Line(), Line())
        self.lock = threading.RLock()   # the flusher's work: taking, cutting, writing
        self.wake = threading.Event()
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.pid = os.getpid()
        self.wrapped: list[Wrapped] = []
        self.fds: Descriptors | None = None
        self.bad_text = [False, False]

    # -- start and stop

    def start(self) -> None:
        """Start capturing (wrap the streams or redirect the descriptors) and the flusher thread."""
        if self.mode == "fd":
            self.fds = Descriptors(self)
            self.fds.start()
        else:
            self._wrap()
        self.thread = threading.Thread(target=self._loop, name="tracker-console", daemon=True)
        self.thread.start()

    def _wrap(self) -> None:
        out, err = sys.stdout, sys.stderr
        if out is not None:
            self.wrapped.append(Wrapped.wrap("stdout", out, self.buf, self.spool, STDOUT, self.kick))
        if err is not None and err is not out:
            self.wrapped.append(Wrapped.wrap("stderr", err, self.buf, self.spool, STDERR, self.kick))

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
        """Take what was written, cut it into records and write them to every sink: the writes taken (the
        spool's: bytes).

        A long backlog is taken a chunk at a time (the spool's stdout text 4 MiB at a time, else
        :data:`CHUNK_BYTES`; the list's :data:`CHUNK` writes; each one write to the segment), so that
        what is being worked on stays small however long the flusher had to wait for the interpreter; what
        is written meanwhile is left for the next round.

        :param force: write unfinished lines now as partial records (at stop).
        """
        if getattr(_in_flush, "on", False):
            return 0  # a handler of console records printed: that text waits for the next round
        with self.lock:
            _in_flush.on = True
            try:
                taken = 0
                spool, buf = self.spool, self.buf
                if spool is not None:
                    end = spool.taken + len(spool)
                    while len(spool) and spool.taken < end:
                        start = spool.taken
                        self._flush_items(spool, False)
                        taken += spool.taken - start
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
        """Called by the tees as what waits grows (:data:`tracker.capture.tee.KICK_BYTES`,
        :data:`tracker.capture.tee.KICK_EVERY`): take what waits on the writing thread (the spool's
        :data:`BACKLOG_BYTES`, or the list's :data:`BACKLOG` when the flusher has not kept up), so that
        memory stays bounded, else wake the flusher. A writer's lock held meanwhile (this thread may hold
        it: a handler that prints while a record is written) leaves the work to the flusher."""
        spool = self.spool
        if (len(self.buf) >= BACKLOG or (spool is not None and len(spool) >= BACKLOG_BYTES)) and \
                not self._writer_busy():
            try:
                self.flush()
            except Exception:  # noqa: BLE001, S110 - never into the code that prints
                pass
        else:
            self.wake.set()

    def _writer_busy(self) -> bool:
        """Whether a capturing run's writer lock is held (by this thread, perhaps: taking it would hang)."""
        try:
            return any(sink.run._att.writer.lock.locked() for sink in self.sinks)
        except Exception:  # noqa: BLE001 - a run half set up or torn down: leave it to the flusher
            return True

    def _flush_items(self, items: Any, force: bool) -> None:
        """One chunk of ``items`` (a list of writes, or the spool: a chunk of it is taken here) to the sinks."""
        now = time.time()
        batch = Batch()
        if items is self.spool:
            if not (len(self.sinks) == 1 and self._fast(items, now, self.sinks[0])):
                self._cut(items.take(CHUNK_BYTES), now, batch)
        elif items and not (native is not None and len(self.sinks) == 1 and self._fast(items, now, self.sinks[0])):
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
                        sink.note(f"undecodable {stream}", f"{NAMES[stream]} held text that is not "
                                  "valid UTF-8; it is stored with U+FFFD replacement characters", now)

    def _fast(self, items: Any, now: float, sink: Sink) -> bool:
        """Cut ``items`` (a list, or the spool's leading stdout text) into the one sink's records and write
        them in C (``_console.feed``), if it can.

        ``False`` (nothing taken, nothing changed) for anything but the common case: stdout text that
        UTF-8 can hold, a run whose writer takes the batch directly.
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
            pre = line_start(route, 0 if latest is None else latest, now)
            res = native.feed(items, line.text, line.cr, pre, zlib.crc32(pre), seq, MIDS, TAILS,
                              sink.max_bytes - sink.bytes, w)
            if res is None:
                return False
            blob, records, size, rest, cr, ended, full, written, error = res
            if not line.text and not line.cr:
                line.since = now
            line.text, line.cr, line.shown = rest, bool(cr), False
            if ended:
                line.since = now
            sink.bytes += size
            if blob is not None:  # not written in C, or not all of it (a short write, an error)
                try:
                    w.commit(blob, (seq + records, count + records, top), None, written=written, error=error)
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
        if self.spool is not None:
            self.spool.clear()
        self.lock = threading.RLock()
        self.wake = threading.Event()
        self.thread = None
        self.pid = os.getpid()
        self.lines = (Line(), Line())
        if self.fds is not None:
            # The descriptors are the parent's pipe: the parent's reader takes the child's output too.
            self.fds = Descriptors.inherited()
            return
        for w in self.wrapped:
            w.flush_on_newline(self)


def _text(parts: list[Any]) -> str:
    try:
        return "".join(parts)
    except TypeError:  # something that is not a str got through a stream's write (a permissive stream)
        return "".join(p if type(p) is str else p.decode("utf-8", "replace") if isinstance(p, (bytes, bytearray))
                       else str(p) for p in parts)


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
                    flush_stream(stream)
                time.sleep(0.05)  # let the reader take what the descriptors just got
            cap.flush(force=True)
        except Exception:  # noqa: BLE001, S110 - never in the way of recording the crash
            pass


def _after_fork_in_child() -> None:
    if _capture:
        _capture[0].after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["Capture", "Sink", "add_sink", "flush_all", "remove_sink"]
