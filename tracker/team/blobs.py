"""Blobs in object storage: a lab's artifacts and images in one bucket, by SHA-256, through obstore.

``[team] blobs = "s3://bucket/prefix"`` (also ``gs://``, ``az://``,
``file:///path``) names the bucket; each blob is the object
``<prefix>/sha256/<2 hex>/<62 hex>``, exactly the layout of a store's blob
folder, so the same content logged on many machines is stored once.

Writing (``tracker sync``, :mod:`tracker.team.blobsync`) uploads every blob a synced
run references. One listing of ``sha256/`` per sync tells what the bucket
holds (a run with one unknown blob asks with one HEAD instead), so a re-sync
of a store whose blobs are all there costs at most one listing, never a
download. A blob is uploaded in one PUT when small and as a multipart upload
when large; obstore completes the multipart upload only after the last part,
and the bytes are hashed while they are sent: if they do not match the
blob's name the upload is aborted. A kill -9 mid-upload therefore leaves no
object (an unfinished multipart upload is invisible; a bucket's lifecycle
rule removes such leftovers), and the next sync uploads what is missing. A
bucket that is down is retried by the client, then reported; the local blob
is never touched.

Reading (:class:`BucketBlobs`, the reading protocol's ``BlobReader``):
objects are streamed into a local cache (``TRACKER_BLOB_CACHE``, else
``$XDG_CACHE_HOME/tracker/blobs`` or ``~/.cache/tracker/blobs``) under a
temporary name while their size and SHA-256 are checked, and renamed to
their hash only when both match: an object whose bytes do not match its key
is never served. The cache keeps at most ``TRACKER_BLOB_CACHE_BYTES`` bytes
(default 10 GiB), least recently used first out; ``tracker gc`` empties it.

Credentials come only from the client libraries' usual environment and files:
for ``s3://`` as the AWS CLI finds them (boto3's chain through obstore's
``Boto3CredentialProvider``: ``AWS_*`` variables, the ``AWS_PROFILE`` profile
of ``~/.aws/credentials`` and ``~/.aws/config`` with its region and
``endpoint_url``, the instance's role; see :func:`aws_options`), else
``GOOGLE_APPLICATION_CREDENTIALS`` and ``AZURE_*``; nothing is stored in the
database and no credential is ever printed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from tracker.core.config import BLOB_SCHEMES
from tracker.core.errors import StoreError, TrackerError

INSTALL_HINT = 'pip install "tracker-core[blobs]"'
#: Objects at least this large are uploaded in parts of this size (multipart upload, obstore's default part);
#: smaller ones in one PUT. Parts grow for objects beyond 9,000 parts (S3 allows 10,000 per upload).
PART = 5 << 20
#: Parts in flight at once during one multipart upload (obstore's default).
CONCURRENCY = 12
#: Default bound of the local cache of fetched blobs.
CACHE_BYTES = 10 << 30
_SHA_RE = re.compile(r"[0-9a-f]{64}")


def object_key(sha: str) -> str:
    """The key of blob ``sha`` under the bucket's prefix: ``sha256/<2 hex>/<62 hex>``."""
    if type(sha) is not str or not _SHA_RE.fullmatch(sha):
        raise StoreError(f"not a sha256 (64 lowercase hex digits): {sha!r}")
    return f"sha256/{sha[:2]}/{sha[2:]}"


