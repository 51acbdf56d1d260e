"""How ``tracker server`` over the team database takes writes: a spool folder, synced on as it fills.

The server of a ``postgresql://`` store does not learn a second way to
write the database. It keeps a folder store of its own, the spool, where
shipped segments and blobs land exactly as they do in a served folder
(:mod:`tracker.remote.ingest`), and the server's JSON writers write their
runs there too; a thread runs the existing team sync (:func:`tracker.team.sync.sync`,
the same code as ``tracker sync --follow`` and the follower) from the spool
into the database, and, with ``[team] blobs`` / ``TRACKER_TEAM_BLOBS`` set,
the runs' blobs into the bucket. Each accepted request wakes it, so a
record is in the database within a fraction of a second. The sync is
idempotent and resumes from the offsets the database holds, so a server
restarted (or killed) loses nothing: what the spool holds is synced again
from where the database stands. Only the server holds the database and
bucket credentials.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from pathlib import Path
from typing import Any


def default_spool(url: str) -> Path:
    """The spool of the database at ``url`` when ``--spool`` is not given:
    ``$XDG_STATE_HOME/tracker/spool/<hash of the URL without password>`` (``~/.local/state/...``)."""
    from tracker.core.urls import redact_url

    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "tracker" / "spool" / hashlib.sha256(redact_url(url).encode()).hexdigest()[:16]


class SpoolSync:
    """The thread that syncs the spool into the database (see the module's docstring).

    :param spool: the spool folder (made when missing).
    :param url: the database.
    :param store: the spool opened as a folder store (:class:`tracker.Store`, made by the caller: the store
        floor is above this one).
    :param say: where one-line notices go (a lost connection, connecting again).
    :param interval: seconds between two looks when nothing woke it.
    """

    def __init__(self, spool: Path, url: str, store: Any, *, say: Any = None, interval: float = 2.0) -> None:
        self.spool = Path(spool)
        self.store = store
        self.url = url
        self.say = say or (lambda _m: None)
        self.interval = interval
        self.stop = threading.Event()
        self._wake = threading.Event()
        self.error: str | None = None
        self.thread = threading.Thread(target=self._main, name="tracker-spool-sync", daemon=True)

    def start(self) -> SpoolSync:
        """Start syncing (what the spool already holds first)."""
        (self.spool / "runs").mkdir(parents=True, exist_ok=True)
        self.thread.start()
        return self

    def wake(self, run_id: str | None = None) -> None:
        """New bytes arrived (of ``run_id``): sync now."""
        self._wake.set()

    def _main(self) -> None:
        from tracker.core.errors import TrackerError
        from tracker.team.sync import sync

        store = self.store
        stop = self.stop
        wake = self._wake

        class Waker(threading.Event):
            """The sync loop's stop event: its ``wait(interval)`` also ends when a request wakes it."""

            def is_set(self) -> bool:
                return stop.is_set()

            def wait(self, timeout: float | None = None) -> bool:
                wake.wait(timeout)
                wake.clear()
                return stop.is_set()

        while not stop.is_set():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a damaged line is refused at the door; none reach here
                    sync(store, self.url, follow=True, interval=self.interval, stop=Waker(), on_lost=self.say)
                self.error = None
            except TrackerError as exc:
                self.error = str(exc)
                self.say(f"tracker server: syncing the spool into the database: {exc}; trying again in 5 s")
                stop.wait(5.0)

    def close(self, timeout: float = 10.0) -> None:
        """Stop after the pass under way."""
        self.stop.set()
        self._wake.set()
        if self.thread.is_alive():
            self.thread.join(timeout)


__all__ = ["SpoolSync", "default_spool"]
