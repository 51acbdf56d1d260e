"""The file that holds derived data: a checked header, then arrays, written under a temporary name.

Layout::

    b"TRKIDX1\\n"  8-byte little-endian header length  header JSON  padding to 8
    arrays, each at the offset its header entry gives, 8-byte aligned

The header names every array with its dtype, offset, byte length and CRC-32,
and carries the CRC-32 of its own JSON, so that a damaged, foreign, truncated
or half-written file is recognised (:class:`Damaged`) and never read as data.
Files are written under a temporary name in the same folder, then renamed,
so a reader sees the old file or the new one, never a part.
"""

from __future__ import annotations

import os
import secrets
import struct
import zlib
from pathlib import Path
from typing import Any

import orjson

try:  # ISA-L's CRC-32: the same checksum as zlib's, about 6x faster over a column (benchmarks/RESULTS.md)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - a platform without the wheel: zlib's
    from zlib import crc32 as _crc32

MAGIC = b"TRKIDX1\n"
_LEN = struct.Struct("<QI")  # header length, header CRC-32


class Damaged(Exception):
    """A derived file that cannot be trusted; the message says why."""


def write(path: Path, header: dict[str, Any], arrays: dict[str, bytes | memoryview]) -> Placed:
    """Write ``header`` and ``arrays`` to ``path`` atomically (temporary name, then rename).

    :returns: where the file put each array, and the file's identity as written.
    :raises OSError: when the folder cannot be written (the caller reads without writing).
    """
    table: dict[str, list[Any]] = {}
    offset = 0
    blobs = []
    for key, data in arrays.items():
        view = memoryview(data).cast("B")
        table[key] = [offset, view.nbytes, _crc32(view)]
        blobs.append(view)
        pad = -view.nbytes % 8
        if pad:
            blobs.append(memoryview(bytes(pad)))
        offset += view.nbytes + pad
    head = orjson.dumps({**header, "arrays": table})
    start = len(MAGIC) + _LEN.size + len(head)
    start_pad = -start % 8
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC + _LEN.pack(len(head), zlib.crc32(head)) + head + bytes(start_pad))
            for b in blobs:
                f.write(b)
            f.flush()
            st = os.fstat(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return Placed((st.st_ino, st.st_mtime_ns, st.st_size), start + start_pad,
                  {k: (v[0], v[1]) for k, v in table.items()})


class Placed:
    """Where a file's arrays lie: ``identity`` (inode, mtime in ns, size: the file as written), ``base``
    (where the arrays begin) and ``arrays`` (name -> offset from ``base``, byte length)."""

    __slots__ = ("identity", "base", "arrays")

    def __init__(self, identity: tuple[int, int, int], base: int, arrays: dict[str, tuple[int, int]]) -> None:
        self.identity, self.base, self.arrays = identity, base, arrays


class Reader:
    """An open derived file: its header, and its arrays read on demand, each checked by its CRC.

    :raises Damaged: a file that is not one of ours, or whose header is damaged.
    :raises OSError: a file that cannot be opened (missing: ``FileNotFoundError``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        try:
            st = os.fstat(self.fd)
            self.size = st.st_size
            first = os.pread(self.fd, 4096, 0)
            if first[:len(MAGIC)] != MAGIC or len(first) < len(MAGIC) + _LEN.size:
                raise Damaged("not a tracker index file (no header)")
            hlen, hcrc = _LEN.unpack_from(first, len(MAGIC))
            start = len(MAGIC) + _LEN.size
            if start + hlen > self.size:
                raise Damaged("truncated header")
            head = first[start:start + hlen]
            if len(head) < hlen:
                head = os.pread(self.fd, hlen, start)
            if zlib.crc32(head) != hcrc:
                raise Damaged("header checksum mismatch")
            try:
                header = orjson.loads(head)
            except orjson.JSONDecodeError:
                raise Damaged("header is not JSON") from None
            if type(header) is not dict or type(header.get("arrays")) is not dict:
                raise Damaged("header without an array table")
            self.base = start + hlen + (-(start + hlen) % 8)
            #: the file's inode, mtime in ns and size, as opened
            self.identity = (st.st_ino, st.st_mtime_ns, st.st_size)
            self.header = header
            self.arrays: dict[str, list[int]] = header["arrays"]
            for key, entry in self.arrays.items():
                if (type(entry) is not list or len(entry) != 3 or not all(type(x) is int for x in entry)
                        or entry[0] < 0 or entry[1] < 0 or self.base + entry[0] + entry[1] > self.size):
                    raise Damaged(f"array {key!r} lies outside the file")
        except BaseException:
            os.close(self.fd)
            raise

    def has(self, key: str) -> bool:
        return key in self.arrays

    def read(self, key: str) -> bytearray:
        """The bytes of array ``key`` (a fresh, writable buffer), checked against its CRC-32.

        :raises Damaged: a missing array or a CRC mismatch.
        """
        offset, nbytes, crc = self._entry(key)
        buf = bytearray(nbytes)
        self._fill(key, memoryview(buf), offset, crc)
        return buf

    def read_array(self, key: str) -> Any:
        """Array ``key`` as a fresh, writable numpy ``uint8`` array, checked against its CRC-32.

        Not zeroed first (every byte is read from the file): for columns, where zeroing and then
        overwriting a million values would cost as much as reading them.

        :raises Damaged: a missing array or a CRC mismatch.
        """
        import numpy as np  # here, not at the top: listing runs reads the catalog without numpy

        offset, nbytes, crc = self._entry(key)
        buf = np.empty(nbytes, np.uint8)
        self._fill(key, memoryview(buf), offset, crc)
        return buf

    def _entry(self, key: str) -> list[int]:
        entry = self.arrays.get(key)
        if entry is None:
            raise Damaged(f"no array {key!r}")
        return entry

    def _fill(self, key: str, view: memoryview, offset: int, crc: int) -> None:
        got, nbytes = 0, view.nbytes
        while got < nbytes:
            n = os.preadv(self.fd, [view[got:]], self.base + offset + got)
            if n <= 0:
                raise Damaged(f"array {key!r} is cut short")
            got += n
        if _crc32(view) != crc:
            raise Damaged(f"array {key!r} checksum mismatch")

    def verify(self, key: str, chunk: int = 1 << 20) -> None:
        """Check array ``key`` against its CRC-32, reading it in chunks (memory stays flat).

        :raises Damaged: a missing array or a CRC mismatch.
        """
        entry = self.arrays.get(key)
        if entry is None:
            raise Damaged(f"no array {key!r}")
        offset, nbytes, crc = entry
        got = 0
        pos = 0
        while pos < nbytes:
            data = os.pread(self.fd, min(chunk, nbytes - pos), self.base + offset + pos)
            if not data:
                raise Damaged(f"array {key!r} is cut short")
            got = _crc32(data, got)
            pos += len(data)
        if got != crc:
            raise Damaged(f"array {key!r} checksum mismatch")

    def read_range(self, key: str, start: int, nbytes: int) -> Any:
        """``nbytes`` bytes of array ``key`` from byte ``start`` as a numpy ``uint8`` array, not zeroed first
        (the array was checked by :meth:`verify` beforehand)."""
        import numpy as np

        offset, total, _ = self.arrays[key]
        nbytes = max(0, min(nbytes, total - start))
        buf = np.empty(nbytes, np.uint8)
        view = memoryview(buf)
        got = 0
        while got < nbytes:
            n = os.preadv(self.fd, [view[got:]], self.base + offset + start + got)
            if n <= 0:
                raise Damaged(f"array {key!r} is cut short")
            got += n
        return buf

    def read_bytes(self, key: str, start: int, nbytes: int) -> bytes:
        """``nbytes`` bytes of array ``key`` from byte ``start``, not checked (a slice of a big array that the
        caller parses and checks itself, e.g. one run's JSON text of the catalog)."""
        offset, total, _ = self._entry(key)
        nbytes = max(0, min(nbytes, total - start))
        data = os.pread(self.fd, nbytes, self.base + offset + start)
        if len(data) != nbytes:
            raise Damaged(f"array {key!r} is cut short")
        return data

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
