"""Hashing while copying: SHA-256 of a file's bytes computed as they are copied (by the kernel or by a read loop,
a worker thread hashing right behind), a reader that checks a blob's hash as it is read, and a blob's problems.

Split from :mod:`tracker.capture.blobs` (which re-exports every name here); what lives here never names a store.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tracker.core.errors import StoreError
from tracker.core.files import NotAFileError, open_regular

#: Bytes per read while copying and hashing.
CHUNK = 1 << 22
#: Files smaller than this are hashed and written in the calling thread.
THREAD_MIN = 1 << 24


class _Hasher:
    """SHA-256 of chunks handed over one at a time, computed on a worker thread."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self._todo: Any = None
        self._ready = threading.Semaphore(0)
        self._done = threading.Semaphore(1)
        self._thread = threading.Thread(target=self._loop, name="tracker-blob-hash", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            self._ready.acquire()
            data = self._todo
            if data is None:
                return
            self.h.update(data)
            self._todo = None
            self._done.release()

    def feed(self, data: memoryview) -> None:
        """Hash ``data`` in the background (waits for the previous chunk first)."""
        self._done.acquire()
        self._todo = data
        self._ready.release()

    def wait(self) -> None:
        """Wait for the chunk in progress."""
        self._done.acquire()
        self._done.release()

    def close(self) -> str:
        """Stop the worker; the hex digest of everything fed."""
        self._done.acquire()
        self._todo = None
        self._ready.release()
        self._thread.join()
        return self.h.hexdigest()


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        n = os.write(fd, data)
        data = data[n:]


def copy_hashing(src: IO[bytes], dst_fd: int | None, size_hint: int = 0) -> tuple[str, int]:
    """Copy ``src`` to ``dst_fd`` (or only read it, when ``None``) and hash it: ``(sha256, size)``.

    Each byte is read once; the hash is of exactly the bytes written.
    """
    if size_hint < THREAD_MIN:
        h = hashlib.sha256()
        total = 0
        buf = bytearray(CHUNK)
        mv = memoryview(buf)
        while True:
            n = src.readinto(buf)
            if not n:
                break
            h.update(mv[:n])
            if dst_fd is not None:
                _write_all(dst_fd, mv[:n])
            total += n
        return h.hexdigest(), total
    # Two buffers: the worker hashes one while this thread writes it, then reads into the other.
    hasher = _Hasher()
    bufs = [bytearray(CHUNK), bytearray(CHUNK)]
    i = 0
    total = 0
    try:
        while True:
            buf = bufs[i]
            n = src.readinto(buf)
            if not n:
                break
            part = memoryview(buf)[:n]
            hasher.feed(part)
            if dst_fd is not None:
                _write_all(dst_fd, part)
            total += n
            # The next read goes to the other buffer; this one is read again only after the
            # worker is done with it (feed waits for the previous chunk).
            i ^= 1
    finally:
        sha = hasher.close()
    return sha, total


class CheckedReader(IO[bytes]):
    """A read-only binary file that hashes what is read and raises at the end when the hash is not ``sha``."""

    def __init__(self, raw: IO[bytes], sha: str, what: str) -> None:
        self._raw, self._sha, self._what = raw, sha, what
        self._hash: Any = hashlib.sha256()
        self._checked = False

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        if self._hash is not None:
            self._hash.update(data)
            if not data or n is None or n < 0:
                self._finish()
        return data

    def _finish(self) -> None:
        digest, self._hash = self._hash.hexdigest(), None
        if digest != self._sha:
            raise StoreError(f"{self._what}: its bytes hash to {digest}, not {self._sha} (damaged; not served)")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self._raw.close()

    @property
    def closed(self) -> bool:
        return self._raw.closed

    def __enter__(self) -> CheckedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self.read(1 << 20):
            yield chunk


class _NoKernelCopy(Exception):
    """``copy_file_range`` is not available between these two files (nothing was copied)."""


def kernel_copy_hashing(src_fd: int, dst_fd: int) -> tuple[str, int]:
    """Copy with ``os.copy_file_range`` (in the kernel) while a worker thread hashes what landed in ``dst_fd``.

    The hash is computed from the destination's bytes (read back from the
    page cache right behind the copy), so the blob is named by exactly what
    it holds even if the source changes meanwhile. ``dst_fd`` must be open
    for reading too.

    :raises _NoKernelCopy: the kernel refuses the copy before any byte moved.
    """
    import queue

    todo: queue.SimpleQueue = queue.SimpleQueue()
    h = hashlib.sha256()
    failed: list[BaseException] = []

    def hasher() -> None:
        buf = bytearray(CHUNK)
        mv = memoryview(buf)
        try:
            while True:
                item = todo.get()
                if item is None:
                    return
                off, n = item
                while n:
                    got = os.preadv(dst_fd, [mv[:min(n, CHUNK)]], off)
                    if not got:
                        raise OSError(f"the copy is shorter than written at offset {off}")
                    h.update(mv[:got])
                    off += got
                    n -= got
        except BaseException as exc:  # noqa: BLE001 - handed to the copying thread
            failed.append(exc)

    total = 0
    try:
        n = os.copy_file_range(src_fd, dst_fd, CHUNK, 0, 0)
    except OSError as exc:
        raise _NoKernelCopy(str(exc)) from None
    worker = threading.Thread(target=hasher, name="tracker-blob-hash", daemon=True)
    worker.start()
    try:
        while n:
            todo.put((total, n))
            total += n
            if failed:
                break
            n = os.copy_file_range(src_fd, dst_fd, CHUNK, total, total)
    finally:
        todo.put(None)
        worker.join()
    if failed:
        raise failed[0]
    return h.hexdigest(), total


def hash_file(path: str | os.PathLike[str]) -> tuple[str, int]:
    """``(sha256, size)`` of a file, read once.

    :raises NotAFileError: ``path`` is a FIFO, socket, device or folder (nothing is read).
    """
    with open_regular(path) as f:
        return copy_hashing(f, None, os.fstat(f.fileno()).st_size)


def file_problem(path: Path, sha: str) -> tuple[str | None, int]:
    """What is wrong with ``path`` as the blob of ``sha`` (``None`` when its bytes hash to it), and its size."""
    try:
        got, size = hash_file(path)
    except NotAFileError as exc:
        return f"blob {exc}", 0
    except FileNotFoundError:
        return f"blob {path} is missing", 0
    except OSError as exc:
        return f"blob {path} cannot be read: {exc.strerror}", 0
    if got != sha:
        return f"blob {path} is damaged: its content hashes to {got}", size
    return None, size
