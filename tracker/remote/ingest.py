"""What the server does with shipped bytes: check every line, then append them where a local writer would have.

A client ships a segment's complete lines by offset (``POST
/api/v1/runs/{run}/segments/{segment}?offset=N``). :meth:`Ingest.append` checks
each new line with the readers' own checks (its checksum, its JSON and
event shape, :func:`tracker.core.format.parse_line`; its size; the writer
named in it and the segment's sequence numbers; the first event of a segment;
a record's data through the host's schema converter), and only when every
line passes appends the request's bytes, unchanged, to
``<store>/runs/<run>/<segment>``: the file the client's writer wrote, so the
served store cannot tell a remote run from a local one. A new run's folder
appears whole (its first segment written in a hidden staging folder, then
renamed), and a new segment under a hidden name until its first line is in,
as :mod:`tracker.write.route` does.

Bytes the server has already are acknowledged, not written twice (and must
be the same bytes); a torn last line (a server killed in the middle of an
append, whose bytes were never acknowledged) is cut off at the segment's
first request after a restart; an offset past what it has is a :class:`Gap` carrying
its offset, from which the client resumes. One lock per segment keeps
concurrent requests of one segment in order. Segment names are file names
(``<writer>.jsonl``, or ``edits/edits-<...>.jsonl`` for an edit segment), never
paths. Blobs arrive by content address and are hashed as they arrive
(:meth:`Ingest.blob_writer`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracker.core.errors import SchemaError, StoreError, TrackerError
from tracker.core.files import fsync_folder
from tracker.core.format import (
    FORMAT_VERSION,
    METRICS_HEAD,
    RECORD,
    RUN_FINISHED,
    RUN_STARTED,
    WRITER_STARTED,
    LineError,
    check_run_id,
    decode_nonfinite,
    parse_line,
)
from tracker.read.edits import EDIT, EDITS_FOLDER, EDITS_PREFIX, edit_paths
from tracker.read.segment import read_segment, segment_paths

#: The largest line the server takes (a run's first line holds its config: generous).
MAX_LINE = 16 << 20
#: A writer's segment name: a writer id (letters, digits, ``.``, ``_``, ``-``) and ``.jsonl``.
SEGMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.jsonl\Z")
_SHA = re.compile(r"[0-9a-f]{64}\Z")


class BadLine(TrackerError):
    """A line of a request that fails its checks: ``line`` is its number in the request (1 is the first)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class Gap(TrackerError):
    """An offset past the bytes the server has of a segment; ``offset`` is what it has."""

    def __init__(self, name: str, offset: int, given: int) -> None:
        super().__init__(f"segment {name}: the server has {offset} bytes, the request starts at byte {given}: "
                         f"send from offset {offset}")
        self.offset = offset


class Refused(TrackerError):
    """A request the server will not take (a bad name, bytes that differ from what it has); HTTP 400."""


def check_segment_name(name: Any) -> str:
    """``name`` when it names a segment of a run: ``<writer>.jsonl`` or ``edits/edits-<...>.jsonl``.

    :raises Refused: anything else (a path, a hidden name, another suffix).
    """
    if isinstance(name, str):
        folder, _, base = name.rpartition("/")
        if SEGMENT_NAME.fullmatch(base) and ".." not in base and (
                folder == "" or (folder == EDITS_FOLDER and base.startswith(EDITS_PREFIX))):
            return name
    shown = repr(name)[:80]
    raise Refused(f"invalid segment name {shown}: expected <writer id>.jsonl or edits/edits-<id>.jsonl "
                  "(letters, digits, . _ -; never a path)")


