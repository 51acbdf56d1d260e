"""Logins kept in memory and failed attempts counted per address, for the dashboard's ways in.

:class:`Sessions` holds the sessions of ``tracker ui --auth`` (keyed by a hash
of their cookie); :class:`FailureLimit` refuses an address after too many
failed attempts (logins, tokens, API keys). Imports nothing of tracker.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Failed logins an address may make within :data:`FAILURE_WINDOW` seconds before it gets 429.
MAX_FAILURES, FAILURE_WINDOW = 5, 60.0
#: How long a session lasts after its login, in seconds.
SESSION_SECONDS = 7 * 24 * 3600

@dataclass
class Session:
    """One login: who, when it ends, and the credential it was made with (a changed password ends it)."""

    user: str
    expires: float
    proof: str


class Sessions:
    """Sessions kept in memory, keyed by the SHA-256 of their cookie (a lookup leaks nothing of a cookie)."""

    def __init__(self, seconds: float = SESSION_SECONDS, limit: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.limit = limit
        self.clock = clock
        self._by_key: dict[str, Session] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(cookie: str) -> str:
        return hashlib.sha256(cookie.encode("utf-8", "replace")).hexdigest()

    def create(self, user: str, proof: str = "") -> str:
        """A new session of ``user``; returns the cookie value (256 random bits)."""
        cookie = secrets.token_urlsafe(32)
        with self._lock:
            now = self.clock()
            if len(self._by_key) >= self.limit:
                for key in [k for k, s in self._by_key.items() if s.expires <= now]:
                    del self._by_key[key]
                while len(self._by_key) >= self.limit:  # the oldest logins go first
                    del self._by_key[min(self._by_key, key=lambda k: self._by_key[k].expires)]
            self._by_key[self._key(cookie)] = Session(user, now + self.seconds, proof)
        return cookie

    def get(self, cookie: str | None) -> Session | None:
        """The live session of ``cookie``, else ``None``."""
        if not cookie:
            return None
        key = self._key(cookie)
        with self._lock:
            session = self._by_key.get(key)
            if session is not None and session.expires <= self.clock():
                del self._by_key[key]
                return None
            return session

    def drop(self, cookie: str | None) -> None:
        """End the session of ``cookie`` (its cookie is refused from now on)."""
        if cookie:
            with self._lock:
                self._by_key.pop(self._key(cookie), None)

    def __len__(self) -> int:
        return len(self._by_key)


class FailureLimit:
    """Failed attempts per client address: after ``limit`` within ``window`` seconds, wait."""

    def __init__(self, limit: int = MAX_FAILURES, window: float = FAILURE_WINDOW,
                 clock: Callable[[], float] = time.monotonic, addresses: int = 10_000) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self.addresses = addresses
        self._times: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> list[float]:
        times = [t for t in self._times.get(address, ()) if t > now - self.window]
        if times:
            self._times[address] = times
        else:
            self._times.pop(address, None)
        return times

    def wait(self, address: str) -> int:
        """Seconds ``address`` must wait before trying again (0: it may try now)."""
        with self._lock:
            now = self.clock()
            times = self._recent(address, now)
            if len(times) < self.limit:
                return 0
            return max(1, math.ceil(times[-self.limit] + self.window - now))

    def failed(self, address: str) -> None:
        """Count a failed attempt of ``address``."""
        with self._lock:
            now = self.clock()
            if address not in self._times and len(self._times) >= self.addresses:
                for a in list(self._times):
                    self._recent(a, now)
                if len(self._times) >= self.addresses:
                    self._times.pop(next(iter(self._times)))
            self._times.setdefault(address, []).append(now)

    def succeeded(self, address: str) -> None:
        """Forget the failures of ``address`` (it logged in)."""
        with self._lock:
            self._times.pop(address, None)

__all__ = ["FAILURE_WINDOW", "MAX_FAILURES", "SESSION_SECONDS", "FailureLimit", "Session", "Sessions"]
