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
  database keeps its table layout and readers of older versions go on
  (:mod:`tracker.remote.keydb`).

A key or its secret is never logged, printed (but once, by ``create``),
written into run data or put into an error message: messages name the key id.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError
from tracker.remote.keyinfo import (  # noqa: F401 - the key's own names, imported from here too
    ID_RE,
    KEY_RE,
    RANKS,
    SCOPES,
    TOUCH_EVERY,
    KeyInfo,
    KeyRefused,
    KeyStore,
    UnknownKey,
    check_fields,
    default_creator,
    new_key,
    parse_expires,
    split_key,
)

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


def open_keys(store: Any, *, timeout: float | None = None) -> KeyStore:
    """The key store of a served store: a folder (path) or the team database (``postgresql://`` URL)."""
    from tracker.team.database import is_team_url

    if is_team_url(str(store)):
        from tracker.remote.keydb import DatabaseKeys

        return DatabaseKeys(str(store), timeout=timeout)
    return FolderKeys(store)


__all__ = ["RANKS", "SCOPES", "FolderKeys", "KeyInfo", "KeyRefused", "KeyStore", "UnknownKey",
           "check_fields", "default_creator", "new_key", "open_keys", "parse_expires", "split_key"]
