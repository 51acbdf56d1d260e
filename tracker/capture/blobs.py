"""Content-addressed blobs: every stored file lives once per store under its SHA-256.

Layout::

    <store>/blobs/sha256/<first 2 hex>/<other 62 hex>   the bytes, read-only
    <store>/blobs/tmp/<random>.part                       a copy in progress

A file is hashed while it is copied. A large one is copied by the kernel
(``os.copy_file_range``: the source is read once, no bytes pass through
Python) while a worker thread hashes each chunk of the copy right behind it,
from the page cache, so the blob is named by exactly the bytes it holds and
the cost is close to the larger of copy and hash rather than their sum
(benchmarks/bench_capture.py). Without the kernel copy (another file system,
an old kernel), each chunk is read once into a buffer that a worker thread
hashes while the main thread writes it. Small files take the plain loop. The copy is written
under a temporary name, flushed, and renamed to its hash only when complete,
so a kill at any moment leaves either the whole blob or a ``.part`` leftover
that no record names. Writers call this before appending the record that
names the blob, so no record ever points to a missing or partial blob.

The same content stored again lands on the same name: the rename replaces
the old copy with identical bytes (which also heals a damaged one and makes
it young again for ``tracker gc``). A file that is probably stored already
(``put_file(probe=True)``: the artifact's name has a version of that size
logged after the file last changed) is hashed first, reading it once and
writing nothing when its blob is there (its time is set anew, so ``tracker
gc`` sees it young); only new content is copied.

A folder is stored as one *manifest* blob, a JSON document listing each file
(relative POSIX path, size, sha256) sorted by path, plus one blob per file;
two files of the same name in different subfolders are two entries.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import attrs

from tracker.core.errors import StoreError, TrackerError
from tracker.core.files import NotAFileError, fsync_folder, kind_of, open_regular

#: Bytes per read while copying and hashing.
CHUNK = 1 << 22
#: Files smaller than this are hashed and written in the calling thread.
THREAD_MIN = 1 << 24
MANIFEST_FORMAT = "tracker.manifest"
MANIFEST_VERSION = 1
_SHA_RE = re.compile(r"[0-9a-f]{64}")


def check_sha(sha: Any) -> str:
    """``sha`` when it is 64 lowercase hex digits; else :class:`StoreError` (it never becomes a path)."""
    if type(sha) is not str or not _SHA_RE.fullmatch(sha):
        raise StoreError(f"not a sha256 (64 lowercase hex digits): {sha!r}")
    return sha


def blob_path(store: str | os.PathLike[str], sha: str) -> Path:
    """Where the blob of ``sha`` lives in ``store``: ``blobs/sha256/<2 hex>/<62 hex>``."""
    check_sha(sha)
    return Path(store) / "blobs" / "sha256" / sha[:2] / sha[2:]


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


class BlobStore:
    """The blob folder of one store.

    :param store: the store folder.
    :param fsync: also flush each blob and its folder entry to the disk (``durability = "fsync"``).
    """

    def __init__(self, store: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.store = Path(store)
        self.root = self.store / "blobs"
        self.fsync = fsync

    def path(self, sha: str) -> Path:
        """The blob of ``sha`` (whether or not it exists)."""
        return blob_path(self.store, sha)

    def fetch(self, sha: str, size: int | None = None) -> Path:
        """A local file holding the blob: here, its place in the store (whether or not it exists).

        The team's bucket (:class:`tracker.team.blobs.BucketBlobs`) offers the same call, fetching into a cache.
        """
        return self.path(sha)

    def exists(self, sha256: str) -> bool:
        """Whether the blob of ``sha256`` is stored (the reading protocol's :class:`BlobReader`)."""
        return self.path(sha256).is_file()

    def open(self, sha256: str) -> IO[bytes]:
        """A binary file over the blob's bytes, hashed as they are read (the reading protocol's ``BlobReader``).

        :raises StoreError: the blob is missing or not a file; reading to the end raises it when the
            bytes do not match the name, so damaged bytes are never passed on as complete.
        """
        path = self.path(sha256)
        try:
            f = open_regular(path, buffering=-1)
        except NotAFileError as exc:
            raise StoreError(f"blob {sha256}: {exc}") from None
        except FileNotFoundError:
            raise StoreError(f"blob {sha256} is missing ({path})") from None
        return CheckedReader(f, sha256, f"blob {path}")

    def _tmp(self) -> tuple[int, Path]:
        tmp_dir = self.root / "tmp"
        try:
            tmp_dir.mkdir(parents=True, exist_ok=True)
            path = tmp_dir / f"{secrets.token_hex(8)}.part"
            # Read as well as written: the kernel copy hashes what landed in the file.
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644), path
        except OSError as exc:
            raise StoreError(f"cannot write to {tmp_dir}: {exc.strerror}") from None

    def _settle(self, fd: int, tmp: Path, sha: str) -> Path:
        """Flush, close and rename a complete temporary copy to its blob name."""
        final = self.path(sha)
        try:
            if self.fsync:
                os.fsync(fd)
            os.close(fd)
            fd = -1
            os.chmod(tmp, 0o444)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)
            if self.fsync:
                fsync_folder(final.parent)
                fsync_folder(final.parent.parent)
        except OSError as exc:
            if fd >= 0:
                os.close(fd)
            _unlink(tmp)
            raise StoreError(f"cannot store blob {final}: {exc.strerror}") from None
        return final

    def put_file(self, src: str | os.PathLike[str], *, probe: bool = False) -> tuple[str, int]:
        """Store a copy of file ``src``: ``(sha256, size)``.

        :param probe: hash the file first and copy nothing when its blob is stored already (one read,
            no write); when it is not, copy it as without ``probe`` (a second read).
        :raises StoreError: the file cannot be read or the blob written.
        """
        try:
            f = open_regular(src)
        except OSError as exc:
            raise TrackerError(f"cannot read {src}: {exc.strerror}") from None
        with f:
            if probe:
                sha, size = copy_hashing(f, None, os.fstat(f.fileno()).st_size)
                if self.keep(sha, size):
                    return sha, size
                f.seek(0)
            fd, tmp = self._tmp()
            try:
                sha, size = self._copy(f, fd)
            except OSError as exc:
                os.close(fd)
                _unlink(tmp)
                raise StoreError(f"cannot copy {src} into the store: {exc.strerror}") from None
            except BaseException:
                os.close(fd)
                _unlink(tmp)
                raise
        self._settle(fd, tmp, sha)
        return sha, size

    @staticmethod
    def _copy(f: IO[bytes], fd: int) -> tuple[str, int]:
        size = os.fstat(f.fileno()).st_size
        if size >= THREAD_MIN and hasattr(os, "copy_file_range"):
            try:
                return kernel_copy_hashing(f.fileno(), fd)
            except _NoKernelCopy:
                pass
        return copy_hashing(f, fd, size)

    def keep(self, sha: str, size: int) -> bool:
        """Whether the blob of ``sha`` is stored with ``size`` bytes; if so its time is set to now, so that
        ``tracker gc`` (which spares young blobs) never takes it before the record that names it is written."""
        path = self.path(sha)
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size != size:
                return False
            os.utime(path)
        except OSError:
            return False
        return True

    def put_bytes(self, data: bytes) -> tuple[str, int]:
        """Store ``data``: ``(sha256, size)`` (nothing is written when the blob is there)."""
        sha = hashlib.sha256(data).hexdigest()
        if self.keep(sha, len(data)):
            return sha, len(data)
        fd, tmp = self._tmp()
        try:
            _write_all(fd, memoryview(data))
        except BaseException as exc:
            os.close(fd)
            _unlink(tmp)
            if isinstance(exc, OSError):
                raise StoreError(f"cannot write to {tmp.parent}: {exc.strerror}") from None
            raise
        self._settle(fd, tmp, sha)
        return sha, len(data)

    def check(self, sha: str, size: int | None = None, *, full: bool = True) -> str | None:
        """What is wrong with the blob of ``sha`` (``None`` when it is whole).

        :param size: the size the record gives, checked first.
        :param full: also read it and compare its hash.
        """
        path = self.path(sha)
        try:
            actual = path.stat().st_size
        except FileNotFoundError:
            return f"blob {path} is missing"
        except OSError as exc:
            return f"blob {path} cannot be read: {exc.strerror}"
        if size is not None and actual != size:
            return f"blob {path} has {actual} bytes, the record says {size}"
        return file_problem(path, sha)[0] if full else None

    def all(self) -> Iterator[tuple[str, Path]]:
        """Every blob present: ``(sha256, path)``."""
        base = self.root / "sha256"
        try:
            tops = sorted(os.scandir(base), key=lambda e: e.name)
        except FileNotFoundError:
            return
        for top in tops:
            if len(top.name) != 2 or not top.is_dir():
                continue
            for e in sorted(os.scandir(top.path), key=lambda e: e.name):
                sha = top.name + e.name
                if _SHA_RE.fullmatch(sha):
                    yield sha, Path(e.path)

    # --- folders ----------------------------------------------------------------------------

    def put_folder(self, folder: str | os.PathLike[str], *, copy: bool = True,
                   probe_before: float | None = None) -> Manifest:
        """Store a folder's manifest blob (and, with ``copy``, a blob per file).

        :param probe_before: files last changed before this time (seconds since the epoch) are
            probably stored already: hashed first, copied only when not (see :meth:`put_file`).
        :returns: the manifest (its ``sha256`` names the manifest blob).
        """
        return self.put_files(walk_files(folder), copy=copy, probe_before=probe_before)

    def put_files(self, files: list[tuple[str, Path]], *, copy: bool = True,
                  probe_before: float | None = None) -> Manifest:
        """Store the manifest of ``files`` (``(relative POSIX path, file)``, sorted by path) and, with ``copy``,
        a blob per file (see :meth:`put_folder`)."""
        entries = []
        for rel, path in files:
            if copy:
                probe = probe_before is not None and _changed_before(path, probe_before)
                sha, size = self.put_file(path, probe=probe)
            else:
                sha, size = hash_file(path)
            entries.append(ManifestEntry(rel, size, sha))
        manifest = Manifest(tuple(entries))
        sha, _ = self.put_bytes(manifest.encode())
        return attrs.evolve(manifest, sha256=sha)

    def read_manifest(self, sha: str) -> Manifest:
        """The manifest stored in blob ``sha``.

        :raises StoreError: the blob is missing or is not a manifest.
        """
        path = self.path(sha)
        try:
            with open_regular(path, "manifest blob ") as f:
                data = f.read()
        except NotAFileError as exc:
            raise StoreError(str(exc)) from None
        except OSError as exc:
            raise StoreError(f"cannot read manifest blob {path}: {exc.strerror}") from None
        return Manifest.decode(data, sha, str(path))


