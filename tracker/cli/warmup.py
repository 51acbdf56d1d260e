"""A store read for the first time: what is not derived yet, built with a progress line on a terminal.

Readers build a run's derived columns (``<store>/index/``) the first time they
need them; on a store of a million-step run or thousands of runs that first
read takes seconds. :func:`tracker.read.index.cold.cold_bytes` says how much JSONL has no derived data
yet (the dashboard shows it on its progress line); :func:`warm_with_progress`
builds it before a command reads, with a progress bar on stderr when stderr
is a terminal and the work lasts over half a second (``tracker runs``,
``tracker show``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: A progress line appears only when building lasts longer than this (seconds).
SHOW_AFTER_S = 0.5


class _Line:
    """A progress line on stderr, redrawn by a thread: bytes done of the total, and the time so far."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0
        self.start = time.perf_counter()
        self.shown = False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _text(self) -> str:
        from tracker.core.text import human_bytes

        frac = min(1.0, self.done / self.total) if self.total else 0.0
        filled = int(frac * 30)
        bar = "#" * filled + "-" * (30 - filled)
        return (f"\r{self.label} [{bar}] {human_bytes(self.done)} of {human_bytes(self.total)} "
                f"· {time.perf_counter() - self.start:.1f}s")

    def _run(self) -> None:
        if self.stop.wait(SHOW_AFTER_S):
            return
        self.shown = True
        while not self.stop.wait(0.1):
            sys.stderr.write(self._text())
            sys.stderr.flush()

    def __enter__(self) -> _Line:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        if self.shown:
            sys.stderr.write(self._text() + "\n")
            sys.stderr.flush()


def warm_with_progress(store: Any, run_ids: Iterable[str] | None = None, *, label: str = "reading the store "
                       "for the first time") -> int:
    """Build the derived columns of the segments that have none yet, with a progress line on a terminal.

    Does nothing (and shows nothing) when stderr is not a terminal, the store
    is not a folder store, or nothing is left to build: readers then build what
    they need themselves, as always. The line shows only after
    :data:`SHOW_AFTER_S` seconds.

    :param run_ids: the runs the command is about to read (default: every run of the store).
    :returns: the bytes of JSONL built.
    """
    from tracker.cli.terminal import is_terminal

    if not is_terminal(sys.stderr) or not hasattr(store, "catalog"):
        return 0
    from tracker.read.index import Writable, index_enabled, load_segment

    if not index_enabled():
        return 0
    store_path = Path(store.path)
    ids = list(run_ids) if run_ids is not None else list(store.run_ids())
    from tracker.read.index.cold import _segments, _unbuilt  # the index package loads numpy: only when asked

    work = [(rid, seg, n) for rid in ids for seg in _segments(store_path, rid)
            if (n := _unbuilt(store_path, rid, seg))]
    total = sum(n for _, _, n in work)
    if not total:
        return 0
    writable = Writable()
    with _Line(label, total) as line:
        for rid, seg, n in work:
            try:
                # Up to the size it had when the command began: a run logging fast is not chased.
                load_segment(store_path, rid, seg, set(), writable, end=n)
            except Exception:  # noqa: BLE001, S112 - the command's own read reports what is wrong
                pass
            line.done += n
    return total
