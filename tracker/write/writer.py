"""The write path: each process appends the events of a run to a segment of its own.

A line goes to the file with one ``os.write`` on an ``O_APPEND`` file
descriptor before the logging call returns, so it survives a kill -9 of the
process (``fsync`` is an option, for power loss). The lines are those of
:mod:`tracker.core.format`; this module knows nothing of plugins, and of schemas
only that a record's data must encode.
"""

from __future__ import annotations

import os
import secrets
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from tracker.core.errors import StoreError
from tracker.core.files import close_quietly, fsync_folder  # noqa: F401 - writers and blob stores share fsync_folder
from tracker.core.format import METRICS, RECORD, SEGMENT_SUFFIX, encode_line, event
from tracker.core.values import MAX_INT
from tracker.read.liveness import hostname, process_start, safe_hostname
from tracker.write.fast import Lock

_write = os.write
#: Below every step a record may have (steps are ints within ±2**53): "no step yet".
NO_STEP = -MAX_INT - 1


_writers: weakref.WeakSet[SegmentWriter] = weakref.WeakSet()


class SegmentWriter:
    """Appends the events of one process to its own segment of one run.

    Each line goes to the file with one ``os.write`` on an ``O_APPEND`` file
    descriptor before ``append`` returns, so it survives a kill -9 of the
    process; with ``fsync=True`` it is also flushed to the disk. Threads of
    the process share the writer under a lock, which keeps the sequence
    numbers in file order.
    """

    def __init__(self, run_dir: Path, *, fsync: bool = False, hidden: bool = False) -> None:
        self.run_dir = run_dir
        self.fsync = fsync
        self.lock = Lock()
        #: ``(seq of the last line, records, largest step)``, replaced as one tuple after each
        #: line (see :meth:`recover`); NO_STEP stands for "no step yet".
        self.counts: tuple[int, int, int] = (0, 0, NO_STEP)
        #: The latest value of each metric written by this writer.
        self.last: dict[str, Any] = {}
        self._open(hidden)
        _writers.add(self)
        _ensure_fork_hook()

    def reopen(self) -> None:
        """Open a segment of this (forked) process, hidden until :meth:`reveal`; its counts start again."""
        self._open(hidden=True)
        self.counts = (0, 0, NO_STEP)
        self.last = {}

    def _open(self, hidden: bool = False) -> None:
        """Create this process's segment; ``hidden``: under a name readers skip, until :meth:`reveal`."""
        self.pid = os.getpid()
        self.id = f"{safe_hostname()}-{self.pid}-{secrets.token_hex(3)}"
        self.path = self.run_dir / f"{self.id}{SEGMENT_SUFFIX}"
        self.hidden_path = self.run_dir / f".{self.id}{SEGMENT_SUFFIX}.part" if hidden else None
        try:
            self.fd = os.open(self.hidden_path or self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL,
                              0o644)
            if self.fsync:
                # A file fsynced is found after a power loss only if the folder entries naming it
                # are on the disk too: the segment's (in the run folder), the run folder's, runs/.
                for folder in (self.run_dir, self.run_dir.parent, self.run_dir.parent.parent):
                    fsync_folder(folder)
        except OSError as exc:
            raise StoreError(f"cannot create {self.path}: {exc.strerror}") from None
        self.torn = False
        self.stale = False
        self.closed = False
        #: Whether a line may go to the file with one bare ``os.write`` (not closed, no torn
        #: fragment to end, no fsync to call): the fast path's one test.
        self.direct = not self.fsync

    def facts(self) -> dict[str, Any]:
        """What readers need to tell whether this writer still runs."""
        return {"host": hostname(), "pid": self.pid, "proc_start": process_start(self.pid), "writer": self.id}

    def reveal(self) -> None:
        """Give a hidden segment its real name, once its first line is in (one atomic rename).

        A segment is only ever seen with its start event in it: a kill between
        creating the file and writing that line leaves a hidden file, never an
        empty segment.
        """
        if self.hidden_path is None:
            return
        try:
            os.rename(self.hidden_path, self.path)
            if self.fsync:
                fsync_folder(self.run_dir)
        except OSError as exc:
            raise StoreError(f"cannot create {self.path}: {exc.strerror}") from None
        self.hidden_path = None

    def moved(self, run_dir: Path) -> None:
        """The segment's folder was renamed to ``run_dir`` (a new run's staging folder put in place)."""
        self.run_dir = run_dir
        self.path = run_dir / self.path.name
        if self.fsync:
            try:
                fsync_folder(run_dir.parent)
            except OSError as exc:
                raise StoreError(f"cannot sync {run_dir.parent}: {exc.strerror}") from None

    def discard(self) -> None:
        """Close and remove a segment that never got its first line (its run was not started after all)."""
        self.close()
        try:
            os.unlink(self.hidden_path or self.path)
        except OSError:
            pass

    # --- counts ---------------------------------------------------------------------------------

    @property
    def seq(self) -> int:
        """The sequence number of the last line written."""
        return self.counts[0]

    @property
    def records(self) -> int:
        """How many records this segment holds."""
        return self.counts[1]

    @property
    def max_step(self) -> int | None:
        """The largest step of the records written (on a resume: of the run so far), or ``None``."""
        top = self.counts[2]
        return None if top == NO_STEP else top

    def continue_after(self, max_step: int | None) -> None:
        """Count ``max_step``, the largest step of the run so far (a resume), as written."""
        if max_step is not None:
            with self.lock:
                seq, records, top = self.counts
                self.counts = (seq, records, max(top, max_step))

    def next_steps(self) -> list[int]:
        """A new counter of automatic steps, ``[next step]``, starting after every step written so far.

        Each ``Run`` object has one; the writer takes a step from it and
        advances it under its lock, so that no two calls get the same step.
        """
        with self.lock:
            top = self.counts[2]
            return [top + 1 if top >= 0 else 0]

    def take_step(self, steps: list[int], step: int | None) -> tuple[int, int]:
        """The step of a record about to be written, ``steps`` advanced past it: ``(step, steps before)``.

        ``step=None`` takes the next of ``steps``, which no other call gets.
        """
        with self.lock:
            before = steps[0]
            if step is None:
                step = before
            if step >= before:
                steps[0] = step + 1
            return step, before

    def untake_step(self, steps: list[int], step: int, before: int) -> None:
        """Undo :meth:`take_step` for a record that was not written (unless a later step was taken)."""
        with self.lock:
            if steps[0] == max(before, step + 1):
                steps[0] = before

    # --- appending -------------------------------------------------------------------------------

    def append(self, kind: str, schema: str | None, step: int | None, time: float,
               data: dict[str, Any]) -> int:
        """Write one event; returns its sequence number once the line is in the file.

        A record counts like one of :meth:`append_record`, its ``step`` given.

        :raises StoreError: when the line cannot be written (full disk, closed writer).
        :raises SchemaError: when the data cannot be encoded; nothing is written.
        """
        with self.lock:
            if self.closed:
                raise StoreError(f"writer {self.id} is closed: the run has finished")
            seq, records, top = self.counts
            seq += 1
            line = encode_line(event(kind, schema, step, time, self.id, seq, data))
            if kind == RECORD and type(step) is int:
                counts = (seq, records + 1, step if step > top else top)
                self.commit(line, counts, data if schema == METRICS else None)
            else:
                self.commit(line, (seq, records, top), None)
            return seq

    def commit(self, line: bytes, counts: tuple[int, int, int], last: dict[str, Any] | None,
               steps: list[int] | None = None, step: int = 0, written: int = 0, error: int = 0) -> None:
        """Write ``line``, then take its ``counts``, ``last`` metrics and step (the caller holds the lock).

        A :attr:`direct` writer writes with one ``os.write`` (the rest of a
        short write after it), any other through :meth:`put`.

        :param steps: a ``Run``'s counter of automatic steps, advanced past ``step``.
        :param written: bytes of ``line`` the C fast path already wrote (the rest is written here).
        :param error: the errno the C fast path's write of ``line`` failed with (nothing of it written).
        :raises StoreError: when the line cannot be written.
        """
        try:
            if error:
                raise OSError(error, os.strerror(error))
            if written:
                self.put_rest(line, written)
            elif self.direct:
                written = _write(self.fd, line)
                if written != len(line):
                    self.put_rest(line, written)
            else:
                self.put(line)
            self.counts = counts
            if last is not None:
                self.last.update(last)
            if steps is not None and step >= steps[0]:
                steps[0] = step + 1
        except BaseException as exc:
            self.recover(exc, line, counts, last, steps, step)
            raise

    def recover(self, exc: BaseException, line: bytes, counts: tuple[int, int, int], last: dict[str, Any] | None,
                steps: list[int] | None = None, step: int = 0) -> None:
        """Settle the counts after writing ``line`` raised ``exc`` (the caller holds the lock, then re-raises).

        A KeyboardInterrupt may land after ``os.write`` returned and before
        the counts were taken: they are taken here if the line is in the file,
        so that the next line never reuses a sequence number and the finish
        event counts every record. The counts are one
        tuple, replaced by one store; the rest may safely run twice.

        :param steps: the caller's counter of automatic steps, advanced past ``step``.
        :raises StoreError: for an ``OSError`` of the write itself (nothing of the line was written).
        """
        if self.counts is counts or self._ends_with(line):
            self.counts = counts
            if last is not None:
                self.last.update(last)
            if steps is not None and step >= steps[0]:
                steps[0] = step + 1
        elif isinstance(exc, OSError):
            self._failed(line, 0, exc)

    def _ends_with(self, line: bytes) -> bool:
        """Whether the segment file ends with ``line`` (its seq makes it unique in the file)."""
        try:
            with open(self.hidden_path or self.path, "rb") as f:
                f.seek(-len(line), os.SEEK_END)
                return f.read() == line
        except OSError:
            return False

    def put(self, line: bytes) -> None:
        """Write one whole line (the caller holds the lock), then fsync if asked.

        The fast path of a record writes with one ``os.write`` itself when
        :attr:`direct` is true, and calls this otherwise.
        """
        if self.closed:
            raise StoreError(f"writer {self.id} is closed: the run has finished")
        if self.torn:
            line = b"\n" + line  # end the fragment a failed write left behind
        self.put_rest(line, 0)
        if self.fsync:
            try:
                os.fsync(self.fd)
            except OSError as exc:
                raise StoreError(f"cannot fsync {self.path}: {exc.strerror or exc} (the line was written "
                                 "but may not be on the disk)") from None

    def put_rest(self, line: bytes, written: int) -> None:
        """Write what is left of ``line`` after its first ``written`` bytes."""
        try:
            while written < len(line):
                written += _write(self.fd, line[written:])
        except OSError as exc:
            self._failed(line, written, exc)
        if self.torn:
            self.torn = False
            self.direct = not self.fsync

    def _failed(self, line: bytes, written: int, exc: OSError) -> NoReturn:
        """Take back a line cut off part-way, and raise.

        A full disk (ENOSPC, or EFBIG past a file size limit) can take the
        first part of a line and refuse the rest. Those bytes are cut off
        again (only this failed, unacknowledged line's), so the segment holds
        no partial line and the next line can follow it once there is room.
        If even that fails, the next line starts with a newline, which ends
        the fragment as a line of its own that readers report.
        """
        if 0 < written < len(line):
            try:
                os.ftruncate(self.fd, os.fstat(self.fd).st_size - written)
            except OSError:
                self.torn = True
                self.direct = False
        raise StoreError(f"cannot append to {self.path}: {exc.strerror or exc}") from None

    def touch(self) -> None:
        """Refresh the segment's modification time (the heartbeat for other hosts)."""
        try:
            os.utime(self.fd)
        except OSError:
            pass

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self.lock:
            if not self.closed:
                self.closed = True
                self.direct = False
                close_quietly(self.fd)