@attrs.frozen
class ManifestEntry:
    """One file of a folder artifact: POSIX path relative to the folder, size, sha256."""

    path: str
    size: int
    sha256: str


@attrs.frozen
class Manifest:
    """The files of a folder artifact, sorted by path."""

    files: tuple[ManifestEntry, ...]
    sha256: str = ""

    @property
    def size(self) -> int:
        """The sum of the files' sizes."""
        return sum(e.size for e in self.files)

    def encode(self) -> bytes:
        """Canonical JSON bytes (the same folder content gives the same bytes, hence the same hash)."""
        doc = {"format": MANIFEST_FORMAT, "v": MANIFEST_VERSION,
               "files": [{"path": e.path, "size": e.size, "sha256": e.sha256} for e in self.files]}
        return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, sha: str = "", where: str = "manifest") -> Manifest:
        """Parse manifest bytes, checking every entry (paths stay inside the folder).

        :raises StoreError: naming what is wrong.
        """
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise StoreError(f"{where}: not a manifest (not JSON: {exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT or not isinstance(doc.get("files"), list):
            raise StoreError(f"{where}: not a manifest (expected format {MANIFEST_FORMAT!r} and a files list)")
        files = []
        for i, e in enumerate(doc["files"]):
            ok = isinstance(e, dict) and isinstance(e.get("path"), str) and type(e.get("size")) is int \
                and isinstance(e.get("sha256"), str) and _SHA_RE.fullmatch(e["sha256"]) is not None
            if not ok or not safe_relative(e["path"]):
                raise StoreError(f"{where}: entry {i} is not a file entry with a relative path, size and sha256")
            files.append(ManifestEntry(e["path"], e["size"], e["sha256"]))
        return cls(tuple(files), sha)


def safe_relative(rel: str) -> bool:
    """Whether ``rel`` is a relative POSIX path that stays inside its folder."""
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and "\\" not in rel and "\x00" not in rel \
        and all(p not in ("", ".", "..") for p in parts)


def walk_files(folder: str | os.PathLike[str]) -> list[tuple[str, Path]]:
    """Every regular file under ``folder`` (symlinks to files followed, to folders not): ``(rel, path)``.

    Sorted by relative POSIX path. The walk keeps its own stack, so a folder
    of any depth is walked (no recursion limit); a dangling link is left out.

    :raises NotAFileError: a FIFO, socket or device inside, naming it: a folder
        artifact never silently lacks a member, and nothing blocks on one.
    """
    root = os.path.abspath(folder)
    out = []
    todo = [("", root)]
    while todo:
        rel_dir, path = todo.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError as exc:
            raise TrackerError(f"cannot read folder {path}: {exc.strerror}") from None
        for e in entries:
            rel = f"{rel_dir}{e.name}"
            if e.is_dir(follow_symlinks=False):
                todo.append((rel + "/", e.path))
                continue
            try:
                mode = os.stat(e.path).st_mode
            except OSError:
                continue  # a dangling link
            if stat.S_ISDIR(mode):
                continue  # a link to a folder: not followed
            if not stat.S_ISREG(mode):
                raise NotAFileError(e.path, kind_of(mode), f"folder {root} holds ")
            out.append((rel, Path(e.path)))
    out.sort(key=lambda t: t[0])
    return out


def _changed_before(path: Path, when: float) -> bool:
    try:
        return os.stat(path).st_mtime <= when
    except OSError:
        return False


def make_folders(path: Path) -> None:
    """``path.mkdir(parents=True, exist_ok=True)`` without recursion (a folder of any depth)."""
    missing = []
    p = path
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for p in reversed(missing):
        try:
            p.mkdir()
        except FileExistsError:
            if not p.is_dir():
                raise


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def blobs_of(view: Any) -> Any:
    """Where run ``view``'s blobs are read from: its store folder's blobs, else its store's ``blobs``
    (the team's bucket), each with ``fetch``, ``read_manifest``, ``exists`` and ``open``."""
    store = view.store
    if isinstance(store, (str, os.PathLike)):
        return BlobStore(store)
    return store.blobs


def copy_blob_out(blobs: Any, sha: str, size: int | None, dest: Path) -> None:
    """Copy blob ``sha`` to ``dest`` under a temporary name, renamed only when size and hash match.

    :param blobs: a :class:`BlobStore` or the team's bucket (fetched into its cache first).
    :raises StoreError: naming the blob when it is missing or damaged; nothing is left at ``dest``.
    """
    src = blobs.fetch(sha, size)
    copy_checked(src, sha, size, dest, what=f"blob {src}")


def copy_checked(src: Path, sha: str, size: int | None, dest: Path, *, what: str) -> None:
    """Copy ``src`` to ``dest`` via a temporary file in ``dest``'s folder, renamed only if the hash matches."""
    make_folders(dest.parent)
    tmp = dest.parent / f".{dest.name}.{secrets.token_hex(4)}.part"
    try:
        f = open_regular(src)
    except NotAFileError as exc:
        raise StoreError(f"{what} is {exc.kind}, not a regular file; nothing was read or written") from None
    except FileNotFoundError:
        raise StoreError(f"{what} is missing") from None
    except OSError as exc:
        raise StoreError(f"{what} cannot be read: {exc.strerror}") from None
    with f:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            got, n = copy_hashing(f, fd, os.fstat(f.fileno()).st_size)
        finally:
            os.close(fd)
    if got != sha or (size is not None and n != size):
        _unlink(tmp)
        raise StoreError(f"{what} is damaged: expected sha256 {sha} ({size} bytes), read {got} ({n} bytes); "
                         "nothing was written")
    os.replace(tmp, dest)


def references(view: Any) -> set[str]:
    """Every sha256 that run ``view`` refers to, manifest members included.

    For ``tracker gc`` (run lifecycle): a blob named by no run's references
    (and older than its grace period) is garbage. Covers the ``artifact``
    records (the file blob, or a folder's manifest blob and, for a copied
    folder, each member's blob), the ``image`` records (their PNG blobs),
    the images in ``table`` cells and the package lists and diffs of the
    ``environment`` records.
    A referenced file outside the store (``copy=False``) has its hash listed
    too, but no blob. A manifest that cannot be read keeps at least its own
    hash listed.

    :param view: a :class:`tracker.RunView`.
    """
    from tracker.capture.mediafile import MEDIA_SCHEMAS

    out: set[str] = set()
    blobs = BlobStore(view.store)
    for schema in ("artifact", "image", *MEDIA_SCHEMAS):
        if schema not in view.schemas():
            continue
        for rec in view.records(schema):
            sha = rec.data.get("sha256")
            if not isinstance(sha, str) or not _SHA_RE.fullmatch(sha):
                continue
            out.add(sha)
            if schema == "artifact" and rec.data.get("folder"):
                try:
                    out.update(e.sha256 for e in blobs.read_manifest(sha).files)
                except StoreError:
                    pass
    from tracker.capture.cells import table_image_shas

    out |= table_image_shas(view)  # images in table cells
    from tracker.capture.environment import environment_blobs

    out.update(sha for sha, _ in environment_blobs(view))  # package lists and uncommitted diffs
    return out
