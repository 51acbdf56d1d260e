"""The write path: each process appends the events of a run to a segment of its own.

A line goes to the file with one ``os.write`` on an ``O_APPEND`` file
descriptor before the logging call returns, so it survives a kill -9 of the
process (``fsync`` is an option, for power loss). The lines are those of
:mod:`tracker.format`; this module knows nothing of plugins, and of schemas
only that a record's data must encode.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
import weakref
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import orjson

from .errors import StoreError
from .format import (
    SEGMENT_SUFFIX,
    encode_line,
    encode_nonfinite,
    event,
    record_template,
)
from .segment import hostname, process_start

_dumps = orjson.dumps
_crc32 = zlib.crc32
_write = os.write


def _safe_host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", hostname())[:32] or "host"


_writers: weakref.WeakSet[SegmentWriter] = weakref.WeakSet()


def _fsync_folder(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        self.lock = threading.Lock()
        self._open(hidden)
        _writers.add(self)
        _ensure_fork_hook()

    def _open(self, hidden: bool = False) -> None:
        """Create this process's segment; ``hidden``: under a name readers skip, until :meth:`reveal`."""
        self.pid = os.getpid()
        self.id = f"{_safe_host()}-{self.pid}-{secrets.token_hex(3)}"
        self.path = self.run_dir / f"{self.id}{SEGMENT_SUFFIX}"
        self.hidden_path = self.run_dir / f".{self.id}{SEGMENT_SUFFIX}.part" if hidden else None
        try:
            self.fd = os.open(self.hidden_path or self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL,
                              0o644)
            if self.fsync:
                # A file fsynced is found after a power loss only if the folder entries naming it
                # are on the disk too: the segment's (in the run folder), the run folder's, runs/.
                for folder in (self.run_dir, self.run_dir.parent, self.run_dir.parent.parent):
                    _fsync_folder(folder)
        except OSError as exc:
            raise StoreError(f"cannot create {self.path}: {exc.strerror}") from None
        self.seq = 0
        self.torn = False
        self.stale = False
        self.closed = False
        self._envs: dict[str, dict[str, Any]] = {}

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
                _fsync_folder(self.run_dir)
        except OSError as exc:
            raise StoreError(f"cannot create {self.path}: {exc.strerror}") from None
        self.hidden_path = None

    def moved(self, run_dir: Path) -> None:
        """The segment's folder was renamed to ``run_dir`` (a new run's staging folder put in place)."""
        self.run_dir = run_dir
        self.path = run_dir / self.path.name
        if self.fsync:
            try:
                _fsync_folder(run_dir.parent)
            except OSError as exc:
                raise StoreError(f"cannot sync {run_dir.parent}: {exc.strerror}") from None

    def discard(self) -> None:
        """Close and remove a segment that never got its first line (its run was not started after all)."""
        self.close()
        try:
            os.unlink(self.hidden_path or self.path)
        except OSError:
            pass

    def append(self, kind: str, schema: str | None, step: int | None, time: float,
               data: dict[str, Any]) -> int:
        """Write one event; returns its sequence number once the line is in the file.

        :raises StoreError: when the line cannot be written (full disk, closed writer).
        :raises SchemaError: when the data cannot be encoded; nothing is written.
        """
        with self.lock:
            if self.closed:
                raise StoreError(f"writer {self.id} is closed: the run has finished")
            seq = self.seq + 1
            line = encode_line(event(kind, schema, step, time, self.id, seq, data))
            self._put(line)
            self.seq = seq
            return seq

    def record_env(self, schema: str) -> dict[str, Any]:
        """The event dict this writer fills in for each record of ``schema`` (see :meth:`append_record`)."""
        env = self._envs.get(schema)
        if env is None:
            env = self._envs[schema] = record_template(schema, self.id)
        return env

    def append_record(self, env: dict[str, Any], step: int, time: float, data: dict[str, Any],
                      option: int = 0) -> int:
        """Write one record: the logging fast path (issue 6).

        ``env`` is this writer's :meth:`record_env` of the record's schema,
        filled in under the lock and encoded with one ``orjson.dumps``, so the
        line is the one :meth:`append` writes, byte for byte, without building
        an event.

        :param step: the record's step (an int within ±2**53).
        :param time: seconds since the epoch.
        :param data: the record's checked fields (``run.log`` passes values
            checked by type only, with ``option=STRICT``).
        :param option: orjson options for the encoding.
        :returns: the record's sequence number, once the line is in the file.
        :raises TypeError: when orjson refuses ``data`` under ``option``; nothing is written.
        :raises StoreError: when the line cannot be written (full disk, closed writer).
        """
        lock = self.lock
        lock.acquire()
        try:
            seq = self.seq + 1
            env["step"] = step
            env["time"] = time
            env["seq"] = seq
            env["data"] = data
            head = _dumps(env, option=option)[:-1]
            # orjson writes NaN and infinities as null, and a record's event
            # holds no other null where a float goes: only such lines are
            # encoded twice. (``rfind`` costs half of ``in`` on bytes.)
            if head.rfind(b"null") >= 0:
                head = _dumps(dict(env, data=encode_nonfinite(data)), option=option)[:-1]
            line = head + b',"crc":"%08x"}\n' % _crc32(head)
            if self.closed or self.torn or self.fsync:
                self._put(line)
            else:
                # The common case, inline: one write(2) of the whole line.
                try:
                    written = _write(self.fd, line)
                except OSError as exc:
                    self._failed(line, 0, exc)
                if written != len(line):
                    self._put_rest(line, written)
            self.seq = seq
            return seq
        finally:
            lock.release()

    def _put(self, line: bytes) -> None:
        """Write one whole line (the caller holds the lock), then fsync if asked."""
        if self.closed:
            raise StoreError(f"writer {self.id} is closed: the run has finished")
        if self.torn:
            line = b"\n" + line  # end the fragment a failed write left behind
        self._put_rest(line, 0)
        if self.fsync:
            try:
                os.fsync(self.fd)
            except OSError as exc:
                raise StoreError(f"cannot fsync {self.path}: {exc.strerror or exc} (the line was written "
                                 "but may not be on the disk)") from None

    def _put_rest(self, line: bytes, written: int) -> None:
        """Write what is left of ``line`` after its first ``written`` bytes."""
        try:
            while written < len(line):
                written += _write(self.fd, line[written:])
        except OSError as exc:
            self._failed(line, written, exc)
        self.torn = False

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
                try:
                    os.close(self.fd)
                except OSError:
                    pass


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
        w.lock = threading.Lock()
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

    def add(self, writer: SegmentWriter) -> None:
        """Keep ``writer``'s segment fresh until it closes."""
        self.writers.add(writer)
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="tracker-heartbeat", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._wake.wait(self.interval):
            for w in list(self.writers):
                if w.closed:
                    self.writers.discard(w)
                elif w.pid == os.getpid():
                    w.touch()
