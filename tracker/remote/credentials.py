"""The keys a user holds for the lab's servers: ``TRACKER_API_KEY``, else the file ``tracker login`` writes.

The file is ``$XDG_CONFIG_HOME/tracker/keys.toml`` (else
``~/.config/tracker/keys.toml``), of mode 0600, with one table per server,
named by its host and port::

    ["lab.example:8443"]
    url = "https://lab.example:8443"
    key = "trk_..."

It is written whole to a temporary file of mode 0600 and renamed over the
old one, so a reader never sees half of it and no other user can read it
even for a moment. A key is never printed: messages name the file and the
key's public id.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

from tracker.core.errors import TrackerError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: The environment variable that holds a key (it wins over the file).
KEY_ENV = "TRACKER_API_KEY"
#: ``trk_<id>_<secret>``: the id is public (shown in listings and messages), the secret never.
KEY_RE = re.compile(r"trk_(?P<id>[A-Za-z0-9]+)_(?P<secret>[A-Za-z0-9_-]+)\Z")


def keys_path() -> Path:
    """Where ``tracker login`` keeps keys: ``$XDG_CONFIG_HOME/tracker/keys.toml`` or ``~/.config/tracker/keys.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "tracker" / "keys.toml"


def server_id(url: str) -> str:
    """The name a server's key is kept under: ``host:port`` of ``url`` (the scheme's port when none is given)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        raise TrackerError(f"{parts.scheme}://{parts.netloc}: not a valid port") from None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def key_id(key: str) -> str:
    """The public id of ``key`` (``trk_<id>_...``), or ``"?"`` for text that is not a key."""
    m = KEY_RE.match(key or "")
    return m["id"] if m else "?"


def check_key(key: str, where: str) -> str:
    """``key`` stripped, if it has the shape of a key; else a :class:`TrackerError` naming ``where``, never the text."""
    key = (key or "").strip()
    if not KEY_RE.match(key):
        raise TrackerError(f"{where}: not a tracker key (expected trk_<id>_<secret>)")
    return key


def _read_file(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TrackerError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TrackerError(f"{path}: not valid TOML: {exc}") from None
    return doc


def stored_key(url: str, path: Path | None = None) -> str | None:
    """The key ``tracker login`` kept for the server of ``url``, or ``None``.

    :raises TrackerError: the file is unreadable, or readable by others than its owner (mode 0600 expected).
    """
    path = path or keys_path()
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TrackerError(f"{path}: cannot read: {exc.strerror}") from None
    if st.st_mode & 0o077:
        raise TrackerError(f"{path}: readable by other users (mode {st.st_mode & 0o777:o}); "
                           f"make it private with `chmod 600 {path}`")
    entry = _read_file(path).get(server_id(url))
    if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
        return None
    return check_key(entry["key"], f"{path} [{server_id(url)}] key")


def find_key(url: str) -> str | None:
    """The key for the server of ``url``: ``TRACKER_API_KEY``, else the one ``tracker login`` kept, else ``None``."""
    env = os.environ.get(KEY_ENV)
    if env and env.strip():
        return check_key(env, KEY_ENV)
    return stored_key(url)


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def save_key(url: str, key: str, path: Path | None = None) -> Path:
    """Keep ``key`` for the server of ``url`` (replacing the one kept before); returns the file.

    Written atomically, mode 0600, in a folder of mode 0700 made if missing.
    """
    key = check_key(key, "the key")
    path = path or keys_path()
    doc = {name: entry for name, entry in _read_file(path).items() if isinstance(entry, dict)}
    doc[server_id(url)] = {"url": url, "key": key}
    text = "# tracker login: one key per server. Keep this file private (mode 0600).\n"
    for name in sorted(doc):
        entry = doc[name]
        text += f"\n[{_toml_string(name)}]\n"
        for field in ("url", "key"):
            if isinstance(entry.get(field), str):
                text += f"{field} = {_toml_string(entry[field])}\n"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


__all__ = ["KEY_ENV", "check_key", "find_key", "key_id", "keys_path", "save_key", "server_id", "stored_key"]
