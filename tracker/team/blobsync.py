"""The blobs step of ``tracker sync``: each synced run's blobs uploaded to the team's bucket, what is there skipped.

What the bucket holds is learned from one listing of ``sha256/`` per sync (a
run with one unknown blob asks with one HEAD instead); a listing older than a
minute (``--follow``) is checked again blob by blob with HEAD before an
upload. Uploads go through :meth:`tracker.team.blobs.BucketBlobs.upload`
(hashed while sent; multipart for large blobs, completed only at the end). A
bucket that is down is reported and tried again on a later pass; the local
blobs are never touched.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from tracker.capture.mediafile import MEDIA_SCHEMAS
from tracker.core.errors import StoreError, TrackerError
from tracker.team.blobs import BucketBlobs, BucketError, blobs_url

#: Seconds after a failed request to the bucket before a sync in ``--follow`` tries again.
RETRY_AFTER = 5.0
#: Seconds a listing of the bucket is taken as what it holds (after that, a new blob is asked about by HEAD).
LISTING_TRUSTED = 60.0

@attrs.define
class BlobReport:
    """What a sync did with blobs.

    :ivar uploaded: blobs uploaded; :ivar uploaded_bytes: their bytes.
    :ivar present: blobs the bucket already held (skipped).
    :ivar not_local: blobs a run names that are not in the store's blob folder (references to outside files).
    :ivar failed: blobs that could not be uploaded (retried by the next sync); :ivar errors: their messages.
    :ivar pending: runs whose blobs are not all in the bucket yet (the next sync tries again).
    :ivar listings: listings of the bucket; :ivar heads: HEAD requests.
    """

    url: str = ""
    uploaded: int = 0
    uploaded_bytes: int = 0
    present: int = 0
    not_local: int = 0
    failed: int = 0
    pending: int = 0
    listings: int = 0
    heads: int = 0
    errors: list[str] = attrs.Factory(list)


#: The schemas whose records name blobs (``references`` reads these).
_NAMING_BLOBS = frozenset({"artifact", "image", "table", "environment", *MEDIA_SCHEMAS})


class BlobSync:
    """Uploads the blobs of synced runs; one instance per ``tracker sync`` (see the module's docstring).

    :param store: the folder store being synced.
    :param bucket: the bucket.
    :param progress: ``progress(total_bytes, label)`` -> a context manager whose value has ``update(n)``
        (the CLI's progress bar), or ``None``.
    """

    def __init__(self, store: Any, bucket: BucketBlobs,
                 progress: Callable[[int, str], Any] | None = None) -> None:
        self.store = store
        self.bucket = bucket
        self.progress = progress
        self.report = BlobReport(url=bucket.shown)
        #: sha -> size of what the bucket is known to hold.
        self.known: dict[str, int] = {}
        self.listed_at: float | None = None
        #: run id -> the signature of its segments when its blobs were last handled.
        self.done: dict[str, tuple] = {}
        self.failed_at = 0.0
        self.pending: set[str] = set()
        self.not_local: set[str] = set()

    def _signature(self, rid: str) -> tuple:
        run_dir = Path(self.store.path) / "runs" / rid
        sig = []
        try:
            for p in sorted(run_dir.iterdir()):
                if p.suffix == ".jsonl":
                    st = p.stat()
                    sig.append((p.name, st.st_size, st.st_mtime_ns))
        except OSError:
            pass
        return tuple(sig)

    def wanted(self, rid: str) -> list[tuple[str, Path, int]]:
        """The blobs run ``rid`` references that the store's blob folder holds: ``(sha, path, size)``."""
        from tracker.capture.blobs import BlobStore, references

        view = self.store.run(rid)
        if not _NAMING_BLOBS.intersection(view.schemas()):
            return []
        local = BlobStore(self.store.path)
        out = []
        for sha in sorted(references(view)):
            p = local.path(sha)
            try:
                out.append((sha, p, p.stat().st_size))
            except OSError:
                self.not_local.add(sha)
                self.report.not_local = len(self.not_local)
        return out

    def sync_run(self, rid: str) -> None:
        """Upload what run ``rid`` references and the bucket lacks (nothing when the run did not change)."""
        sig = self._signature(rid)
        if self.done.get(rid) == sig:
            return
        self.pending.add(rid)
        self.report.pending = len(self.pending)
        if self.failed_at and time.monotonic() - self.failed_at < RETRY_AFTER:
            return  # the bucket failed a moment ago (the client retried already): a later pass tries again
        try:
            wanted = self.wanted(rid)
        except TrackerError as exc:
            self._fail(f"run {rid}: {exc}")
            return
        unknown = [w for w in wanted if self.known.get(w[0]) != w[2]]
        fresh = self.listed_at is not None and time.monotonic() - self.listed_at < LISTING_TRUSTED
        if unknown and self.listed_at is None:
            try:
                if len(unknown) == 1:
                    size = self.bucket.head(unknown[0][0])
                    self.report.heads += 1
                    if size is not None:
                        self.known[unknown[0][0]] = size
                else:
                    self.known.update(self.bucket.listing())
                    self.report.listings += 1
                    self.listed_at = time.monotonic()
            except StoreError as exc:
                self._fail(f"run {rid}: {exc}")
                return
        elif unknown and not fresh:
            # Listed a while ago (--follow): a blob logged since is asked about alone, before any upload.
            for sha, _p, _size in unknown:
                if sha in self.known:
                    continue
                try:
                    size = self.bucket.head(sha)
                except StoreError as exc:
                    self._fail(f"run {rid}: {exc}")
                    return
                self.report.heads += 1
                if size is not None:
                    self.known[sha] = size
        todo = [w for w in wanted if self.known.get(w[0]) != w[2]]
        self.report.present += len(wanted) - len(todo)
        if self._upload(rid, todo):
            self.done[rid] = sig
            self.pending.discard(rid)
        self.report.pending = len(self.pending)

    def _upload(self, rid: str, todo: list[tuple[str, Path, int]]) -> bool:
        if not todo:
            return True
        total = sum(w[2] for w in todo)
        bar_cm = self.progress(total, f"blobs of {rid}") if self.progress is not None else contextlib.nullcontext()
        ok = True
        with bar_cm as bar:
            update = bar.update if bar is not None else None
            for sha, path, size in todo:
                try:
                    self.bucket.upload(sha, path, size, update)
                except BucketError as exc:
                    self._fail(f"run {rid}: {exc}")
                    return False  # the bucket is down: the rest waits for the next pass
                except StoreError as exc:
                    self._fail(f"run {rid}: {exc}")
                    ok = False
                    continue
                self.known[sha] = size
                self.report.uploaded += 1
                self.report.uploaded_bytes += size
        return ok

    def _fail(self, message: str) -> None:
        self.report.failed += 1
        self.failed_at = time.monotonic()
        if message not in self.report.errors:
            self.report.errors.append(message)



def open_blob_sync(store: Any, url: str | None = None,
                   progress: Callable[[int, str], Any] | None = None) -> BlobSync | None:
    """The uploader of ``tracker sync``: for ``url``, else ``TRACKER_TEAM_BLOBS`` or ``[team] blobs``; ``None``
    when none is set."""
    if url is None:
        config = getattr(getattr(store, "host", None), "config", None)
        url = blobs_url(config)
    if not url:
        return None
    bucket = BucketBlobs(url)
    _ = bucket.client  # a bad URL or a missing obstore is one line now, before any record is synced
    return BlobSync(store, bucket, progress)


__all__ = ["BlobReport", "BlobSync", "open_blob_sync"]