_fork_hook_installed = False
_fork_callbacks: list[Callable[[], None]] = []


def _ensure_fork_hook() -> None:
    global _fork_hook_installed
    if not _fork_hook_installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork)
        _fork_hook_installed = True


def on_fork_in_child(callback: Callable[[], None]) -> None:
    """Call ``callback()`` in a forked child, after its writers are marked stale (once per callback)."""
    _ensure_fork_hook()
    if callback not in _fork_callbacks:
        _fork_callbacks.append(callback)


def _after_fork() -> None:
    # A forked child must not share its parent's segment: each of its writers
    # is marked stale and opens a segment of its own on the next write.
    for w in list(_writers):
        w.lock = Lock()
        w.stale = True
    for callback in _fork_callbacks:
        callback()


class Heartbeat:
    """A daemon thread that refreshes the mtime of every open segment.

    Readers on another host call a run ``crashed`` when its unfinished
    segments have not changed for ``[store] heartbeat_timeout`` seconds.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.writers: weakref.WeakSet[SegmentWriter] = weakref.WeakSet()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def add(self, writer: SegmentWriter) -> None:
        """Keep ``writer``'s segment fresh until it closes."""
        with self._lock:
            self.writers.add(writer)
            if self._thread is None or not self._thread.is_alive():
                self._wake = threading.Event()
                self._thread = threading.Thread(target=self._loop, args=(self._wake,), name="tracker-heartbeat",
                                                daemon=True)
                self._thread.start()

    def discard(self, writer: SegmentWriter) -> None:
        """Stop refreshing ``writer``; without an open writer left, the thread ends before this returns."""
        with self._lock:
            self.writers.discard(writer)
            if any(not w.closed for w in self.writers):
                return
            thread, self._thread = self._thread, None
            self._wake.set()
        # No tracker thread outlives the last open run of the process.
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)

    def _loop(self, wake: threading.Event) -> None:
        while not wake.wait(self.interval):
            for w in list(self.writers):
                if w.closed:
                    self.writers.discard(w)
                elif w.pid == os.getpid():
                    w.touch()
