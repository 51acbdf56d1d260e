"""Descriptors 1 and 2 through a pipe (a pseudo-terminal for a terminal), read by one thread.

What never passes through ``sys.stdout`` (a C extension's ``printf``, CUDA,
child processes) is seen only at the descriptors. :class:`Descriptors` points
them at pipes, and its reader thread writes every byte on to where they
pointed before, then decodes it (UTF-8; what does not decode becomes U+FFFD,
counted) and hands the text to the console's list. ``restore`` points them
back; ``close`` reads what the pipes still hold, for at most
:data:`DRAIN_TIMEOUT`.
"""

from __future__ import annotations

import codecs
import os
import select
import sys
import threading
from typing import Any

from tracker.core.files import close_quietly

#: Seconds between two looks at the pipes when nothing comes.
READ_INTERVAL = 0.1
#: Seconds ``close()`` waits for a pipe to drain after the descriptors are restored.
DRAIN_TIMEOUT = 0.5


_bad_bytes = [0]


def _count_replace(exc: UnicodeError) -> tuple[str, int]:
    _bad_bytes[0] += 1
    if isinstance(exc, UnicodeDecodeError):
        return "\ufffd", exc.end
    raise exc


codecs.register_error("tracker.console", _count_replace)


class Descriptors:
    """Descriptors 1 and 2 pointed at pipes (pseudo-terminals for terminals) read by one thread."""

    def __init__(self, capture: Any) -> None:
        self.capture = capture
        self.saved: dict[int, int] = {}     # descriptor -> a duplicate of what it was
        self.reads: dict[int, int] = {}     # read end -> descriptor
        self.thread: threading.Thread | None = None
        self.done = False
        self.record = True
        self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("tracker.console") for fd in (1, 2)}
        self.broken: set[int] = set()       # original descriptors that no longer take bytes

    @classmethod
    def inherited(cls) -> Descriptors:
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
                flush_stream(stream)
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
                ready, _, _ = select.select(list(reads), [], [], READ_INTERVAL)
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
            flush_stream(stream)
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
            close_quietly(saved)
        self.saved = {}


def flush_stream(stream: Any) -> None:
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



__all__ = ["DRAIN_TIMEOUT", "Descriptors", "flush_stream"]
