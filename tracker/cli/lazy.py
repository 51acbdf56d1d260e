"""Plugins' command names without importing the plugins: what ``tracker --help`` lists.

Plugins add their commands by code (the ``tracker_commands(cli)`` hook), so
their names are known only once the plugins are imported, which costs numpy
and more. Whenever the command line loads the plugins, it writes their
commands' names and help sentences to a small cache; ``tracker --help`` reads
them back from there while nothing that decides which plugins load has
changed: the interpreter, the distributions installed in the folders of
``sys.path`` (their metadata folders' names carry name and version) and the
tracker.toml that applies. With no valid cache, the plugins are loaded (once)
and the cache is written. A plugin whose code changed without a new version
(an editable install) corrects its entry the next time the plugins load.

The cache lives in ``$XDG_CACHE_HOME/tracker`` (``~/.cache/tracker``); a cache
that cannot be read or written is simply not used.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from pathlib import Path

#: How many environments (interpreters, sys.path, tracker.toml) the cache remembers at once.
KEEP = 8


def cache_file() -> Path:
    """Where the cache of plugins' commands lives."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tracker" / "cli-commands.json"


def _config_file(explicit: str | None) -> str | None:
    # The tracker.toml that applies, found the way tracker.config finds it (without importing
    # it: it needs attrs). A wrong guess only costs one slow start.
    if explicit:
        return os.path.abspath(explicit)
    env = os.environ.get("TRACKER_CONFIG")
    if env:
        return os.path.abspath(env)
    here = Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / "tracker.toml"
        if candidate.is_file():
            return str(candidate)
    return None


#: The names in a ``sys.path`` folder that say what is installed there.
_INSTALLED = (".dist-info", ".egg-info", ".egg-link", ".pth")


def environment_key(config: str | None = None) -> str:
    """What decides the plugins' commands: the interpreter, the installed distributions, tracker.toml."""
    parts = [sys.executable]
    for entry in sys.path:
        try:
            names = sorted(n for n in os.listdir(entry or ".") if n.endswith(_INSTALLED))
        except OSError:
            names = []
        parts.append(f"{entry}:{','.join(names)}")
    path = _config_file(config)
    if path is not None:
        try:
            parts.append(f"{path}:{os.stat(path).st_mtime_ns}")
        except OSError:
            parts.append(f"{path}:-")
    return f"{zlib.crc32(chr(0).join(parts).encode()):08x}-{len(parts)}"


def _read() -> dict:
    try:
        doc = json.loads(cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def cached_commands(key: str) -> dict[str, str] | None:
    """The plugins' commands (name -> first sentence of its help) remembered for ``key``, or ``None``."""
    entry = _read().get(key)
    if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
        return None
    return entry


def remember_commands(key: str, commands: dict[str, str]) -> None:
    """Write the plugins' commands for ``key`` (atomically; failures are ignored)."""
    doc = _read()
    doc.pop(key, None)
    doc[key] = commands
    while len(doc) > KEEP:  # oldest first: dicts keep insertion order, and JSON objects too
        doc.pop(next(iter(doc)))
    path = cache_file()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
