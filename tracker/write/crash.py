"""What ends a run its code did not finish: an uncaught exception, or the death of the thread that started it.

While runs are open, ``sys.excepthook`` and ``threading.excepthook`` are
wrapped: the hook that was there runs first (it prints the traceback, which
the console capture keeps), then the runs are ended through ``on_exception``:
``failed`` with the exception's type, message and traceback, or ``stopped``
for a KeyboardInterrupt (Ctrl-C). A thread that dies ends only the runs it
started; other threads' tracebacks are printed (and so captured) as before.
When the last run finishes the hooks are put back, unless something replaced
them meanwhile (then ours stay as pass-throughs).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

#: ``on_exception(exc_type, exc, tb, thread_ident)``: ``thread_ident`` is ``None`` for the main hook.
OnException = Callable[[type[BaseException], BaseException | None, TracebackType | None, int | None], None]

_lock = threading.Lock()
_state: dict[str, Any] = {}


def install(on_exception: OnException) -> None:
    """Wrap ``sys.excepthook`` and ``threading.excepthook`` (once; idempotent while installed)."""
    with _lock:
        if _state:
            return
        prev_sys = sys.excepthook
        prev_thread = threading.excepthook

        def excepthook(exc_type: type[BaseException], exc: BaseException | None, tb: TracebackType | None) -> None:
            try:
                prev_sys(exc_type, exc, tb)
            finally:
                _end(on_exception, exc_type, exc, tb, None)

        def thread_excepthook(args: Any) -> None:
            try:
                prev_thread(args)
            finally:
                if args.exc_type is not SystemExit and args.thread is not None:
                    _end(on_exception, args.exc_type, args.exc_value, args.exc_traceback, args.thread.ident)

        _state.update(prev_sys=prev_sys, prev_thread=prev_thread, sys=excepthook, thread=thread_excepthook)
        sys.excepthook = excepthook
        threading.excepthook = thread_excepthook


def _end(on_exception: OnException, exc_type: type[BaseException], exc: BaseException | None,
         tb: TracebackType | None, thread: int | None) -> None:
    try:
        on_exception(exc_type, exc, tb, thread)
    except Exception:  # noqa: BLE001, S110 - a hook must never raise; the traceback is printed already
        pass


def uninstall() -> None:
    """Put the hooks found back, where ours are still in place."""
    with _lock:
        if not _state:
            return
        if sys.excepthook is _state["sys"]:
            sys.excepthook = _state["prev_sys"]
        if threading.excepthook is _state["thread"]:
            threading.excepthook = _state["prev_thread"]
        _state.clear()


__all__ = ["install", "uninstall"]
