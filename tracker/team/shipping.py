"""The store's follower's loop for a tracker server (``https://``): segments shipped by offset, refusals said.

:class:`ShippingLoop` is a part of :class:`tracker.team.follower.Follower`:
with an ``http(s)://`` URL the follower runs :meth:`ShippingLoop._loop_remote`
instead of its database loop, with the same lock, run markers, passes over
the hot runs and the backlog, backoff and status file. What it ships and how
is :class:`tracker.remote.shipper.Shipper`'s; the follower learns no HTTP.
A key (or a URL) the server refuses is written into ``follower.json``, where
the logging processes read it and say it in one line; the follower asks
again when a run starts, and ends after ``linger`` seconds without one.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from tracker.core.errors import TrackerError
from tracker.write.stream import HOT_DIR

#: Seconds between retries of an unreachable server start here and double up to the follower's ``backoff_max``.
BACKOFF_FIRST = 0.5
#: ``<store>/team/shipped.json``: the segments a server had whole when the last follower shipping to it looked
#: (a new follower asks the server only about the runs that changed since).
SHIPPED_FILE = "shipped.json"
#: Seconds before a key the server refused is tried again.
REFUSED_RETRY = 30.0


class ConfigOnly:
    """The host a follower reads with: the configuration, and no plugin (it never decodes a record)."""

    def __init__(self, config: Any) -> None:
        self.config = config


class ShippingLoop:
    """The follower's loop and its helpers for a tracker server (mixed into the follower; see the module)."""

    def _loop_remote(self) -> None:
        """:meth:`_loop` for a tracker server: each run's new complete lines shipped by offset
        (:class:`tracker.remote.shipper.Shipper`), with backoff and jitter while the server is out of reach
        (its ``Retry-After`` honoured), and a key the server refuses said in ``follower.json`` for the runs."""
        from tracker.core.config import load_config
        from tracker.read.reader import Store
        from tracker.remote.session import KeyRefused, RemoteUnavailable, Session, backoff
        from tracker.remote.shipper import Shipper

        config = load_config()
        store = Store(self.root, host=ConfigOnly(config))
        shipper: Shipper | None = None
        attempt = 0
        full_at = -1e18
        idle_since = time.monotonic()
        refused_at: float | None = None  # since when the server refuses (None: it does not)
        recheck = False  # refused: wait before asking again
        while not self.stop.is_set():
            now = time.monotonic()
            if not store.runs_dir.is_dir():
                self.log(f"{store.runs_dir} is gone: nothing left to follow")
                break
            if recheck:
                # Refused: asked again after a while, or at once when a run starts (a new key may be there);
                # with no run started for `linger` seconds, the follower ends (a run's start begins another).
                if not self._wait_refused() and time.monotonic() - (refused_at or 0.0) >= self.linger:
                    break
                recheck = False
                continue
            if shipper is None:
                try:
                    # One quick second try inside the session (a keep-alive connection the server closed);
                    # the longer waits are this loop's, so that follower.json tells them.
                    session = Session.from_config(self.url, config, attempts=2)
                    self.secrets = [session.scrub]
                    shipper = Shipper(self.root, session, heartbeat_timeout=config.heartbeat_timeout, log=self.log,
                                      cache=self.dir / SHIPPED_FILE)
                    who = shipper.check_key()
                except KeyRefused as exc:
                    shipper = None
                    self._refused(str(exc))
                    refused_at, recheck = refused_at or time.monotonic(), True
                    continue
                except RemoteUnavailable as exc:  # unreachable or overloaded
                    shipper = None
                    wait = getattr(exc, "retry_after", None)
                    self._down(str(exc), wait if wait is not None else backoff(attempt, BACKOFF_FIRST,
                                                                               self.backoff_max), what="server")
                    attempt += 1
                    if time.monotonic() - (self.down_since or 0.0) >= self.give_up:
                        self.log(f"giving up after {self.give_up:.0f}s; a live run starts a follower again")
                        break
                    continue
                except TrackerError as exc:  # a URL refused before sending (plain http:// off this machine), a CA
                    shipper = None            # bundle that cannot be read, an answer that is not the API's
                    self._refused(str(exc))
                    refused_at, recheck = refused_at or time.monotonic(), True
                    continue
                self.down_since = None
                attempt = 0
                refused_at = None
                self.log(("connected" if self.state["error"] is None else "connected again: catching up")
                         + f" (key {who.get('id')}, scope {who.get('scope')})")
                self.state.update(connected=True, error=None, retry_at=None, refused=None)
                full_at = -1e18
            try:
                full = now - full_at >= self.full_every
                changed = self._pass(store, shipper.ship_run, shipper, full, (KeyRefused, RemoteUnavailable))
                if full:
                    full_at = now
            except KeyRefused as exc:  # revoked or expired meanwhile
                shipper.session.close()
                shipper = None
                self._refused(str(exc))
                refused_at, recheck = refused_at or time.monotonic(), True
                continue
            except RemoteUnavailable as exc:
                shipper.session.close()
                shipper = None
                self._down(str(exc), exc.retry_after if exc.retry_after is not None else
                           backoff(0, BACKOFF_FIRST, self.backoff_max), what="server")
                attempt = 1
                continue
            self.state.update(pass_at=time.time(), live=sorted(self.hot), events=shipper.report.bytes,
                              refused_runs=dict(shipper.refused), shipped=self._shipped(shipper))
            if changed:
                shipper.save()
            self.write_status(force=changed)
            idle_since = self._rest(changed, now, idle_since)
            if idle_since is None:
                break
        if shipper is not None:
            shipper.save(every=0)
            shipper.session.close()

    def _shipped(self, shipper: Any) -> dict[str, dict[str, int]]:
        """What the server has of the runs looked at lately (``finish()`` waits on it), the newest 200."""
        now = time.time()
        for rid in self.hot | shipper.changed:
            self.looked[rid] = now
        shipper.changed.clear()
        recent = sorted(self.looked, key=self.looked.__getitem__, reverse=True)[:200]
        self.looked = {rid: self.looked[rid] for rid in recent}
        return {rid: dict(shipper.server[rid]) for rid in recent if rid in shipper.server}

    def _refused(self, message: str) -> None:
        """The server refused the key (or the URL was refused before sending): said once in the log and in
        ``follower.json``, where the logging processes read it; asked again later (a new ``tracker login``
        may have fixed it)."""
        message = self._clean(message)
        if self.state.get("refused") != message:
            self.log(f"refused: {message}")
        self.state.update(connected=False, refused=message, error=None, retry_at=time.time() + REFUSED_RETRY)
        self.write_status(force=True)

    def _take_markers(self) -> list[str]:
        """The names of the run markers in ``team/hot/``, each removed as it is taken: a run started again after
        this look leaves a new one."""
        hot_dir = self.dir / HOT_DIR
        try:
            names = os.listdir(hot_dir)
        except OSError:
            names = []
        for name in names:
            with contextlib.suppress(OSError):
                os.unlink(hot_dir / name)
        return names

    def _wait_refused(self) -> bool:
        """Wait up to ``REFUSED_RETRY`` seconds; ``True`` as soon as a run starts (its marker, taken here)."""
        deadline = time.monotonic() + REFUSED_RETRY
        while not self.stop.wait(min(0.5, self.interval * 2)):
            if self._take_markers():
                return True
            if time.monotonic() >= deadline:
                return False
        return False


__all__ = ["REFUSED_RETRY", "SHIPPED_FILE", "ConfigOnly", "ShippingLoop"]
