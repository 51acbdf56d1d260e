"""The shipper: a folder store's segments sent to the lab's server by offset, with the blobs their lines name.

The server keeps, per run, each segment file's bytes exactly as the machine
that logged them wrote them. The shipper asks once per run where the server
is (``GET /api/v1/runs/{id}/segments``), then sends each segment's new
*complete* lines from that offset (``POST .../segments/{name}?offset=N``),
in batches, in order. The server appends at exactly that offset: bytes it
has already are acknowledged and not written twice, and an offset beyond
its end is answered 409 with the offset it has, where the shipper resumes.
So sending again after any failure (a lost connection, a restart of either
side, a follower killed between two requests) never stores a line twice and
never leaves a gap.

Edit segments (``edits/edits-*.jsonl``: tags, notes, aliases changed after
the fact) go the same way, named by their place in the run's folder; console, environment and
artifact records are lines like any other. Before the lines that name blobs
(an artifact's file or manifest and its members, images, table images, an
environment's package list and diff) go, each blob the server lacks
(``HEAD``) is sent streamed (``PUT``); the server hashes it as it arrives.

The store's follower (:mod:`tracker.team.follower`) runs a shipper while
runs are live; ``tracker sync https://...`` runs one over every run.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import StoreError
from tracker.core.format import RUN_ID_RE
from tracker.remote.session import API, KeyRefused, RemoteError, RemoteUnavailable, Session, quote_segment
from tracker.team.status import RunBehind, lines_between, run_statuses
from tracker.write.stream import complete_end, shipped_files

#: Bytes of complete lines per request (halved on a 413 from a server with a lower cap).
BATCH = 8 << 20
SMALLEST_BATCH = 64 << 10
#: A sha256 in a line: the blobs it may name (kept only when the store's blob folder has one by that name).
_SHA = re.compile(rb"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
#: Lines without one of these words name no blob (a batch of metrics is not searched).
_BLOB_WORDS = (b"sha256", b"packages", b"git_diff")
#: The first event of a run.
_STARTED = b'"kind":"run_started"'


@attrs.define
class ShipReport:
    """What a shipper sent.

    :ivar runs: runs that had something new; :ivar segments: segments that did.
    :ivar bytes: segment bytes the server took; :ivar requests: POSTs of segment bytes.
    :ivar blobs: blobs sent; :ivar blob_bytes: their bytes; :ivar blobs_present: blobs the server had.
    :ivar problems: lines or blobs the server refused (named in ``errors``).
    """

    runs: int = 0
    segments: int = 0
    bytes: int = 0
    requests: int = 0
    blobs: int = 0
    blob_bytes: int = 0
    blobs_present: int = 0
    problems: int = 0
    seconds: float = 0.0
    errors: list[str] = attrs.Factory(list)

    def problem(self, message: str) -> None:
        """Count a refused line or blob, its message kept once."""
        self.problems += 1
        if message not in self.errors:
            self.errors.append(message)


class RunRefused(RemoteError):
    """403 for one run: the key may not write it (another project, or a run another key created)."""


#: Seconds after which a segment whose line the server refused is offered again (the refusal may have been
#: the server's state: a run it did not have yet).
RETRY_STUCK = 60.0


def _run_started_first(segments: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """``segments`` with the one that starts the run (its first line a ``run_started``) first."""
    def starts(path: Path) -> bool:
        try:
            with open(path, "rb") as f:
                head = f.read(4096)
        except OSError:
            return False
        return _STARTED in head.split(b"\n", 1)[0]

    return sorted(segments, key=lambda s: (not starts(s[1]), "/" in s[0], s[0]))


class Shipper:
    """Sends a folder store's runs to a tracker server (see the module's docstring).

    :param root: the store folder.
    :param session: the session with the server (its key must be a ``write`` or ``admin`` key).
    :param batch: bytes of complete lines per request.
    :param heartbeat_timeout: seconds after which a silent writer of another host counts as ended.
    :param log: told one line per refused line or blob.
    :param blob_progress: ``progress(total_bytes, label)`` -> a context manager whose value has ``update(n)``.
    """

    def __init__(self, root: str | os.PathLike[str], session: Session, *, batch: int = BATCH,
                 heartbeat_timeout: float = 120.0, log: Callable[[str], Any] | None = None,
                 blob_progress: Callable[[int, str], Any] | None = None, cache: Path | None = None) -> None:
        from tracker.capture.blobs import BlobStore

        self.root = Path(root)
        self.session = session
        self.batch = max(SMALLEST_BATCH, int(batch))
        self.heartbeat_timeout = heartbeat_timeout
        self.log = log or (lambda _m: None)
        self.blob_progress = blob_progress
        self.blobs = BlobStore(self.root)
        self.report = ShipReport()
        #: run id -> {segment name: the bytes the server has}, learned once per run.
        self.server: dict[str, dict[str, int]] = {}
        #: segment path -> (size, mtime_ns) when it was last sent to its end.
        self.seen: dict[Path, tuple[int, int]] = {}
        #: ``(run_id, segment name)`` of writers that may still append.
        self.live: set[tuple[str, str]] = set()
        #: ``(run_id, segment name)`` -> (size, when) a line was refused: not sent again before the segment grows
        #: or ``RETRY_STUCK`` seconds passed.
        self.stuck: dict[tuple[str, str], tuple[int, float]] = {}
        #: messages logged already (each once).
        self.said: set[str] = set()
        #: ``(run_id, segment name)`` -> when the server last heard of that live writer (bytes or a heartbeat).
        self.heard: dict[tuple[str, str], float] = {}
        #: seconds between heartbeats of a live writer that logs nothing (its segment's mtime on the server).
        self.heartbeat_every = max(1.0, min(10.0, heartbeat_timeout / 4))
        #: runs the key may not write -> the server's line.
        self.refused: dict[str, str] = {}
        #: sha256s the server is known to hold.
        self.known: set[str] = set()
        self.whoami: dict[str, Any] | None = None
        #: runs that had something new since the follower last asked (it publishes their offsets).
        self.changed: set[str] = set()
        self.cache = cache
        self.cached_at = 0.0
        if cache is not None:
            self._load(cache)

    # --- the key ---------------------------------------------------------------------------------

    def check_key(self) -> dict[str, Any]:
        """Ask the server who the key is (``GET /api/v1/whoami``); a key that cannot write is refused here.

        :raises KeyRefused: no key, an unknown, revoked or expired one, or a ``read`` key.
        :raises RemoteUnavailable: the server cannot be reached.
        """
        if not self.session.has_key:
            raise KeyRefused(f"no key for {self.session.url}: run `tracker login {self.session.url}` or set "
                             "TRACKER_API_KEY", 401)
        try:
            who = self.session.whoami()
        except KeyRefused as exc:
            said = exc.body.get("error") if isinstance(exc.body.get("error"), str) else "refused"
            raise KeyRefused(self.session.scrub(f"{self.session.url} refused key {self.session.key_id} "
                                                f"({exc.status} {said})"), exc.status, exc.body) from None
        if who.get("scope") not in ("write", "admin"):
            raise KeyRefused(f"{self.session.url}: key {who.get('id') or self.session.key_id} has scope "
                             f"{who.get('scope')!r}: shipping runs needs a write key", 403)
        self.whoami = who
        return who

    # --- runs ------------------------------------------------------------------------------------

    # --- what was shipped, kept between followers ------------------------------------------------

    def _load(self, path: Path) -> None:
        """Take the segments ``path`` says the server had whole (this server's, unchanged since) as shipped:
        a new follower then asks the server only about runs that changed, not about every run of the store."""
        import json

        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(doc, dict) or doc.get("url") != self.session.url or not isinstance(doc.get("runs"), dict):
            return
        for rid, segs in doc["runs"].items():
            if not isinstance(segs, dict) or not RUN_ID_RE.match(str(rid)):
                continue
            for name, sig in segs.items():
                ok = isinstance(sig, list) and len(sig) == 2 and all(isinstance(x, int) for x in sig)
                if ok and ".." not in name:
                    self.seen[self.root / "runs" / rid / name] = (sig[0], sig[1])
                    self.server.setdefault(rid, {})[name] = sig[0]

    def save(self, every: float = 5.0) -> None:
        """Write what the server has whole (at most every ``every`` seconds; 0: now), atomically."""
        import json

        if self.cache is None or time.monotonic() - self.cached_at < every:
            return
        self.cached_at = time.monotonic()
        runs: dict[str, dict[str, list[int]]] = {}
        for path, (size, mtime) in self.seen.items():
            rid = path.relative_to(self.root / "runs").parts[0]
            name = path.relative_to(self.root / "runs" / rid).as_posix()
            if self.server.get(rid, {}).get(name) == size and (rid, name) not in self.live:
                runs.setdefault(rid, {})[name] = [size, mtime]
        tmp = self.cache.with_name(f".{self.cache.name}.{os.getpid()}")
        try:
            tmp.write_text(json.dumps({"url": self.session.url, "runs": runs}), encoding="utf-8")
            os.replace(tmp, self.cache)
        except OSError:
            pass

    def run_ids(self) -> list[str]:
        """The store's run ids, sorted."""
        try:
            with os.scandir(self.root / "runs") as it:
                return sorted(e.name for e in it if e.is_dir() and RUN_ID_RE.match(e.name))
        except OSError:
            return []

    def learn(self, rid: str) -> dict[str, int]:
        """Where the server is with run ``rid``: ``{segment name: bytes it has}`` (asked once per run)."""
        known = self.server.get(rid)
        if known is None:
            doc = self.session.json("GET", f"{API}/runs/{rid}/segments")
            segs = doc.get("segments") if isinstance(doc, dict) else None
            if not isinstance(segs, dict):
                raise RemoteError(f"GET {self.session.url}{API}/runs/{rid}/segments: expected "
                                  '{"segments": {...}}')
            known = {str(k): int(v) for k, v in segs.items() if isinstance(v, int)}
            self.server[rid] = known
        return known

    def ship_run(self, rid: str) -> bool:
        """Send what run ``rid`` has that the server has not; returns whether anything went.

        :raises KeyRefused: the key was refused (401) for every request, not only this run's.
        :raises RemoteUnavailable: the server cannot be reached or is overloaded (after the session's retries).
        :raises RunRefused: the key may not write this run (403); the other runs go on.
        :raises RemoteError: the server failed this run in another way.
        """
        if rid in self.refused:
            raise RunRefused(self.refused[rid], 403)
        segments = shipped_files(self.root / "runs" / rid)
        if len(segments) > 1 and not self.server.get(rid):
            segments = _run_started_first(segments)  # a run new to the server begins with its start
        changed = False
        for name, path in segments:
            try:
                st = path.stat()
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns)
            if self.seen.get(path) == sig and (rid, name) not in self.live:
                continue
            try:
                offset = self.learn(rid).get(name, 0)
                stuck = self.stuck.get((rid, name))
                if st.st_size > offset and (stuck is None or stuck[0] != st.st_size
                                            or time.monotonic() - stuck[1] >= RETRY_STUCK):
                    if self._ship_segment(rid, name, path, offset, st.st_size):
                        changed = True
                        self.report.segments += 1
                        self.heard[(rid, name)] = time.monotonic()
                elif (rid, name) in self.live and self.seen.get(path) != sig and st.st_size == offset \
                        and time.monotonic() - self.heard.get((rid, name), 0.0) >= self.heartbeat_every:
                    # A live writer that logs nothing touches its segment: the server's copy is touched too
                    # (an empty POST at its end), so that the server's readers do not take the run as crashed.
                    self._post(rid, name, path, offset, b"")
                    self.heard[(rid, name)] = time.monotonic()
            except KeyRefused as exc:
                if exc.status == 403:
                    self.refused[rid] = str(exc)
                    raise RunRefused(str(exc), 403, exc.body) from None
                raise
            self.seen[path] = sig
            self._liveness(rid, name, path)
        if changed:
            self.report.runs += 1
            self.changed.add(rid)
        return changed

    def _liveness(self, rid: str, name: str, path: Path) -> None:
        if "/" in name:  # an edit segment: no writer of the run
            return
        from tracker.read.segment import read_segment

        try:
            alive = read_segment(path).alive(self.heartbeat_timeout)
        except StoreError:
            alive = False
        if alive:
            self.live.add((rid, name))
        else:
            self.live.discard((rid, name))

    def pending(self, rid: str) -> dict[str, int]:
        """``{segment name: complete bytes the server lacks}`` of run ``rid`` (as far as this shipper knows)."""
        known = self.learn(rid)
        out = {}
        for name, path in shipped_files(self.root / "runs" / rid):
            end = complete_end(path)
            if end > known.get(name, 0):
                out[name] = end - known.get(name, 0)
        return out

    # --- one segment -----------------------------------------------------------------------------

    def _ship_segment(self, rid: str, name: str, path: Path, offset: int, size: int) -> bool:
        """Send the segment's complete lines from ``offset`` up to ``size``; returns whether any went."""
        sent = False
        with open(path, "rb") as f:
            while offset < size:
                f.seek(offset)
                data = f.read(min(self.batch, size - offset))
                cut = data.rfind(b"\n")
                while cut < 0 and offset + len(data) < size:
                    more = f.read(min(self.batch, size - offset - len(data)))  # one line longer than a batch
                    if not more:
                        break
                    cut = more.find(b"\n")
                    if cut >= 0:
                        cut += len(data)
                    data += more
                if cut < 0:
                    break  # a torn last line: it goes once its writer completes it
                body = data[:cut + 1]
                self._blobs_named(rid, body)
                new = self._post(rid, name, path, offset, body)
                if new is None:
                    break  # a line the server refused: the segment waits (logged)
                if new != offset:
                    sent = True
                offset = new
        self.server.setdefault(rid, {})[name] = offset
        return sent

    def _post(self, rid: str, name: str, path: Path, offset: int, body: bytes) -> int | None:
        """POST ``body`` at ``offset``; returns the server's end after it (``None``: a line was refused)."""
        target = f"{API}/runs/{rid}/segments/{quote_segment(name, safe='/')}"
        while True:
            resp = self.session.request("POST", target, params={"offset": offset}, body=body, idempotent=True,
                                        ok=(400, 409, 413),
                                        headers={"Content-Type": "application/x-ndjson"})
            doc = resp.json() if resp.body else {}
            if resp.status == 413 and len(body) > SMALLEST_BATCH:
                self.batch = max(SMALLEST_BATCH, self.batch // 2)
                cut = body.rfind(b"\n", 0, max(1, len(body) // 2))
                if cut < 0:
                    cut = body.find(b"\n")
                if cut + 1 < len(body):
                    body = body[:cut + 1]
                    continue
            if resp.status == 200:
                end = doc.get("offset") if isinstance(doc, dict) else None
                if not isinstance(end, int):
                    raise RemoteError(f"POST {self.session.url}{target}: the answer has no offset")
                self.report.requests += 1
                self.report.bytes += max(0, end - offset)
                return end
            if resp.status == 409 and isinstance(doc.get("offset"), int):
                return int(doc["offset"])  # the server is elsewhere (it has more, or lost some): go on from there
            if resp.status == 400 and isinstance(doc.get("line"), int) and doc["line"] > 1:
                # Lines before the refused one go alone; the refused one stops the segment here.
                k = doc["line"]
                cut = -1
                for _ in range(k - 1):
                    cut = body.find(b"\n", cut + 1)
                good = self._post(rid, name, path, offset, body[:cut + 1]) if cut >= 0 else offset
                if good is None:
                    return None
                self._refuse_line(rid, name, path, doc, where=f"byte {good}")
                return None if good == offset else good
            self._refuse_line(rid, name, path, doc, where=f"from byte {offset}")
            return None

    def _refuse_line(self, rid: str, name: str, path: Path, doc: dict[str, Any], where: str) -> None:
        try:
            self.stuck[(rid, name)] = (path.stat().st_size, time.monotonic())
        except OSError:
            pass
        message = f"run {rid}: {name} {where}: the server refused a line: {doc.get('error') or 'no reason given'}" \
                  " (the lines after it wait; `tracker verify` checks the run)"
        self.report.problem(message)
        if message not in self.said:
            self.said.add(message)
            self.log(message)

    # --- blobs -----------------------------------------------------------------------------------

    def _blobs_named(self, rid: str, body: bytes) -> None:
        """Send every blob the lines of ``body`` name that the store has and the server lacks."""
        if not any(w in body for w in _BLOB_WORDS):
            return
        shas: list[str] = []
        for m in _SHA.finditer(body):
            sha = m.group().decode()
            if sha not in self.known and sha not in shas:
                shas.append(sha)
        if b'"folder":true' in body:  # a folder artifact's manifest names its members' blobs
            for sha in list(shas):
                try:
                    members = self.blobs.read_manifest(sha).files
                except (StoreError, ValueError, TypeError, KeyError):
                    continue
                shas.extend(e.sha256 for e in members if e.sha256 not in self.known and e.sha256 not in shas)
        for sha in shas:
            self._send_blob(rid, sha)

    def _send_blob(self, rid: str, sha: str) -> None:
        path = self.blobs.path(sha)
        try:
            size = path.stat().st_size
        except OSError:
            return  # not a blob of this store (a reference to a file outside it, or a hash in a text field)
        if not path.is_file():
            return
        target = f"{API}/blobs/sha256/{sha}"
        head = self.session.request("HEAD", target, ok=(404,))
        if head.status == 200:
            self.known.add(sha)
            self.report.blobs_present += 1
            return
        label = f"blob {sha[:12]} of run {rid}"
        if self.blob_progress is not None and size >= (8 << 20):
            with self.blob_progress(size, label) as bar:
                resp = self.session.put_file(target, path, size, ok=(400,), on_block=bar.update if bar else None)
        else:
            resp = self.session.put_file(target, path, size, ok=(400,))
        if resp.status == 400:
            said = resp.json().get("error") if resp.body else None
            message = f"run {rid}: the server refused {label}: {said or 'its bytes do not match its name'} " \
                      "(`tracker verify` checks the local copy)"
            self.report.problem(message)
            self.log(message)
            return
        self.known.add(sha)
        self.report.blobs += 1
        self.report.blob_bytes += size


def runs_behind(store: Any, session: Session) -> list[RunBehind]:
    """Every run of the folder store ``store`` against the server (one ``GET .../segments`` per run), most
    behind first."""
    shipper = Shipper(store.path, session)
    statuses = run_statuses(store)
    out = []
    for rid in shipper.run_ids():
        have = shipper.learn(rid)
        files = shipped_files(shipper.root / "runs" / rid)
        size = synced = behind = lines = 0
        for name, path in files:
            end = complete_end(path)
            done = min(have.get(name, 0), end)
            size += end
            synced += done
            if end > done:
                behind += end - done
                lines += lines_between(path, done, end)
        out.append(RunBehind(rid, statuses.get(rid, "?"), len(files), size, synced, behind, lines))
    out.sort(key=lambda r: (-r.bytes_behind, r.run_id))
    return out


def ship(root: str | os.PathLike[str], session: Session, *, runs: list[str] | None = None,
         on_run: Callable[[str, ShipReport], Any] | None = None, **kw: Any) -> ShipReport:
    """Send every run of the store at ``root`` (or those of ``runs``) to the server, from where it is.

    A run the key may not write is reported (in the report's ``errors``) and the others go on.

    :raises KeyRefused: the key is refused, or cannot write.
    :raises RemoteUnavailable: the server cannot be reached (after the retries).
    """
    t0 = time.perf_counter()
    shipper = Shipper(root, session, **kw)
    shipper.check_key()
    for rid in runs if runs is not None else shipper.run_ids():
        try:
            shipper.ship_run(rid)
        except RunRefused as exc:
            shipper.report.problem(str(exc))
        if on_run is not None:
            on_run(rid, shipper.report)
    shipper.report.seconds = time.perf_counter() - t0
    return shipper.report


__all__ = ["BATCH", "RemoteUnavailable", "RunBehind", "RunRefused", "ShipReport", "Shipper", "complete_end",
           "runs_behind", "ship"]
