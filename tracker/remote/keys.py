"""API keys of ``tracker server``, kept in the store it serves, and which key created each run.

A key is ``trk_<id>_<secret>``: a short public id (12 hex digits) and a
secret of 256 random bits (:mod:`secrets`, 64 hex digits). The store keeps
only the SHA-256 of the secret (the secret is random and long, so a plain
hash is as good as a slow one, and a check costs microseconds), with the
key's name, scope (``read``, ``write``, ``admin``), projects, creator,
creation and expiry times, revocation and last use. A check looks the id up
and compares the hashes with :func:`hmac.compare_digest`.

Two places keep them, chosen by the store:

- a folder store: ``<store>/server/`` (mode 0700), with ``keys.jsonl`` (mode
  0600) an append-only log of events (``create``, ``revoke``), each one
  ``write(2)`` of one line on an ``O_APPEND`` descriptor. Append-only rather
  than rewritten whole: ``tracker keys create`` on the command line and the
  server's admin endpoint may add keys at the same moment without a lock and
  without losing either, a torn last line (a kill mid-write) loses only
  itself, and the file is the store's audit trail of who made and revoked
  which key. The last use of each key changes often, so it lives apart in
  ``last_used.json``, rewritten whole (temporary file and rename) at most
  once a minute per key by the server. ``owners.jsonl`` (append-only too)
  records the key that created each run and the run's project: the first
  line of a run wins.
- the team database (``postgresql://``): tables ``tracker_keys`` and
  ``tracker_run_owners``, made when missing (as ``tracker_edits`` is), so a
  database keeps its table layout and readers of older versions go on.

A key or its secret is never logged, printed (but once, by ``create``),
written into run data or put into an error message: messages name the key id.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import StoreUnavailable, TrackerError

SCOPES = ("read", "write", "admin")
#: What each scope may do (a scope includes those before it).
RANKS = {"read": 0, "write": 1, "admin": 2}
KEY_RE = re.compile(r"trk_([0-9a-f]{12})_([0-9a-f]{64})\Z")
ID_RE = re.compile(r"[0-9a-f]{12}\Z")
#: Seconds between two records of a key's last use.
TOUCH_EVERY = 60.0
#: Seconds a key the team database found valid still opens the server while the database is away.
OUTAGE_GRACE = 600.0
#: Seconds the database is not asked again after it failed to answer (each try would wait for the deadline).
AWAY_PAUSE = 5.0
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


# --- a folder store -------------------------------------------------------------------------------


def _append(path: Path, doc: dict[str, Any]) -> None:
    line = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for raw in data.split(b"\n")[:-1]:  # a torn last line (no newline) is not a line
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


class FolderKeys(KeyStore):
    """The keys of a folder store, under ``<store>/server/`` (see the module's docstring)."""

    def __init__(self, store: str | os.PathLike[str]) -> None:
        super().__init__()
        self.root = Path(store) / "server"
        self.where = str(Path(store))
        self.file = self.root / "keys.jsonl"
        self.used_file = self.root / "last_used.json"
        self.owners_file = self.root / "owners.jsonl"
        self._stamp: Any = None
        self._keys: dict[str, tuple[KeyInfo, str]] = {}
        self._owners: dict[str, tuple[str, str | None]] = {}
        self._owners_stamp: Any = None
        self._owners_lock = threading.Lock()

    def _folder(self) -> None:
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise TrackerError(f"cannot create {self.root}: {exc.strerror}") from None

    def _load(self) -> dict[str, tuple[KeyInfo, str]]:
        try:
            st = self.file.stat()
            stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
        except FileNotFoundError:
            stamp = None
        try:
            ust = self.used_file.stat()
            stamp = (stamp, ust.st_mtime_ns)
        except FileNotFoundError:
            pass
        if stamp == self._stamp:
            return self._keys
        keys: dict[str, tuple[KeyInfo, str]] = {}
        for doc in _lines(self.file):
            kid = doc.get("id")
            if doc.get("event") == "create" and isinstance(kid, str) and kid not in keys:
                try:
                    keys[kid] = (KeyInfo(id=kid, name=str(doc["name"]), scope=doc["scope"] if doc["scope"] in SCOPES
                                         else "read", projects=[str(p) for p in doc.get("projects") or []],
                                         creator=str(doc.get("creator") or ""), created=float(doc["created"]),
                                         expires=doc.get("expires")), str(doc["hash"]))
                except (KeyError, TypeError, ValueError):
                    continue
            elif doc.get("event") == "revoke" and kid in keys and keys[kid][0].revoked is None:
                keys[kid][0].revoked = float(doc.get("time") or 0.0)
        try:
            used = json.loads(self.used_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            used = {}
        for kid, t in (used.items() if isinstance(used, dict) else ()):
            if kid in keys and isinstance(t, (int, float)):
                keys[kid][0].last_used = float(t)
        self._keys, self._stamp = keys, stamp
        return keys

    def _add(self, info: KeyInfo, digest: str) -> None:
        self._folder()
        _append(self.file, {"event": "create", "id": info.id, "hash": digest, "name": info.name,
                            "scope": info.scope, "projects": info.projects, "creator": info.creator,
                            "created": info.created, "expires": info.expires})

    def _get(self, kid: str) -> tuple[KeyInfo, str] | None:
        with self._lock:
            return self._load().get(kid)

    def keys(self) -> list[KeyInfo]:
        with self._lock:
            return [info for info, _ in self._load().values()]

    def _revoke(self, kid: str, when: float, by: str) -> None:
        _append(self.file, {"event": "revoke", "id": kid, "time": when, "by": by})

    def _touch(self, kid: str, when: float) -> None:
        with self._lock:
            try:
                used = json.loads(self.used_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                used = {}
            if not isinstance(used, dict):
                used = {}
            used[kid] = when
            tmp = self.root / f".last_used.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(used, f)
                os.replace(tmp, self.used_file)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise

    def owner(self, run_id: str) -> tuple[str, str | None] | None:
        with self._owners_lock:
            return self._owner(run_id)

    def _owner(self, run_id: str) -> tuple[str, str | None] | None:
        # Read on from where the last look stopped: the file is only appended to, so a server that
        # starts runs all day reads each line once.
        try:
            st = self.owners_file.stat()
        except FileNotFoundError:
            self._owners, self._owners_stamp = {}, None
            return None
        ino, pos = self._owners_stamp or (None, 0)
        if ino != st.st_ino or st.st_size < pos:
            self._owners, pos = {}, 0
        if st.st_size > pos:
            with open(self.owners_file, "rb") as f:
                f.seek(pos)
                data = f.read(st.st_size - pos)
            end = data.rfind(b"\n") + 1  # a line still being written waits for the next look
            for raw in data[:end].split(b"\n")[:-1]:
                try:
                    doc = json.loads(raw)
                except ValueError:
                    continue
                run, kid = (doc.get("run"), doc.get("key")) if isinstance(doc, dict) else (None, None)
                if isinstance(run, str) and isinstance(kid, str) and run not in self._owners:
                    project = doc.get("project")
                    self._owners[run] = (kid, project if isinstance(project, str) else None)
            pos += end
        self._owners_stamp = (st.st_ino, pos)
        return self._owners.get(run_id)

    def _claim(self, run_id: str, kid: str, project: str | None) -> None:
        self._folder()
        _append(self.owners_file, {"run": run_id, "key": kid, "project": project, "time": time.time()})


# --- the team database ----------------------------------------------------------------------------

KEYS_DDL = """CREATE TABLE IF NOT EXISTS tracker_keys (
    id text PRIMARY KEY,
    hash text NOT NULL,
    name text NOT NULL,
    scope text NOT NULL,
    projects json NOT NULL,
    creator text NOT NULL,
    created_at double precision NOT NULL,
    expires_at double precision,
    revoked_at double precision,
    revoked_by text,
    last_used double precision)"""
OWNERS_DDL = """CREATE TABLE IF NOT EXISTS tracker_run_owners (
    run_id text PRIMARY KEY,
    key_id text NOT NULL,
    project text,
    created_at double precision NOT NULL)"""


class DatabaseKeys(KeyStore):
    """The keys of the team database (``postgresql://``): tables ``tracker_keys`` and ``tracker_run_owners``.

    One connection, used under a lock; a lost connection is opened again on the next call. While the
    database is away, a key it found valid within :data:`OUTAGE_GRACE` seconds is still taken (the
    server's spool goes on taking shipped runs); a run's creator, once known, is not asked again.
    """

    def __init__(self, url: str, *, timeout: float | None = None) -> None:
        super().__init__()
        from tracker.team.database import mask_url

        self.url = url
        self.timeout = timeout
        self.where = mask_url(url)
        self._seen: dict[str, tuple[KeyInfo, str, float]] = {}
        self._away_until, self._away_why = 0.0, ""
        self._owners: dict[str, tuple[str, str | None]] = {}
        self._conn: Any = None
        self._db_lock = threading.Lock()
        self._exec("SELECT 1")  # the tables (and a wrong URL) now, not at the first request

    def _connect(self) -> Any:
        from tracker.team.database import connect

        conn = connect(self.url, autocommit=True, timeout=self.timeout)
        with conn.cursor() as cur:
            for ddl in (KEYS_DDL, OWNERS_DDL):
                name = ddl.split()[5]
                cur.execute(f"SELECT to_regclass('{name}') IS NOT NULL")
                if not cur.fetchone()[0]:
                    cur.execute(ddl)
        return conn

    def _exec(self, sql: str, params: tuple = ()) -> list[tuple]:
        from tracker.team.database import error_line, require_psycopg

        psycopg = require_psycopg()
        with self._db_lock:
            if time.monotonic() < self._away_until:  # it failed a moment ago: answer at once, not after a deadline
                raise StoreUnavailable(f"the key store in {self.where} cannot be reached: {self._away_why}")
            for attempt in (0, 1):
                try:
                    if self._conn is None or self._conn.closed or self._conn.broken:
                        self._conn = self._connect()
                    with self._conn.cursor() as cur:
                        cur.execute(sql, params)
                        return cur.fetchall() if cur.description else []
                except psycopg.Error as exc:
                    try:
                        if self._conn is not None:
                            self._conn.close()
                    except Exception:  # noqa: BLE001, S110 - closing a broken connection
                        pass
                    self._conn = None
                    if attempt:
                        self._away(error_line(self.url, exc))
                        raise StoreUnavailable(f"the key store in {self.where} cannot be reached: "
                                               f"{self._away_why}") from None
                except TrackerError as exc:
                    self._conn = None
                    if attempt:
                        self._away(str(exc))
                        raise StoreUnavailable(str(exc)) from None
        return []

    def _away(self, why: str) -> None:
        self._away_until, self._away_why = time.monotonic() + AWAY_PAUSE, why

    def close(self) -> None:
        with self._db_lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception:  # noqa: BLE001, S110 - closing a broken connection
                    pass
                self._conn = None

    @staticmethod
    def _row(row: tuple) -> tuple[KeyInfo, str]:
        kid, digest, name, scope, projects, creator, created, expires, revoked, used = row
        if isinstance(projects, str):
            projects = json.loads(projects)
        return KeyInfo(id=kid, name=name, scope=scope if scope in SCOPES else "read", projects=list(projects or []),
                       creator=creator, created=created, expires=expires, revoked=revoked, last_used=used), digest

    _COLUMNS = "id, hash, name, scope, projects, creator, created_at, expires_at, revoked_at, last_used"

    def _add(self, info: KeyInfo, digest: str) -> None:
        self._exec("INSERT INTO tracker_keys (id, hash, name, scope, projects, creator, created_at, expires_at) "
                   "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                   (info.id, digest, info.name, info.scope, json.dumps(info.projects), info.creator, info.created,
                    info.expires))

    def _get(self, kid: str) -> tuple[KeyInfo, str] | None:
        try:
            rows = self._exec(f"SELECT {self._COLUMNS} FROM tracker_keys WHERE id = %s", (kid,))
        except StoreUnavailable:
            # The database is away: a key it said was valid a moment ago still opens the server (whose
            # spool takes shipped runs meanwhile), for OUTAGE_GRACE seconds after that answer.
            known = self._seen.get(kid)
            if known is not None and time.monotonic() - known[2] < OUTAGE_GRACE:
                return known[0], known[1]
            raise
        if not rows:
            self._seen.pop(kid, None)
            return None
        info, digest = self._row(rows[0])
        self._seen[kid] = (info, digest, time.monotonic())
        return info, digest

    def keys(self) -> list[KeyInfo]:
        return [self._row(r)[0] for r in self._exec(f"SELECT {self._COLUMNS} FROM tracker_keys ORDER BY created_at")]

    def _revoke(self, kid: str, when: float, by: str) -> None:
        self._exec("UPDATE tracker_keys SET revoked_at = %s, revoked_by = %s WHERE id = %s AND revoked_at IS NULL",
                   (when, by, kid))

    def _touch(self, kid: str, when: float) -> None:
        self._exec("UPDATE tracker_keys SET last_used = %s WHERE id = %s", (when, kid))

    def owner(self, run_id: str) -> tuple[str, str | None] | None:
        have = self._owners.get(run_id)  # a run's creator never changes: asked once
        if have is not None:
            return have
        rows = self._exec("SELECT key_id, project FROM tracker_run_owners WHERE run_id = %s", (run_id,))
        if not rows:
            return None
        self._owners[run_id] = (rows[0][0], rows[0][1])
        return self._owners[run_id]

    def _claim(self, run_id: str, kid: str, project: str | None) -> None:
        self._exec("INSERT INTO tracker_run_owners (run_id, key_id, project, created_at) VALUES (%s, %s, %s, %s) "
                   "ON CONFLICT (run_id) DO NOTHING", (run_id, kid, project, time.time()))


def open_keys(store: Any, *, timeout: float | None = None) -> KeyStore:
    """The key store of a served store: a folder (path) or the team database (``postgresql://`` URL)."""
    from tracker.team.database import is_team_url

    if is_team_url(str(store)):
        return DatabaseKeys(str(store), timeout=timeout)
    return FolderKeys(store)


__all__ = ["RANKS", "SCOPES", "DatabaseKeys", "FolderKeys", "KeyInfo", "KeyRefused", "KeyStore", "UnknownKey",
           "check_fields", "default_creator", "new_key", "open_keys", "parse_expires", "split_key"]
