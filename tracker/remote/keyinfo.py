"""What an API key of ``tracker server`` is, and what a key store does: scopes, expiry, checks, run owners.

A key is ``trk_<id>_<secret>``: a public id of 12 hex digits and a secret of
256 random bits (64 hex digits, :mod:`secrets`). A store keeps only the
SHA-256 of the secret (random and long: a plain hash is as good as a slow
one, and a check costs microseconds), compared with :func:`hmac.compare_digest`.
Where keys are kept: :mod:`tracker.remote.keys` (a folder store) and
:mod:`tracker.remote.keydb` (the team database).
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

import attrs

from tracker.core.errors import TrackerError

SCOPES = ("read", "write", "admin")
#: What each scope may do (a scope includes those before it).
RANKS = {"read": 0, "write": 1, "admin": 2}
KEY_RE = re.compile(r"trk_([0-9a-f]{12})_([0-9a-f]{64})\Z")
ID_RE = re.compile(r"[0-9a-f]{12}\Z")
#: Seconds between two records of a key's last use.
TOUCH_EVERY = 60.0
_DURATION = re.compile(r"(\d+)\s*([smhdwy])\Z")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
MAX_NAME = 200


class KeyRefused(TrackerError):
    """A key that opens nothing: unknown, malformed, revoked or expired (the message names its id, never the key)."""


class UnknownKey(TrackerError):
    """No key of that id in the store (``revoke``)."""


@attrs.define
class KeyInfo:
    """What the store knows of one key (never its secret)."""

    id: str
    name: str
    scope: str
    projects: list[str]
    creator: str
    created: float
    expires: float | None = None
    revoked: float | None = None
    last_used: float | None = None

    def allows(self, scope: str) -> bool:
        """Whether this key's scope includes ``scope``."""
        return RANKS[self.scope] >= RANKS[scope]

    def may_project(self, project: str | None) -> bool:
        """Whether this key may write runs of ``project`` (a key of no projects may write every project)."""
        return not self.projects or project in self.projects

    def status(self, now: float | None = None) -> str:
        """``active``, ``revoked`` or ``expired``."""
        if self.revoked is not None:
            return "revoked"
        if self.expires is not None and self.expires <= (time.time() if now is None else now):
            return "expired"
        return "active"

    def to_json(self) -> dict[str, Any]:
        """The public fields (``whoami``, ``tracker keys list --format json``)."""
        return {"id": self.id, "name": self.name, "scope": self.scope, "projects": list(self.projects),
                "creator": self.creator, "created": self.created, "expires": self.expires,
                "revoked": self.revoked, "last_used": self.last_used, "status": self.status()}


def parse_expires(text: str | None, now: float | None = None) -> float | None:
    """The expiry time of ``--expires``: ``90d``, ``12h``, ``30m``, ``2w``, ``1y`` or ``never`` (``None``).

    :raises TrackerError: naming what is expected.
    """
    if text is None or str(text).strip().lower() in ("", "never", "none"):
        return None
    m = _DURATION.fullmatch(str(text).strip().lower())
    if not m or int(m.group(1)) <= 0:
        raise TrackerError(f"--expires: expected a duration such as 90d, 12h, 30m, 2w, 1y (or never), given "
                           f"{str(text)[:40]!r}")
    return (time.time() if now is None else now) + int(m.group(1)) * _UNITS[m.group(2)]


def check_fields(name: Any, scope: Any, projects: Any) -> tuple[str, str, list[str]]:
    """A new key's name, scope and projects, checked.

    :raises TrackerError: naming the field, what is expected and what was given.
    """
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME or any(ord(c) < 32 for c in name):
        raise TrackerError(f"name: expected 1 to {MAX_NAME} printable characters, given {str(name)[:40]!r}")
    if scope not in SCOPES:
        raise TrackerError(f"scope: expected one of {', '.join(SCOPES)}, given {str(scope)[:40]!r}")
    if projects is None:
        projects = []
    if isinstance(projects, str) or not isinstance(projects, (list, tuple)) or \
            not all(isinstance(p, str) and p and len(p) <= MAX_NAME for p in projects):
        raise TrackerError("projects: expected a list of project names (free text, 1 to 200 characters)")
    return name.strip(), scope, list(dict.fromkeys(projects))


def new_key() -> tuple[str, str, str]:
    """A fresh key: ``(id, key, hash of its secret)``."""
    kid, secret = secrets.token_hex(6), secrets.token_hex(32)
    return kid, f"trk_{kid}_{secret}", _hash(secret)


