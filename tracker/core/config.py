"""tracker.toml: found in the current folder or its parents; ``--config`` and
``TRACKER_CONFIG`` override. Every key is checked; a bad one is a
:class:`~tracker.ConfigError` naming the file, the key and what is allowed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

CONFIG_NAME = "tracker.toml"
DURABILITIES = ("process", "fsync")


@attrs.frozen(kw_only=True)
class Config:
    """The loaded configuration.

    :ivar file: the tracker.toml it came from, or ``None`` for the defaults.
    :ivar store_path: ``[store] path`` resolved against the file's folder, if set.
    :ivar durability: ``"process"`` (survives kill -9) or ``"fsync"`` (survives power loss).
    :ivar heartbeat_interval: seconds between refreshes of a live writer's segment.
    :ivar heartbeat_timeout: seconds after which a silent writer on another host is crashed.
    :ivar disable: plugin names not to load.
    :ivar plugins: the ``[plugins.<name>]`` tables.
    :ivar system_enabled: ``[system] enabled``: sample system metrics during runs (needs psutil).
    :ivar system_interval: ``[system] interval``: seconds between samples.
    :ivar team_blobs: ``[team] blobs``: the bucket of the team's blobs (``s3://``, ``gs://``, ``az://``, ``file://``).
    """

    file: Path | None = None
    store_path: Path | None = None
    durability: str = "process"
    heartbeat_interval: float = 10.0
    heartbeat_timeout: float = 120.0
    disable: tuple[str, ...] = ()
    plugins: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    system_enabled: bool = True
    system_interval: float = 10.0
    team_blobs: str | None = None

    @property
    def fsync(self) -> bool:
        """Whether writes are flushed to the disk (``durability = "fsync"``)."""
        return self.durability == "fsync"

    def plugin_config(self, name: str) -> dict[str, Any]:
        """The ``[plugins.<name>]`` table of plugin ``name`` (empty when absent)."""
        return dict(self.plugins.get(name, {}))


def find_config(start: Path | None = None) -> Path | None:
    """The tracker.toml that applies: ``TRACKER_CONFIG``, else the nearest one upwards."""
    env = os.environ.get("TRACKER_CONFIG")
    if env:
        return Path(env)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Load and check a tracker.toml (by default the one :func:`find_config` finds).

    :raises ConfigError: naming the file, the key and what is allowed.
    """
    file = Path(path) if path is not None else find_config()
    if file is None:
        return Config()
    try:
        with open(file, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such configuration file") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    return _check(file, raw)


def _check(file: Path, raw: dict[str, Any]) -> Config:
    def bad(key: str, allowed: str, given: Any) -> ConfigError:
        return ConfigError(f"{file}: {key}: expected {allowed}, given {given!r}")

    _only(file, "", raw, {"store", "plugins", "system", "team"})
    store = raw.get("store", {})
    if not isinstance(store, dict):
        raise bad("store", "a table", store)
    _only(file, "store", store, {"path", "durability", "heartbeat_interval", "heartbeat_timeout"})
    kw: dict[str, Any] = {"file": file.resolve()}
    if "path" in store:
        p = store["path"]
        if not isinstance(p, str) or not p:
            raise bad("[store] path", "a non-empty string", p)
        kw["store_path"] = (file.resolve().parent / p) if not os.path.isabs(p) else Path(p)
    if "durability" in store:
        d = store["durability"]
        if d not in DURABILITIES:
            raise bad("[store] durability", "one of " + ", ".join(map(repr, DURABILITIES)), d)
        kw["durability"] = d
    for key in ("heartbeat_interval", "heartbeat_timeout"):
        if key in store:
            v = store[key]
            if type(v) not in (int, float) or not v > 0:
                raise bad(f"[store] {key}", "a positive number of seconds", v)
            kw[key] = float(v)
    plugins = raw.get("plugins", {})
    if not isinstance(plugins, dict):
        raise bad("plugins", "a table", plugins)
    tables = {}
    for key, value in plugins.items():
        if key == "disable":
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                raise bad("[plugins] disable", "a list of plugin names", value)
            kw["disable"] = tuple(value)
        elif isinstance(value, dict):
            tables[key] = value
        else:
            raise bad(f"[plugins] {key}", "'disable' or a [plugins.<name>] table", value)
    kw["plugins"] = tables
    kw.update(_check_system(file, raw.get("system", {}), bad))
    kw.update(_check_team_blobs(file, raw.get("team", {}), bad))
    return Config(**kw)


#: What ``[team] blobs`` may name: a bucket (or a folder) that the object-storage client speaks.
BLOB_SCHEMES = ("s3://", "gs://", "az://", "abfs://", "file://")


def _check_team_blobs(file: Path, team: Any, bad: Any) -> dict[str, Any]:
    """``[team] blobs``: a bucket URL (the other ``[team]`` keys are checked beside it)."""
    if not isinstance(team, dict):
        raise bad("team", "a table", team)
    if "blobs" not in team:
        return {}
    v = team["blobs"]
    if not isinstance(v, str) or not v.startswith(BLOB_SCHEMES) or len(v) <= len(v.split("://")[0]) + 3:
        raise bad("[team] blobs", "a bucket URL starting with " + ", ".join(BLOB_SCHEMES), v)
    return {"team_blobs": v}


def _check_system(file: Path, system: Any, bad: Any) -> dict[str, Any]:
    """``[system] enabled`` (bool) and ``[system] interval`` (positive seconds)."""
    if not isinstance(system, dict):
        raise bad("system", "a table", system)
    _only(file, "system", system, {"enabled", "interval"})
    kw: dict[str, Any] = {}
    if "enabled" in system:
        if type(system["enabled"]) is not bool:
            raise bad("[system] enabled", "true or false", system["enabled"])
        kw["system_enabled"] = system["enabled"]
    if "interval" in system:
        v = system["interval"]
        if type(v) not in (int, float) or not v > 0:
            raise bad("[system] interval", "a positive number of seconds", v)
        kw["system_interval"] = float(v)
    return kw


def _only(file: Path, table: str, values: dict[str, Any], allowed: set[str]) -> None:
    for key in values:
        if key not in allowed:
            where = f"[{table}] {key}" if table else key
            raise ConfigError(f"{file}: unknown key {where}; allowed: {', '.join(sorted(allowed))}")


def resolve_store_path(explicit: str | os.PathLike[str] | None, config: Config) -> Path:
    """``--store`` > ``TRACKER_STORE`` > tracker.toml's ``[store] path`` > ``./.tracker``."""
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get("TRACKER_STORE")
    if env:
        return Path(env)
    if config.store_path is not None:
        return config.store_path
    return Path.cwd() / ".tracker"
