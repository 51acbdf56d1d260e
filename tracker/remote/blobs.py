"""The blobs of a ``tracker server`` (``GET /api/v1/blobs/sha256/{hex}``), read checked: the ``BlobReader`` of
:class:`tracker.remote.reading.RemoteStore`.

A blob is streamed into the local blob cache (``TRACKER_BLOB_CACHE``, the one the team bucket's blobs
use) under a temporary name while its size and SHA-256 are computed, and kept only when both match; a
mismatch is a :class:`StoreError` naming the blob and the server, and nothing damaged is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

from tracker.core.errors import StoreError
from tracker.team.blobs import CachedReads, cache_folder, cache_keep, cache_temp, cached_copy

API = "/api/v1"
_SHA_HEX = frozenset("0123456789abcdef")


class RemoteBlobs(CachedReads):
    """The server's blobs by SHA-256 (the reading protocol's ``BlobReader``), fetched into a local cache.

    :param store: the store whose session asks.
    :param cache: where fetched blobs are kept (default: the team blobs' cache, ``TRACKER_BLOB_CACHE``).
    """

    def __init__(self, store: Any, cache: Path | None = None) -> None:
        self.store = store
        self.cache = cache_folder() if cache is None else Path(cache)

    def __repr__(self) -> str:
        return f"RemoteBlobs({self.store.path!r})"

    @staticmethod
    def _check(sha: str) -> str:
        if not isinstance(sha, str) or len(sha) != 64 or not set(sha) <= _SHA_HEX:
            raise StoreError(f"blob {str(sha)[:80]!r}: expected a SHA-256 as 64 lowercase hex digits")
        return sha

    def where(self, sha: str) -> str:
        """The blob's address on the server, as messages show it."""
        return f"{self.store.path}{API}/blobs/sha256/{sha}"

    def path(self, sha: str) -> Path:
        """Where the blob of ``sha`` is kept once fetched."""
        return self.cache / "sha256" / sha[:2] / sha[2:]

    def exists(self, sha256: str) -> bool:
        """Whether the server holds the blob (one HEAD)."""
        resp = self.store.session.request("HEAD", f"{API}/blobs/sha256/{self._check(sha256)}", ok=(404,))
        return resp.status < 300

    def fetch(self, sha: str, size: int | None = None) -> Path:
        """A local file holding the blob: from the cache, else streamed from the server and checked.

        Written under a temporary name while its size and SHA-256 are computed, and renamed into the
        cache only when both match.

        :raises StoreError: naming the blob when the server has none, or sent bytes that do not match.
        """
        from tracker.remote.session import RemoteError

        final = self.path(self._check(sha))
        if cached_copy(final, size):
            return final
        tmp = cache_temp(self.cache)
        h = hashlib.sha256()
        n = 0
        try:
            try:
                with self.store.session.stream("GET", f"{API}/blobs/sha256/{sha}", ok=(404,)) as resp:
                    if resp.status == 404:
                        raise StoreError(f"blob {sha} is missing from {self.store.path}")
                    with open(tmp, "wb") as f:
                        while True:
                            block = resp.read(1 << 20)
                            if not block:
                                break
                            h.update(block)
                            f.write(block)
                            n += len(block)
            except RemoteError as exc:
                raise StoreError(f"blob {sha}: {exc}") from None
            except OSError as exc:
                raise StoreError(f"blob {sha}: reading {self.where(sha)} was cut off after {n} bytes ({exc})") \
                    from None
            digest = h.hexdigest()
            if digest != sha or (size is not None and n != size):
                want = f"{size} bytes hashing to its name" if size is not None else "bytes hashing to its name"
                raise StoreError(f"blob {sha} from {self.where(sha)} is damaged: its {n} bytes hash to {digest} "
                                 f"(expected {want}); not kept")
            cache_keep(tmp, final)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return final


__all__ = ["RemoteBlobs"]