def split_key(key: str) -> tuple[str, str]:
    """``(id, secret)`` of a key in the ``trk_<id>_<secret>`` form.

    :raises KeyRefused: for anything else (the message never repeats what was given).
    """
    m = KEY_RE.fullmatch(key.strip()) if isinstance(key, str) else None
    if m is None:
        raise KeyRefused("not an API key of tracker (expected trk_<id>_<secret>)")
    return m.group(1), m.group(2)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def default_creator() -> str:
    """Who runs this command: ``user@host``."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        user = "?"
    return f"{user}@{socket.gethostname()}"


class KeyStore:
    """Keys and run owners of one served store (see the module's docstring); thread-safe."""

    where = ""

    # -- what the two places implement

    def _add(self, info: KeyInfo, digest: str) -> None:
        raise NotImplementedError

    def _get(self, kid: str) -> tuple[KeyInfo, str] | None:
        raise NotImplementedError

    def keys(self) -> list[KeyInfo]:
        """Every key, oldest first (revoked and expired ones too)."""
        raise NotImplementedError

    def _revoke(self, kid: str, when: float, by: str) -> None:
        raise NotImplementedError

    def _touch(self, kid: str, when: float) -> None:
        raise NotImplementedError

    def owner(self, run_id: str) -> tuple[str, str | None] | None:
        """``(key id, project)`` of the key that created run ``run_id`` through the server, or ``None``."""
        raise NotImplementedError

    def _claim(self, run_id: str, kid: str, project: str | None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Let go of files or connections."""

    # -- the common part

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._touched: dict[str, float] = {}

    def create(self, name: str, scope: str, projects: Iterable[str] = (), expires: float | None = None,
               creator: str | None = None) -> tuple[KeyInfo, str]:
        """Make a key: ``(its info, the key)``; the key is shown once and kept only as a hash.

        :raises TrackerError: a bad name, scope or project list.
        """
        name, scope, plist = check_fields(name, scope, list(projects))
        kid, key, digest = new_key()
        info = KeyInfo(id=kid, name=name, scope=scope, projects=plist, creator=creator or default_creator(),
                       created=time.time(), expires=expires)
        self._add(info, digest)
        return info, key

    def revoke(self, kid: str, by: str | None = None) -> KeyInfo:
        """Revoke key ``kid`` (its next request is refused); revoking it again changes nothing.

        :raises TrackerError: an unknown id (the message lists how to see them).
        """
        kid = kid.strip()
        if kid.startswith("trk_"):
            kid = kid[4:].partition("_")[0]  # a whole key given by mistake: its id, never echoed back whole
        found = self._get(kid) if ID_RE.fullmatch(kid) else None
        if found is None:
            raise UnknownKey(f"no key {kid[:12]!r} in {self.where} (see `tracker keys list`)")
        info = found[0]
        if info.revoked is None:
            self._revoke(kid, time.time(), by or default_creator())
            info.revoked = time.time()
        return info

    def check(self, key: str) -> KeyInfo:
        """The key's info when it may be used now; its last use is recorded (at most once a minute).

        :raises KeyRefused: unknown, malformed, revoked or expired, naming the id only.
        """
        kid, secret = split_key(key)
        found = self._get(kid)
        digest = _hash(secret)
        if found is None:
            hmac.compare_digest(digest, digest)  # the same work for an unknown id
            raise KeyRefused(f"unknown API key {kid}")
        info, want = found
        if not hmac.compare_digest(digest, want):
            raise KeyRefused(f"unknown API key {kid}")
        status = info.status()
        if status == "revoked":
            raise KeyRefused(f"API key {kid} ({info.name}) was revoked")
        if status == "expired":
            raise KeyRefused(f"API key {kid} ({info.name}) expired at {_when(info.expires)}")
        now = time.time()
        if now - self._touched.get(kid, 0.0) >= TOUCH_EVERY:
            self._touched[kid] = now
            try:
                self._touch(kid, now)
            except (OSError, TrackerError):
                pass  # the last use is a courtesy: never a refused request
            info.last_used = now
        return info

    def claim(self, run_id: str, kid: str, project: str | None) -> tuple[str, str | None]:
        """Record that key ``kid`` created run ``run_id`` (of ``project``), unless one did before.

        :returns: ``(key id, project)`` of the run's creator (the first claim wins).
        """
        with self._lock:
            have = self.owner(run_id)
            if have is None:
                self._claim(run_id, kid, project)
                have = self.owner(run_id)
            return have if have is not None else (kid, project)


def _when(t: float | None) -> str:
    return "never" if t is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


__all__ = ["ID_RE", "KEY_RE", "MAX_NAME", "RANKS", "SCOPES", "TOUCH_EVERY", "KeyInfo", "KeyRefused", "KeyStore",
           "UnknownKey", "check_fields", "default_creator", "new_key", "parse_expires", "split_key"]