def check_sha(sha: Any) -> str:
    """``sha`` when it is 64 lowercase hex digits, else :class:`Refused`."""
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise Refused(f"invalid sha256 {str(sha)[:80]!r}: expected 64 lowercase hex digits")
    return sha


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Ingest:
    """Appends shipped segment bytes and blobs to a folder store (see the module's docstring).

    :param root: the store folder.
    :param host: the :class:`tracker.host.host.Host` whose schemas check records (default: the process's).
    :param fsync: flush each append and new folder entry to the disk (``[store] durability = "fsync"``).
    :param on_append: called with the run id after bytes were appended (the spool's syncer listens).
    """

    def __init__(self, root: str | os.PathLike[str], host: Any = None, *, fsync: bool = False,
                 on_append: Callable[[str], None] | None = None) -> None:
        self.root = Path(root)
        self.runs = self.root / "runs"
        self._host = host
        self.fsync = fsync
        self.on_append = on_append
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._run_locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        #: ``{(run, segment): (size, last seq)}`` of segments this process appended to.
        self._tails: dict[tuple[str, str], tuple[int, int]] = {}

    @property
    def host(self) -> Any:
        if self._host is None:
            from tracker.host.host import get_host

            self._host = get_host()
        return self._host

    def _lock(self, table: dict, key: Any) -> threading.Lock:
        with self._guard:
            lock = table.get(key)
            if lock is None:
                lock = table[key] = threading.Lock()
            return lock

    # --- what the server has ----------------------------------------------------------------------

    def exists(self, run_id: str) -> bool:
        """Whether run ``run_id`` is in the store."""
        return (self.runs / check_run_id(run_id)).is_dir()

    def sizes(self, run_id: str) -> dict[str, int]:
        """Bytes the server has of each segment of run ``run_id`` (edit segments as ``edits/<name>``)."""
        run_dir = self.runs / check_run_id(run_id)
        out: dict[str, int] = {}
        if not run_dir.is_dir():
            return out
        for path in [*segment_paths(run_dir), *edit_paths(run_dir)]:
            try:
                size = path.stat().st_size
            except OSError:
                continue
            out[path.name if path.parent == run_dir else f"{EDITS_FOLDER}/{path.name}"] = size
        return out

    # --- appending ------------------------------------------------------------------------------------

    def append(self, run_id: str, name: str, offset: int, body: bytes,
               admit: Callable[[str | None], None] | None = None) -> int:
        """Check and append ``body`` (the segment's bytes from ``offset``); returns the segment's size after.

        :param admit: for a run the store does not have yet, called with its project (from the first
            line) after every line passed and before anything is written; it raises to refuse.
        :raises Gap: ``offset`` is past what the server has (nothing written).
        :raises BadLine: a line fails its checks (nothing of the request written).
        :raises Refused: a bad name or offset, bytes that differ from those the server has, a body that
            does not end with a newline.
        """
        check_run_id(run_id)
        check_segment_name(name)
        if offset < 0:
            raise Refused(f"offset: expected a byte offset of 0 or more, given {offset}")
        edits = name.startswith(EDITS_FOLDER + "/")
        run_dir = self.runs / run_id
        path = run_dir / name
        with self._lock(self._locks, (run_id, name)):
            try:
                have = path.stat().st_size
            except FileNotFoundError:
                have = 0
            except OSError as exc:
                raise StoreError(f"cannot read {path}: {exc.strerror}") from None
            if have and (run_id, name) not in self._tails:
                have = self._heal(path, have)
            if offset > have:
                raise Gap(name, have, offset)
            if not body:
                if have and not edits:
                    try:
                        os.utime(path)  # an empty request at the end: the writer's heartbeat
                    except OSError:
                        pass
                return have
            if not body.endswith(b"\n"):
                raise Refused("the body must hold complete lines: it does not end with a newline")
            skip = min(have - offset, len(body))
            if skip:
                self._same(path, offset, body[:skip], name)
            if skip == len(body):
                return have
            first_line = body.count(b"\n", 0, skip) + 1
            new = body[skip:]
            tail = self._tails.get((run_id, name))
            last_seq = tail[1] if tail is not None and tail[0] == have else self._last_seq(path, have)
            writer = Path(name).stem
            project, start, seq_after = self._check(new, first_line, writer, last_seq, fresh=have == 0, edits=edits)
            if have == 0:
                with self._lock(self._run_locks, run_id):
                    created = not run_dir.exists()
                    if created:
                        if edits or start != RUN_STARTED:
                            raise BadLine(first_line, f"run {run_id} is new here: its first segment must begin "
                                                      "with run_started (send that segment first)")
                        if admit is not None:
                            admit(project)
                        self._create_run(run_dir, name, new)
                    else:
                        if admit is not None:  # made meanwhile by another request: whose it is decides
                            admit(project)
                        self._new_segment(run_dir, path, new, edits)
            else:
                self._append_bytes(path, new)
            end = have + len(new)
            self._tails[(run_id, name)] = (end, seq_after)
        if self.on_append is not None:
            self.on_append(run_id)
        return end

    @staticmethod
    def _heal(path: Path, have: int) -> int:
        """A segment's size, once a torn last line is cut off: what a server killed in the middle of an append
        left (those bytes were never acknowledged; the client sends them again from the offset it was given)."""
        try:
            with open(path, "r+b") as f:
                f.seek(have - 1)
                if f.read(1) == b"\n":
                    return have
                pos = have
                while pos > 0:
                    start = max(0, pos - (1 << 16))
                    f.seek(start)
                    cut = f.read(pos - start).rfind(b"\n")
                    if cut >= 0:
                        pos = start + cut + 1
                        break
                    pos = start
                f.truncate(pos)
                return pos
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from None

    def _same(self, path: Path, offset: int, data: bytes, name: str) -> None:
        """Refuse a request whose bytes before the server's end differ from the server's."""
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                have = f.read(len(data))
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from None
        if have != data:
            raise Refused(f"segment {name}: bytes {offset} to {offset + len(data)} differ from those the server has "
                          "(a segment is only appended to)")

    @staticmethod
    def _last_seq(path: Path, have: int) -> int:
        if have == 0:
            return 0
        last = read_segment(path).last
        return int(last.get("seq") or 0) if last else 0

    def _check(self, body: bytes, first: int, writer: str, last_seq: int, *, fresh: bool,
               edits: bool) -> tuple[str | None, str | None, int]:
        """Check each line of ``body``; returns the project and kind of a fresh segment's first event, and
        the last sequence number."""
        host = self.host
        schemas = host.schemas
        seq = last_seq
        project = start = None
        lineno = first - 1
        pos = 0
        n = len(body)
        while pos < n:
            end = body.index(b"\n", pos)
            line = body[pos:end]
            pos = end + 1
            lineno += 1
            if len(line) > MAX_LINE:
                raise BadLine(lineno, f"{len(line)} bytes, more than the {MAX_LINE} a line may have")
            try:
                ev = parse_line(line)
            except LineError as exc:
                raise BadLine(lineno, f"{exc.kind}: {exc}") from None
            v, kind = ev["v"], ev["kind"]
            if v > FORMAT_VERSION or v < 1:
                raise BadLine(lineno, f"format version {v}: this server knows version {FORMAT_VERSION}")
            if ev["w"] != writer:
                raise BadLine(lineno, f"written by writer {ev['w'][:80]!r}, sent in the segment of {writer!r}")
            if ev["seq"] != seq + 1:
                raise BadLine(lineno, f"seq {ev['seq']}: expected {seq + 1} (the segment's events are numbered "
                                      "1, 2, 3... without gaps or repeats)")
            seq += 1
            if edits:
                if kind != EDIT:
                    raise BadLine(lineno, f"a {kind!r} event in an edit segment: expected only edit events")
                continue
            if seq == 1:
                if kind not in (RUN_STARTED, WRITER_STARTED):
                    raise BadLine(lineno, f"the segment begins with a {kind!r} event: expected run_started or "
                                          "writer_started")
                if not fresh:
                    raise BadLine(lineno, "seq 1 in a segment the server has lines of")
                start = kind
                project = ev["data"].get("project")
            elif kind in (RUN_STARTED, WRITER_STARTED):
                raise BadLine(lineno, f"a {kind} event after the start of the segment")
            elif kind == RECORD and not line.startswith(METRICS_HEAD):  # metrics: parse_line checked them
                name = ev["schema"]
                compiled = schemas.get(name)
                if compiled is not None:
                    try:
                        compiled.structure(compiled.decode(decode_nonfinite(ev["data"])))
                    except SchemaError as exc:
                        raise BadLine(lineno, f"schema {name}: {exc}") from None
                    except Exception as exc:  # noqa: BLE001 - a plugin's class refusing the data, named
                        raise BadLine(lineno, f"schema {name}: {type(exc).__name__}: {exc}") from None
            elif kind == RUN_FINISHED and not isinstance(ev["data"].get("status"), str):
                raise BadLine(lineno, "run_finished without a status")
        return project, start, seq

    # --- the files -------------------------------------------------------------------------------

    def _append_bytes(self, path: Path, data: bytes) -> None:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        try:
            before = os.fstat(fd).st_size
            try:
                _write_all(fd, data)
                if self.fsync:
                    os.fsync(fd)
            except OSError as exc:
                try:
                    os.ftruncate(fd, before)  # never a partial request: the client sends it again
                except OSError:
                    pass
                raise StoreError(f"cannot append to {path}: {exc.strerror}") from None
        finally:
            os.close(fd)

    def _write_new(self, path: Path, data: bytes) -> None:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror}") from None
        try:
            _write_all(fd, data)
            if self.fsync:
                os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise StoreError(f"cannot write {path}: {exc.strerror}") from None
        os.close(fd)

    def _create_run(self, run_dir: Path, name: str, data: bytes) -> None:
        """A new run's folder, whole: its first segment written in a hidden staging folder, then renamed."""
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {self.runs}: {exc.strerror}") from None
        staging = self.runs / f".new-{run_dir.name}-{secrets.token_hex(4)}"
        try:
            staging.mkdir()
            self._write_new(staging / name, data)
            os.rename(staging, run_dir)
            if self.fsync:
                fsync_folder(self.runs)
        except OSError as exc:
            for p in staging.iterdir() if staging.exists() else ():
                p.unlink(missing_ok=True)
            if staging.exists():
                staging.rmdir()
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise Refused(f"run {run_dir.name} was created meanwhile: send the request again") from None
            raise StoreError(f"cannot create {run_dir}: {exc.strerror}") from None
        except BaseException:
            for p in staging.iterdir() if staging.exists() else ():
                p.unlink(missing_ok=True)
            if staging.exists():
                staging.rmdir()
            raise

    def _new_segment(self, run_dir: Path, path: Path, data: bytes, edits: bool) -> None:
        """A segment added to a run: written under a hidden name, renamed once its lines are in."""
        folder = path.parent
        if edits:
            try:
                folder.mkdir(exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create {folder}: {exc.strerror}") from None
        hidden = folder / f".{path.name}.{secrets.token_hex(3)}.part"
        self._write_new(hidden, data)
        try:
            os.rename(hidden, path)
            if self.fsync:
                fsync_folder(folder)
        except OSError as exc:
            hidden.unlink(missing_ok=True)
            raise StoreError(f"cannot create {path}: {exc.strerror}") from None

    # --- blobs ------------------------------------------------------------------------------------------

    def blob_path(self, sha: str) -> Path:
        """Where the blob of ``sha`` lives: ``<store>/blobs/sha256/<2 hex>/<62 hex>``."""
        check_sha(sha)
        return self.root / "blobs" / "sha256" / sha[:2] / sha[2:]

    def blob_size(self, sha: str) -> int | None:
        """The size of the stored blob of ``sha``, or ``None`` when the store does not have it."""
        try:
            st = self.blob_path(sha).stat()
        except OSError:
            return None
        return st.st_size

    def blob_writer(self, sha: str) -> BlobUpload:
        """A blob upload: :meth:`BlobUpload.write` each chunk as it arrives, then :meth:`BlobUpload.finish`."""
        return BlobUpload(self, check_sha(sha))


class BlobUpload:
    """One blob arriving: written to ``blobs/tmp/<random>.part`` and hashed on the way; renamed to its name
    only when its SHA-256 is the one announced (else removed: nothing kept)."""

    def __init__(self, ingest: Ingest, sha: str) -> None:
        self.ingest = ingest
        self.sha = sha
        self.size = 0
        self.hash = hashlib.sha256()
        tmp_dir = ingest.root / "blobs" / "tmp"
        try:
            tmp_dir.mkdir(parents=True, exist_ok=True)
            self.tmp = tmp_dir / f"{secrets.token_hex(8)}.part"
            self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot write to {tmp_dir}: {exc.strerror}") from None

    def write(self, chunk: bytes) -> None:
        """Hash and write one chunk."""
        self.hash.update(chunk)
        self.size += len(chunk)
        try:
            _write_all(self.fd, chunk)
        except OSError as exc:
            self.abort()
            raise StoreError(f"cannot write blob {self.sha}: {exc.strerror}") from None

    def abort(self) -> None:
        """Drop what arrived."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.tmp.unlink(missing_ok=True)

    def finish(self) -> bool:
        """Keep the blob under its name when its hash matches; returns whether it was new.

        :raises Refused: the bytes hash to another SHA-256 (nothing kept).
        """
        got = self.hash.hexdigest()
        if got != self.sha:
            self.abort()
            raise Refused(f"the body's sha256 is {got}, not {self.sha}: nothing was kept")
        final = self.ingest.blob_path(self.sha)
        new = not final.is_file()
        try:
            if self.ingest.fsync:
                os.fsync(self.fd)
            os.close(self.fd)
            self.fd = -1
            os.chmod(self.tmp, 0o444)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.tmp, final)
            if self.ingest.fsync:
                fsync_folder(final.parent)
        except OSError as exc:
            self.abort()
            raise StoreError(f"cannot store blob {final}: {exc.strerror}") from None
        return new


__all__ = ["MAX_LINE", "BadLine", "BlobUpload", "Gap", "Ingest", "Refused", "check_segment_name", "check_sha"]
