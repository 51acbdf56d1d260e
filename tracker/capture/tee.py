"""The wrapped ``write`` of ``sys.stdout`` and ``sys.stderr``: the stream's own first, then the text kept.

:func:`make_tee` gives ``_console.Tee`` (C: the text's UTF-8 copied into a
``_console.Spool``) or :class:`PyTee` (the str appended to a list); :class:`Wrapped`
puts one on a stream object itself (its type, identity and ``isatty()``
untouched), or, for a stream that takes no attribute, a :class:`Proxy` in
``sys``, and takes it off again exactly: a stream that something else wrapped
since keeps that wrapper, and the tee turns into a pass-through.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tracker.capture.lines import STDERR, STDOUT, native

#: Every this many writes waiting (a power of two), :class:`PyTee` calls ``kick``: what waits stays small.
KICK_EVERY = 32768
#: Every time this many more bytes wait in the spool (a power of two), ``_console.Tee`` calls ``kick`` (which then
#: cuts and writes them on the writing thread: console.py's ``BACKLOG_BYTES``).
KICK_BYTES = 1 << 20


class Wrapped:
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
    def wrap(cls, name: str, obj: Any, buf: list[Any], spool: Any, stream: int, kick: Callable[[], Any]) -> Wrapped:
        orig = obj.write
        own = "write" in getattr(obj, "__dict__", {})
        func = make_tee(orig, buf, spool, stream, kick)
        try:
            obj.write = func
        except (AttributeError, TypeError):
            proxy = Proxy(obj, func)
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

    def flush_on_newline(self, capture: Any) -> None:
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


class PyTee:
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


def make_tee(orig: Any, buf: list[Any], spool: Any, stream: int, kick: Callable[[], Any]) -> Any:
    """The wrapped ``write`` of one stream: ``orig`` first (its result returned), then the text kept.

    With a ``spool`` (``_console.Spool``), the C tee copies the text into it and calls ``kick()`` each
    time :data:`KICK_BYTES` more bytes wait; else :class:`PyTee` appends it to ``buf`` and calls ``kick()``
    whenever ``buf`` holds a multiple of :data:`KICK_EVERY` writes. The tee's ``on`` attribute set to
    false makes it a plain pass-through.
    """
    if spool is not None:
        return native.Tee(orig, spool, stream == STDERR, kick, KICK_BYTES)
    return PyTee(orig, buf, stream == STDERR, kick)


class Proxy:
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


__all__ = ["KICK_BYTES", "KICK_EVERY", "Proxy", "PyTee", "Wrapped", "make_tee"]