def part_size(size: int) -> int:
    """The part size of a multipart upload of ``size`` bytes: :data:`PART`, or whole MiB so that at most
    9,000 parts are sent."""
    return max(PART, -(-size // 9000 // (1 << 20)) << 20 if size > PART * 9000 else PART)


def shown_url(url: str) -> str:
    """``url`` as it may be printed: any ``user:secret@`` part masked."""
    return re.sub(r"^([a-z0-9]+://)[^/@]*@", r"\1***@", url)


def blobs_url(config: Any = None) -> str | None:
    """The bucket of the team's blobs: ``TRACKER_TEAM_BLOBS``, else ``[team] blobs`` of ``config``."""
    env = os.environ.get("TRACKER_TEAM_BLOBS")
    if env:
        if not env.startswith(BLOB_SCHEMES):
            raise TrackerError(f"TRACKER_TEAM_BLOBS: expected a bucket URL starting with {', '.join(BLOB_SCHEMES)}, "
                               f"given {shown_url(env)!r}")
        return env
    return getattr(config, "team_blobs", None)


def cache_folder() -> Path:
    """Where fetched blobs are kept: ``TRACKER_BLOB_CACHE``, else the user's cache folder."""
    env = os.environ.get("TRACKER_BLOB_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tracker" / "blobs"


def cache_limit() -> int:
    """The cache's bound in bytes (``TRACKER_BLOB_CACHE_BYTES``, default 10 GiB)."""
    env = os.environ.get("TRACKER_BLOB_CACHE_BYTES")
    if not env:
        return CACHE_BYTES
    try:
        n = int(env)
    except ValueError:
        n = -1
    if n < 0:
        raise TrackerError(f"TRACKER_BLOB_CACHE_BYTES: expected a whole number of bytes, given {env!r}")
    return n


def _cached_files(root: Path) -> Iterator[os.stat_result | Any]:
    base = root / "sha256"
    try:
        tops = list(os.scandir(base))
    except FileNotFoundError:
        return
    for top in tops:
        if top.is_dir(follow_symlinks=False):
            for e in os.scandir(top.path):
                if e.is_file(follow_symlinks=False):
                    yield e


def clear_cache(root: Path | None = None, *, dry_run: bool = False) -> tuple[int, int]:
    """Empty the cache of fetched blobs (``tracker gc``): ``(files, bytes)`` removed."""
    import shutil

    root = cache_folder() if root is None else root
    files = size = 0
    for e in _cached_files(root):
        files += 1
        with contextlib.suppress(OSError):
            size += e.stat().st_size
    if not dry_run:
        for sub in ("sha256", "tmp"):
            shutil.rmtree(root / sub, ignore_errors=True)
    return files, size


def _obstore() -> Any:
    try:
        import obstore
    except ImportError:
        raise TrackerError(f"[team] blobs needs obstore, which is not installed: {INSTALL_HINT}") from None
    return obstore


def _one_line(exc: BaseException) -> str:
    """The first line of a client error, with anything that looks like a credential removed."""
    text = next((p.strip() for p in str(exc).splitlines() if p.strip()), type(exc).__name__)
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
                 "AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_CLIENT_SECRET", "GOOGLE_SERVICE_ACCOUNT_KEY"):
        secret = os.environ.get(name)
        if secret:
            text = text.replace(secret, "***")
    return text[:300]


def _is_not_found(exc: BaseException) -> bool:
    obstore = _obstore()
    return isinstance(exc, (obstore.exceptions.NotFoundError, FileNotFoundError))


class BucketError(StoreError):
    """The bucket cannot be reached or refused a request (as opposed to a missing or damaged object)."""


class _Damaged(Exception):
    """The local bytes do not hash to their blob's name (the upload is aborted)."""


def aws_options(shown: str) -> dict[str, Any]:
    """How an ``s3://`` bucket is reached, found as the AWS CLI finds it (boto3's own chain, through obstore's
    ``Boto3CredentialProvider``): the credentials of ``AWS_ACCESS_KEY_ID``..., else of the profile
    ``AWS_PROFILE`` (else ``default``) in ``~/.aws/credentials`` and ``~/.aws/config`` (``AWS_SHARED_CREDENTIALS_FILE``,
    ``AWS_CONFIG_FILE``), its SSO, role or process settings, else the container's or instance's role; the region
    the same way; the endpoint of ``AWS_ENDPOINT_URL`` (``AWS_ENDPOINT_URL_S3``) or of the profile's
    ``endpoint_url``, for an S3-compatible server.

    Without boto3 (or when it finds no credentials), obstore's own reading of the environment and of the
    instance's role applies, as before.

    :raises TrackerError: a profile that is named but does not exist, or profiles without boto3 installed.
    """
    try:
        import boto3
        import botocore.exceptions
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:
        if os.environ.get("AWS_PROFILE"):
            raise TrackerError(f"[team] blobs = {shown!r}: AWS_PROFILE is set, and reading AWS profiles needs "
                               f"boto3: {INSTALL_HINT}") from None
        return {}
    try:
        session = boto3.Session()
        provider = Boto3CredentialProvider(session)
    except botocore.exceptions.ProfileNotFound as exc:
        raise TrackerError(f"[team] blobs = {shown!r}: {exc} (AWS_PROFILE; profiles are read from "
                           "~/.aws/credentials and ~/.aws/config)") from None
    except ValueError:  # boto3 found no credentials: obstore looks in the environment and the instance's role
        return {}
    except botocore.exceptions.BotoCoreError as exc:  # a file that does not parse, an SSO token that expired
        raise TrackerError(f"[team] blobs = {shown!r}: the AWS credentials cannot be read: {exc}") from None
    out: dict[str, Any] = {"credential_provider": provider}
    try:
        endpoint = session.client("s3").meta.endpoint_url or ""
    except botocore.exceptions.BotoCoreError:
        endpoint = ""
    if endpoint and not endpoint.split("://", 1)[-1].split("/", 1)[0].split(":")[0].endswith("amazonaws.com"):
        out["endpoint"] = endpoint  # an S3-compatible server named in the environment or the profile
    return out


def cached_copy(final: Path, size: int | None = None) -> bool:
    """Whether the cache's ``final`` can be served (of ``size`` bytes, when a record gives it); one of another
    size is removed, to be fetched again. Cached files were checked on the way in and are read-only: a size
    that disagrees with the record means the cache was tampered with.

    :raises StoreError: the cache cannot be used.
    """
    try:
        if size is None or final.stat().st_size == size:
            os.utime(final)  # most recently used: the last to leave the cache
            return True
        os.unlink(final)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StoreError(f"cannot use the blob cache {final}: {exc.strerror}") from None
    return False


def cache_temp(cache: Path) -> Path:
    """A fresh temporary name in the cache's ``tmp`` folder (made if missing) to stream one blob into.

    :raises StoreError: the folder cannot be made.
    """
    tmp_dir = cache / "tmp"
    try:
        tmp_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot write the blob cache {tmp_dir}: {exc.strerror}") from None
    return tmp_dir / f"{secrets.token_hex(8)}.part"


def cache_keep(tmp: Path, final: Path) -> None:
    """The checked temporary file ``tmp`` renamed into the cache as ``final``, read-only."""
    final.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(tmp, 0o444)
    os.replace(tmp, final)


class CachedReads:
    """``open`` and ``read_manifest`` over ``fetch``: what the blob readers that fetch into the local cache share
    (:class:`BucketBlobs`, and :class:`tracker.remote.blobs.RemoteBlobs` for a server).

    :cvar noun: what messages call one blob where it is kept (``object`` in a bucket).
    """

    noun = "blob"

    def where(self, sha: str) -> str:
        raise NotImplementedError

    def fetch(self, sha: str, size: int | None = None) -> Path:
        raise NotImplementedError

    def open(self, sha256: str) -> IO[bytes]:
        """A binary file over the blob's bytes, fetched into the cache and hashed again as they are read.

        :raises StoreError: the blob is missing or damaged (naming it); reading to the end raises it when the
            cached bytes no longer match.
        """
        from tracker.capture.blobs import CheckedReader

        path = self.fetch(sha256)
        try:
            f = open(path, "rb")  # noqa: SIM115 - handed to the caller inside the reader
        except OSError as exc:
            raise StoreError(f"cannot read the cached blob {path}: {exc.strerror}") from None
        return CheckedReader(f, sha256, f"{self.noun} {self.where(sha256)} (cached at {path})")

    def read_manifest(self, sha: str) -> Any:
        """The folder manifest stored in blob ``sha`` (its bytes checked).

        :raises StoreError: the blob is missing, damaged or not a manifest.
        """
        from tracker.capture.blobs import Manifest

        with self.open(sha) as f:
            data = f.read()
        return Manifest.decode(data, sha, f"{self.noun} {self.where(sha)}")


class BucketBlobs(CachedReads):
    """The team's blobs in a bucket (the reading protocol's ``BlobReader``), with uploads for ``tracker sync``.

    :param url: ``s3://bucket/prefix``, ``gs://...``, ``az://...`` or ``file:///path``.
    :param cache: where fetched blobs are kept (default :func:`cache_folder`).
    :param cache_bytes: the cache's bound (default :func:`cache_limit`).
    :param client: an obstore store to use instead of one built from ``url`` (tests wrap it to count calls).
    """

    noun = "object"

    def __init__(self, url: str, *, cache: Path | None = None, cache_bytes: int | None = None,
                 client: Any = None) -> None:
        if not isinstance(url, str) or not url.startswith(BLOB_SCHEMES):
            raise TrackerError(f"[team] blobs: expected a bucket URL starting with {', '.join(BLOB_SCHEMES)}, "
                               f"given {url!r}")
        self.url = url.rstrip("/")
        self.shown = shown_url(self.url)
        self.cache = cache_folder() if cache is None else Path(cache)
        self.cache_bytes = cache_limit() if cache_bytes is None else cache_bytes
        self._client = client

    def __repr__(self) -> str:
        return f"BucketBlobs({self.shown!r})"

    @property
    def client(self) -> Any:
        """The obstore store over the bucket (built on first use from the usual environment)."""
        if self._client is None:
            self._client = self._build()
        return self._client

    def _build(self) -> Any:
        _obstore()
        from datetime import timedelta

        from obstore.store import from_url

        kw: dict[str, Any] = {"retry_config": {"max_retries": 3, "retry_timeout": timedelta(seconds=30)},
                              "client_options": {"connect_timeout": "5s", "timeout": "120s"}}
        if self.url.startswith("file://"):
            path = self.url[len("file://"):]
            if not path.startswith("/"):
                raise TrackerError(f"[team] blobs: a file:// URL needs an absolute path (file:///path), "
                                   f"given {self.url!r}")
            Path(path).mkdir(parents=True, exist_ok=True)
            return from_url(self.url)
        if self.url.startswith("s3://"):
            kw.update(aws_options(self.shown))
            endpoint = kw.get("endpoint") or os.environ.get("AWS_ENDPOINT_URL", "")
            if endpoint.startswith("http://"):
                # An S3-compatible server named over plain HTTP (a lab's MinIO, a test server): allowed as named.
                kw["client_options"]["allow_http"] = True
        try:
            return from_url(self.url, **kw)
        except Exception as exc:  # noqa: BLE001 - obstore's configuration errors, shown in one line
            raise TrackerError(f"[team] blobs = {self.shown!r}: {_one_line(exc)}") from None

    def where(self, sha: str) -> str:
        """The object's full address, as messages show it."""
        return f"{self.shown}/{object_key(sha)}"

    # --- reading ---------------------------------------------------------------------------

    def path(self, sha: str) -> Path:
        """Where the blob of ``sha`` is kept once fetched (the cache)."""
        key = object_key(sha)
        return self.cache / key

    def exists(self, sha256: str) -> bool:
        """Whether the bucket holds the blob (one HEAD)."""
        return self.head(sha256) is not None

    def head(self, sha: str) -> int | None:
        """The object's size, or ``None`` when there is none.

        :raises StoreError: the bucket cannot be reached.
        """
        try:
            meta = _obstore().head(self.client, object_key(sha))
        except Exception as exc:  # noqa: BLE001 - the client's errors, told apart below
            if _is_not_found(exc):
                return None
            raise BucketError(f"cannot reach {self.where(sha)}: {_one_line(exc)}") from None
        return int(meta["size"])

    def fetch(self, sha: str, size: int | None = None) -> Path:
        """A local file holding the blob: from the cache, else streamed from the bucket and checked.

        The object is written under a temporary name while its size and
        SHA-256 are computed, and renamed into the cache only when both match.

        :param size: the size a record gives, checked too.
        :raises StoreError: naming the object's key when it is missing, damaged or cannot be read.
        """
        final = self.path(sha)
        if cached_copy(final, size):
            return final
        obstore = _obstore()
        tmp = cache_temp(self.cache)
        h = hashlib.sha256()
        n = 0
        try:
            try:
                got = obstore.get(self.client, object_key(sha))
                expected = int(got.meta["size"])
                with open(tmp, "wb") as f:
                    for chunk in got.stream(min_chunk_size=1 << 20):
                        mv = memoryview(chunk)
                        h.update(mv)
                        f.write(mv)
                        n += len(mv)
            except Exception as exc:  # noqa: BLE001 - the client's errors, told apart here
                if _is_not_found(exc):
                    raise StoreError(f"object {self.where(sha)} is missing from the bucket") from None
                raise BucketError(f"cannot read {self.where(sha)}: {_one_line(exc)}") from None
            digest = h.hexdigest()
            if digest != sha or n != expected or (size is not None and n != size):
                want = f"{size} bytes" if size is not None else f"{expected} bytes"
                raise StoreError(f"object {self.where(sha)} is damaged: its {n} bytes hash to {digest} "
                                 f"(expected {want} hashing to its name); not served")
            self._make_room(n)
            cache_keep(tmp, final)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return final

    def _make_room(self, incoming: int) -> None:
        """Remove the least recently used cached blobs until ``incoming`` more bytes fit the bound."""
        files = []
        total = 0
        for e in _cached_files(self.cache):
            try:
                st = e.stat()
            except OSError:
                continue
            files.append((st.st_mtime, st.st_size, e.path))
            total += st.st_size
        if total + incoming <= self.cache_bytes:
            return
        for _mtime, size, path in sorted(files):
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
            if total + incoming <= self.cache_bytes:
                return

    # --- writing ---------------------------------------------------------------------------

    def listing(self) -> dict[str, int]:
        """Every blob in the bucket with its size: one listing of ``sha256/`` (paged by the client).

        :raises StoreError: the bucket cannot be reached.
        """
        out: dict[str, int] = {}
        try:
            for page in _obstore().list(self.client, "sha256/", chunk_size=1000):
                for meta in page:
                    key = meta["path"]
                    sha = key[7:9] + key[10:] if len(key) == 72 else ""
                    if _SHA_RE.fullmatch(sha) and key == object_key(sha):
                        out[sha] = int(meta["size"])
        except Exception as exc:  # noqa: BLE001 - the client's errors, shown in one line
            if _is_not_found(exc):
                return out
            raise BucketError(f"cannot list {self.shown}/sha256/: {_one_line(exc)}") from None
        return out

    def upload(self, sha: str, path: Path, size: int, on_bytes: Callable[[int], None] | None = None) -> None:
        """Upload the local blob at ``path`` as the object of ``sha``, its bytes hashed while sent.

        Small blobs go in one PUT; large ones as a multipart upload that the
        client completes only after every part, so a kill at any moment leaves
        no object. Bytes that do not hash to ``sha`` abort the upload.

        :raises StoreError: the local blob is damaged or unreadable, or the bucket refused it.
        """
        from concurrent.futures import ThreadPoolExecutor

        obstore = _obstore()
        key = object_key(sha)
        h = hashlib.sha256()
        sent = [0]
        # One worker hashes each part while the client sends the one before (hashlib releases the GIL).
        hasher = ThreadPoolExecutor(1, thread_name_prefix="tracker-upload-hash")

        part = part_size(size)

        def chunks(f: IO[bytes]) -> Iterator[bytes]:
            pending = None
            while True:
                data = f.read(part)
                if not data:
                    break
                if pending is not None:
                    pending.result()
                pending = hasher.submit(h.update, data)
                sent[0] += len(data)
                yield data
                if on_bytes is not None:
                    on_bytes(len(data))
            if pending is not None:
                pending.result()
            if h.hexdigest() != sha or sent[0] != size:
                raise _Damaged(f"local blob {path} is damaged: its {sent[0]} bytes hash to {h.hexdigest()}")

        try:
            with open(path, "rb") as f, hasher:
                if size < PART:
                    data = b"".join(chunks(f))
                    obstore.put(self.client, key, data, use_multipart=False)
                else:
                    obstore.put(self.client, key, chunks(f), chunk_size=part, max_concurrency=CONCURRENCY)
        except _Damaged as exc:
            raise StoreError(f"{exc}; not uploaded (`tracker verify` checks the store)") from None
        except OSError as exc:
            raise StoreError(f"cannot read local blob {path}: {exc.strerror}") from None
        except Exception as exc:  # noqa: BLE001 - the client's errors, shown in one line
            raise BucketError(f"cannot upload to {self.where(sha)}: {_one_line(exc)}") from None


class MissingBlobs:
    """What ``blobs`` gives over a team store without ``[team] blobs``: nothing is there, and opening says why."""

    def __init__(self, where: str) -> None:
        self.where = where

    def _error(self, sha: str) -> StoreError:
        return StoreError(f"blob {sha} cannot be fetched: [team] blobs is not set (tracker.toml's [team] section, or "
                          f"TRACKER_TEAM_BLOBS), so {self.where} has no bucket to read blobs from")

    def path(self, sha: str) -> Path:
        """A relative path naming the object the blob would be."""
        return Path(object_key(sha))

    def exists(self, sha256: str) -> bool:
        """Always ``False``: there is no bucket."""
        return False

    def fetch(self, sha: str, size: int | None = None) -> Path:
        """:raises StoreError: always, saying that ``[team] blobs`` is not set."""
        raise self._error(sha)

    def open(self, sha256: str) -> IO[bytes]:
        """:raises StoreError: always, saying that ``[team] blobs`` is not set."""
        raise self._error(sha256)

    def read_manifest(self, sha: str) -> Any:
        """:raises StoreError: always, saying that ``[team] blobs`` is not set."""
        raise self._error(sha)


def team_blobs(config: Any, where: str) -> BucketBlobs | MissingBlobs:
    """The blobs of a team store: its bucket when configured, else a reader that says it is not set."""
    url = blobs_url(config)
    return BucketBlobs(url) if url else MissingBlobs(where)


__all__ = ["BucketBlobs", "BucketError", "CachedReads", "MissingBlobs", "blobs_url", "cache_folder", "cache_keep",
           "cache_limit", "cache_temp", "cached_copy", "clear_cache", "object_key", "part_size", "shown_url",
           "team_blobs"]
