"""The store's follower: one detached process per store that streams every run's new lines to the team database.

The destination is chosen by the URL's scheme: ``postgresql://`` copies
events into the database (below); ``https://`` (or ``http://`` to this
machine) hands segment bytes by offset to the lab's server through the
shipper of :mod:`tracker.remote.shipper`, with the same lock, markers,
passes, backoff and status file.

Started by the first run of a store that has ``[team] url`` (or
``TRACKER_TEAM_URL``) set (see :mod:`tracker.write.stream`), shared by the
later ones through ``<store>/team/follower.lock``, it tails the segment
files with the incremental machinery of ``tracker sync`` (:class:`Syncer`):
each batch of events commits in one transaction with the segment's offset,
so a follower killed at any moment is resumed by the next one from the last
commit without a duplicate, and a training process killed at any moment
leaves complete lines that the follower copies to the end. A database that
is down is retried with backoff; training never waits on it. The follower
ends once no run of the store has been live for ``linger`` seconds.

    python -m tracker.team.follower --store PATH      # the URL from TRACKER_TEAM_URL or [team] url

Its state is in ``<store>/team/follower.json`` and its messages in
``follower.log`` (passwords masked); ``tracker sync --status`` shows both.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import json
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError
from tracker.core.format import RUN_ID_RE
from tracker.core.urls import redact_url, url_secrets
from tracker.team.shipping import ConfigOnly, ShippingLoop
from tracker.write.stream import HOT_DIR, LOCK_FILE, LOG_FILE, STATUS_FILE, team_dir

#: Seconds between looks at the live runs (``TRACKER_FOLLOWER_INTERVAL``).
INTERVAL = 0.2
#: Seconds without a live run before the follower ends (``TRACKER_FOLLOWER_LINGER``).
LINGER = 30.0
#: Seconds between passes over every run of the store (resumed runs, runs of other machines' writers).
FULL_EVERY = 15.0
#: Seconds between retries of an unreachable database, doubling up to ``BACKOFF_MAX``.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 5.0
#: Seconds of an unreachable database after which the follower ends (a live run's watchdog starts another).
GIVE_UP = 600.0
#: Seconds between refreshes of live writers' ``seen_at`` in the database.
BEAT_EVERY = 5.0
#: The log is cut in two (``follower.log.1``) past this size.
LOG_LIMIT = 1 << 20


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


class Follower(ShippingLoop):
    """Streams a store's runs into the database at ``url`` while any of them is live.

    :param root: the store folder.
    :param url: the team database (``postgresql://...``).
    :param interval: seconds between looks at the live runs.
    :param linger: seconds without a live run before :meth:`run` returns.
    """

    def _blob_sync(self, store: Any) -> Any:
        """The uploader of the store's blobs to ``[team] blobs`` (``None`` when no bucket is set or it is unusable)."""
        from tracker.team.blobsync import open_blob_sync

        try:
            return open_blob_sync(store)
        except TrackerError as exc:  # a bad bucket URL, or no obstore: records still stream
            self.log(f"blobs are not uploaded: {exc}")
            return None

    def __init__(self, root: Path, url: str, *, interval: float = INTERVAL, linger: float = LINGER,
                 full_every: float = FULL_EVERY, backoff_max: float = BACKOFF_MAX, give_up: float = GIVE_UP) -> None:
        self.root = Path(root).absolute()
        self.url = url
        self.shown_url = redact_url(url)
        self.interval = interval
        self.linger = linger
        self.full_every = full_every
        self.backoff_max = backoff_max
        self.give_up = give_up
        self.down_since: float | None = None
        self.dir = team_dir(self.root)
        self.stop = threading.Event()
        self.lock_fd: int | None = None
        self.hot: set[str] = set()
        self.known: set[str] = set()
        self.runs_mtime: int | None = None
        self.bad_runs: dict[str, str] = {}
        #: scrubbers of secrets (the key) for messages: each takes text and gives it masked.
        self.secrets: list[Any] = []
        #: run id -> when the follower last looked at it (the runs ``follower.json`` tells the shipped bytes of).
        self.looked: dict[str, float] = {}
        self.state: dict[str, Any] = {"pid": os.getpid(), "store": str(self.root), "url": self.shown_url,
                                      "started_at": time.time(), "pass_at": None, "connected": False,
                                      "error": None, "retry_at": None, "events": 0, "live": []}
        self._status_at = 0.0

    def session_name(self) -> str:
        """The follower's ``application_name`` in the database: one per store and machine, so that a new
        follower ends the sessions a killed one left open on the server (and the locks they hold)."""
        import hashlib
        import socket

        digest = hashlib.sha256(f"{socket.gethostname()}\0{self.root}".encode()).hexdigest()[:16]
        return f"tracker-follower-{digest}"

    # --- lock ------------------------------------------------------------------------------------

    def acquire(self, wait: float = 2.0) -> bool:
        """Take the store's follower lock, waiting up to ``wait`` seconds; ``False``: another follower has it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                # Held: by a live follower, or for a moment by a run checking whether one lives.
                if time.monotonic() >= deadline or self.stop.is_set():
                    os.close(fd)
                    return False
                time.sleep(0.05)
                continue
            self.lock_fd = fd
            return True

    def release(self) -> None:
        """Let go of the follower lock."""
        if self.lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.lock_fd)  # closing drops the flock
            self.lock_fd = None

    # --- messages and state ----------------------------------------------------------------------

    def _clean(self, text: str) -> str:
        for secret in filter(None, (*url_secrets(self.url), os.environ.get("PGPASSWORD"),
                                    os.environ.get("TRACKER_API_KEY"))):
            text = text.replace(secret, "***")
        for scrub in self.secrets:
            text = scrub(text)
        return text

    def log(self, message: str) -> None:
        """Append one line to ``follower.log`` (passwords masked)."""
        path = self.dir / LOG_FILE
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {self._clean(message)}\n"
        try:
            if path.exists() and path.stat().st_size > LOG_LIMIT:
                os.replace(path, path.with_name(LOG_FILE + ".1"))
            with open(path, "a", encoding="utf-8") as f:
                f.write(line)
        except OSError:
            pass

    def write_status(self, force: bool = False) -> None:
        """Write ``follower.json`` (at most once a second unless ``force``), atomically."""
        now = time.monotonic()
        if not force and now - self._status_at < 1.0:
            return
        self._status_at = now
        path = self.dir / STATUS_FILE
        tmp = path.with_name(f".{STATUS_FILE}.{os.getpid()}")
        try:
            tmp.write_text(json.dumps(self.state), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass

    # --- the loop --------------------------------------------------------------------------------

    def run(self) -> int:
        """Follow the store until no run is live for ``linger`` seconds, or SIGTERM; returns an exit code."""
        if not self.acquire():
            return 0
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
            signal.signal(signal.SIGINT, lambda *_: self.stop.set())
        self.log(f"following {self.root} into {self.shown_url}")
        self.write_status(force=True)
        try:
            self._loop()
        finally:
            if self.lock_fd is not None:  # else a new follower may own follower.json already
                self._stopped()
                self.release()
            self.log("stopped")
        return 0

    def _stopped(self) -> None:
        self.state.update(connected=False, live=[], stopped_at=time.time())
        self.write_status(force=True)

    def _loop(self) -> None:
        from tracker.remote.session import is_remote_url

        if is_remote_url(self.url):
            self._loop_remote()
            return
        from tracker.core.config import load_config
        from tracker.read.reader import Store
        from tracker.team.database import require_psycopg
        from tracker.team.sync import Syncer, SyncReport

        psycopg = require_psycopg()
        # The follower copies lines and reads runs' ends: it needs the configuration (heartbeat timeout),
        # never a plugin, so it loads none (half a second less to start, per store).
        store = Store(self.root, host=ConfigOnly(load_config()))
        syncer: Syncer | None = None
        backoff = BACKOFF_FIRST
        full_at = -1e18
        beat_at = time.monotonic()
        idle_since = time.monotonic()
        report = SyncReport()
        while not self.stop.is_set():
            now = time.monotonic()
            if not store.runs_dir.is_dir():
                self.log(f"{store.runs_dir} is gone: nothing left to follow")
                break
            if syncer is None:
                tried = time.monotonic()
                try:
                    syncer = Syncer(store, self.url, exclusive=self.session_name())
                except TrackerError as exc:
                    # An attempt that waited for its deadline has waited already: the next starts sooner.
                    backoff = self._down(str(exc), backoff, spent=time.monotonic() - tried)
                    if time.monotonic() - (self.down_since or 0.0) >= self.give_up:
                        self.log(f"giving up after {self.give_up:.0f}s; a live run starts a follower again")
                        break
                    continue
                self.down_since = None
                syncer.blob_sync = self._blob_sync(store)
                self.log("connected" if self.state["error"] is None else "connected again: catching up")
                self.state.update(connected=True, error=None, retry_at=None)
                backoff = BACKOFF_FIRST
                full_at = -1e18  # after each (re)connection, one pass over every run
            try:
                full = now - full_at >= self.full_every
                changed = self._pass(store, functools.partial(syncer._sync_run, report=report), syncer, full,
                                     (psycopg.Error,))
                if full:
                    full_at = now
                if now - beat_at >= BEAT_EVERY:
                    syncer.heartbeat()
                    beat_at = now
            except (psycopg.Error, TrackerError) as exc:  # the store's own errors stay in _pass
                syncer.close()
                syncer = None
                message = str(exc) if isinstance(exc, TrackerError) else str(syncer_fail(self.url, exc))
                backoff = self._down(message, backoff)
                continue
            self.state.update(pass_at=time.time(), events=report.events_new, live=sorted(self.hot))
            self.write_status()
            idle_since = self._rest(changed, now, idle_since)
            if idle_since is None:
                break
        if syncer is not None:
            syncer.close()

    def _down(self, message: str, backoff: float, spent: float = 0.0, what: str = "database") -> float:
        """The database is out of reach: say so, wait ``backoff`` seconds (less the ``spent`` seconds the failed
        attempt took); returns the next backoff."""
        message = self._clean(message)
        if self.down_since is None:
            self.down_since = time.monotonic()
        if self.state["error"] != message:
            self.log(f"{what} unreachable, retrying with backoff: {message}")
        self.state.update(connected=False, error=message, retry_at=time.time() + backoff)
        self.write_status(force=True)
        self.stop.wait(max(0.05, backoff - spent))
        return min(backoff * 2, self.backoff_max)

    def _pass(self, store: Any, sync_one: Any, syncer: Any, full: bool, fatal: tuple[type[BaseException], ...]) -> bool:
        """One look: the runs started since the last one, the live runs, or (``full``) every run.

        :param sync_one: ``sync_one(run_id) -> bool``: copies what is new of one run, says whether anything was.
        :param syncer: the destination: its ``live`` set of ``(run_id, writer)``, its ``blob_sync`` (or ``None``).
        :param fatal: the destination's errors that end the pass (the link is down); a run's own errors do not.
        """
        # The markers go first: a run started again after this look leaves a new one.
        self.hot.update(name for name in self._take_markers() if RUN_ID_RE.match(name))
        try:
            mtime = os.stat(store.runs_dir).st_mtime_ns
        except OSError:
            mtime = None
        if full or mtime != self.runs_mtime:
            ids = set(store.run_ids())
            self.hot |= ids - self.known
            self.known = ids
            self.runs_mtime = mtime
        # Live runs first, and again every other interval while a full pass copies a backlog (runs logged
        # while no follower ran): that never holds them back for long.
        hot_first = sorted(self.hot)
        backlog = sorted(self.known - self.hot) if full else []
        changed = False
        looked_at = time.monotonic()

        def one(rid: str) -> None:
            nonlocal changed
            try:
                if sync_one(rid):
                    changed = True
                    if getattr(syncer, "blob_sync", None) is not None:
                        # The run's blobs follow its records into the bucket ([team] blobs), as `tracker sync`
                        # uploads them; one that cannot go now stays pending for the next pass.
                        syncer.blob_sync.sync_run(rid)
            except fatal:
                raise
            except TrackerError as exc:  # the run's files (a run moved to the trash meanwhile), a refused run
                if self.bad_runs.get(rid) != str(exc):
                    self.log(f"run {rid}: {exc}")
                self.bad_runs[rid] = str(exc)
                self.hot.discard(rid)

        for rid in hot_first:
            one(rid)
        for rid in backlog:
            one(rid)
            if time.monotonic() - looked_at >= 2 * self.interval:
                for hot in sorted(self.hot):
                    one(hot)
                looked_at = time.monotonic()
        targets = hot_first + backlog
        live = {rid for rid, _w in syncer.live}
        # A run stays looked at while a writer of it is live; one that ended was copied to its end.
        self.hot = {rid for rid in self.hot if rid in live} | (live & set(targets))
        return changed

    def _rest(self, changed: bool, now: float, idle_since: float) -> float | None:
        """After a pass begun at ``now``: wait ``interval`` seconds and give the time since when nothing has been
        live or changed, or ``None`` to end (nothing for ``linger`` seconds, and :meth:`_may_end` agrees)."""
        if self.hot or changed:
            idle_since = now
        elif now - idle_since >= self.linger:
            if self._may_end():
                return None
            idle_since = time.monotonic()
        self.stop.wait(self.interval)
        return idle_since

    def _may_end(self) -> bool:
        """Whether to end now: the lock is let go first, so a run starting meanwhile is never left alone."""
        self._stopped()
        self.release()
        started = False
        with contextlib.suppress(OSError):
            started = bool(os.listdir(self.dir / HOT_DIR))
        with contextlib.suppress(OSError):
            started = started or os.stat(self.root / "runs").st_mtime_ns != self.runs_mtime
        if not started:
            return True
        # A run started: go on if the lock is free again, else a new follower has it.
        if not self.acquire(wait=0.0):
            return True
        self.state.pop("stopped_at", None)
        self.write_status(force=True)
        return False


def syncer_fail(url: str, exc: BaseException) -> TrackerError:
    """One line for a database error, password masked."""
    from tracker.team.database import error_line

    return TrackerError(f"{redact_url(url)}: {error_line(url, exc)}")


def _detach() -> None:
    """Fork once more and let the first process exit, so the follower is no child of the run that started it."""
    if os.fork() > 0:
        os._exit(0)


def _quiet_warnings(follower: Follower) -> None:
    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        follower.log(f"warning: {message}")

    warnings.showwarning = show  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    """``python -m tracker.team.follower --store PATH``: follow one store (the URL from the environment)."""
    parser = argparse.ArgumentParser(prog="python -m tracker.team.follower",
                                     description="Stream a store's runs into the team database.")
    parser.add_argument("--store", required=True, help="the store folder")
    parser.add_argument("--detach", action="store_true", help="fork into the background first")
    parser.add_argument("--interval", type=float, default=None, help="seconds between looks at live runs")
    parser.add_argument("--linger", type=float, default=None, help="seconds without a live run before ending")
    args = parser.parse_args(argv)
    if args.detach:
        _detach()
    from tracker.core.config import load_config
    from tracker.core.urls import team_url

    try:
        # The run that started this follower names the URL it streams to; else the configuration's.
        url = os.environ.pop("TRACKER_FOLLOWER_URL", None) or team_url(load_config())
    except TrackerError as exc:
        print(f"tracker follower: {exc}", file=sys.stderr)
        return 1
    if not url:
        print("tracker follower: no team database: set [team] url in tracker.toml or TRACKER_TEAM_URL",
              file=sys.stderr)
        return 2
    with contextlib.suppress(OSError):
        os.nice(10)  # the training processes come first
    follower = Follower(Path(args.store), url,
                        interval=args.interval or _env_seconds("TRACKER_FOLLOWER_INTERVAL", INTERVAL),
                        linger=args.linger or _env_seconds("TRACKER_FOLLOWER_LINGER", LINGER),
                        backoff_max=_env_seconds("TRACKER_FOLLOWER_BACKOFF_MAX", BACKOFF_MAX),
                        give_up=_env_seconds("TRACKER_FOLLOWER_GIVE_UP", GIVE_UP))
    _quiet_warnings(follower)
    try:
        return follower.run()
    except Exception as exc:  # noqa: BLE001 - the log says why, passwords masked
        follower.log(f"failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        return 1


__all__ = ["Follower", "main"]


if __name__ == "__main__":
    sys.exit(main())
