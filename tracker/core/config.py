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
    :ivar team_url: ``[team] url``: where every run streams to: the team database (``postgresql://...``) or
        the lab's tracker server (``https://...``; ``http://`` to a loopback address only).
    :ivar team_blobs: ``[team] blobs``: where the team's blobs live (``s3://bucket/prefix``...).
    :ivar team_timeout: ``[team] timeout``: seconds a connection attempt or a round trip to the team
        database or server may take before it is given up (the link is taken as down).
    :ivar team_ca_file: ``[team] ca_file``: the CA bundle (PEM) the server's certificate is checked against
        (relative to the file's folder; ``TRACKER_CA_FILE`` wins), instead of the system's.
    :ivar team_finish_timeout: ``[team] finish_timeout``: seconds ``finish()`` waits for the shipper to send a
        run's last lines to the server (0: it does not wait); ``tracker sync URL`` sends what is left.
    :ivar alerts: the ``[alerts]`` table, checked: ``channels`` (by name), ``rules`` (a list),
        ``interval``, ``retries``, ``backoff``, ``finish_timeout`` (see docs/alerts.md).
    :ivar run_console: ``[run] console``: ``True`` (the ``sys.stdout``/``sys.stderr`` streams),
        ``"fd"`` (file descriptors 1 and 2) or ``False`` (off); see docs/provenance.md.
    :ivar console_max_bytes: ``[run] console_max_bytes``: console text kept per run and process.
    :ivar run_environment: ``[run] environment``: record Python, packages, GPUs and git at the start.
    :ivar run_code: ``[run] code``: glob patterns of files stored as the run's ``code`` artifact.
    :ivar max_diff_bytes: ``[run] max_diff_bytes``: the uncommitted diff is cut there, with a note.
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
    team_url: str | None = None
    team_blobs: str | None = None
    team_timeout: float = 30.0
    team_ca_file: Path | None = None
    team_finish_timeout: float = 30.0
    alerts: dict[str, Any] = attrs.field(factory=dict)
    run_console: bool | str = True
    console_max_bytes: int = 100 * 1024 * 1024
    run_environment: bool = True
    run_code: tuple[str, ...] = ()
    max_diff_bytes: int = 10 * 1024 * 1024

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

    _only(file, "", raw, {"store", "plugins", "system", "team", "alerts", "run"})
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
    kw.update(_check_team(file, raw.get("team", {}), bad))
    kw.update(_check_run(file, raw.get("run", {}), bad))
    if "alerts" in raw:
        kw["alerts"] = _check_alerts(file, raw["alerts"], bad)
    return Config(**kw)


#: What ``[team] blobs`` may name: a bucket (or a folder) that the object-storage client speaks.
BLOB_SCHEMES = ("s3://", "gs://", "az://", "abfs://", "file://")
#: What ``[team] url`` may name: the team database, or the lab's tracker server.
TEAM_SCHEMES = ("postgresql://", "postgres://", "https://", "http://")


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


def _check_team(file: Path, team: Any, bad: Any) -> dict[str, Any]:
    """``[team] url`` (a ``postgresql://`` or ``https://`` URL), ``[team] blobs`` (a bucket URL), ``[team] timeout``
    and ``finish_timeout`` (seconds), ``[team] ca_file`` (a PEM file)."""
    from tracker.core.urls import redact_url

    if not isinstance(team, dict):
        raise bad("team", "a table", team)
    _only(file, "team", team, {"url", "blobs", "timeout", "ca_file", "finish_timeout"})
    kw: dict[str, Any] = {}
    if "url" in team:
        url = team["url"]
        if not isinstance(url, str) or not url.startswith(TEAM_SCHEMES) or len(url) <= len(url.split("://")[0]) + 3:
            raise bad("[team] url", "a database URL starting with postgresql:// or a server URL starting with "
                      "https:// (http:// to this machine only)", redact_url(url) if isinstance(url, str) else url)
        kw["team_url"] = url
    if "blobs" in team:
        blobs = team["blobs"]
        if not isinstance(blobs, str) or not blobs.startswith(BLOB_SCHEMES) or \
                len(blobs) <= len(blobs.split("://")[0]) + 3:
            raise bad("[team] blobs", "a bucket URL starting with " + ", ".join(BLOB_SCHEMES),
                      redact_url(blobs) if isinstance(blobs, str) else blobs)
        kw["team_blobs"] = blobs
    if "timeout" in team:
        v = team["timeout"]
        if type(v) not in (int, float) or not 0 < v <= 3600:
            raise bad("[team] timeout", "a number of seconds above 0 and at most 3600", v)
        kw["team_timeout"] = float(v)
    if "finish_timeout" in team:
        v = team["finish_timeout"]
        if type(v) not in (int, float) or not 0 <= v <= 3600:
            raise bad("[team] finish_timeout", "a number of seconds from 0 to 3600", v)
        kw["team_finish_timeout"] = float(v)
    if "ca_file" in team:
        ca = team["ca_file"]
        if not isinstance(ca, str) or not ca:
            raise bad("[team] ca_file", "the path of a CA bundle (PEM)", ca)
        path = Path(ca) if os.path.isabs(ca) else file.resolve().parent / ca
        if not path.is_file():
            raise bad("[team] ca_file", "an existing CA bundle (PEM)", str(path))
        kw["team_ca_file"] = path
    return kw


#: What ``[run] console`` and ``start_run(console=)`` take besides true and false.
CONSOLE_MODES = ("wrap", "fd")


def _check_run(file: Path, run: Any, bad: Any) -> dict[str, Any]:
    """``[run]``: console, console_max_bytes, environment, code, max_diff_bytes (docs/provenance.md)."""
    if not isinstance(run, dict):
        raise bad("run", "a table", run)
    _only(file, "run", run, {"console", "console_max_bytes", "environment", "code", "max_diff_bytes"})
    kw: dict[str, Any] = {}
    if "console" in run:
        v = run["console"]
        if type(v) is not bool and v not in CONSOLE_MODES:
            raise bad("[run] console", 'true, false, "wrap" or "fd"', v)
        kw["run_console"] = v
    for key in ("console_max_bytes", "max_diff_bytes"):
        if key in run:
            v = run[key]
            if type(v) is not int or v < 0:
                raise bad(f"[run] {key}", "a number of bytes (an int >= 0)", v)
            kw[key] = v
    if "environment" in run:
        if type(run["environment"]) is not bool:
            raise bad("[run] environment", "true or false", run["environment"])
        kw["run_environment"] = run["environment"]
    if "code" in run:
        code = run["code"]
        if not isinstance(code, list) or not all(isinstance(x, str) and x for x in code):
            raise bad("[run] code", 'a list of glob patterns such as ["*.py", "configs/**"]', code)
        kw["run_code"] = tuple(code)
    return kw


#: The keys of each built-in channel type (``type`` included); a plugin's type takes any keys.
ALERT_CHANNEL_KEYS: dict[str, set[str]] = {
    "webhook": {"type", "url", "format", "timeout"},
    "email": {"type", "host", "port", "from", "to", "user", "password_env", "starttls", "timeout"},
    "command": {"type", "command", "timeout"},
    "desktop": {"type"},
}
WEBHOOK_FORMATS = ("auto", "json", "slack", "discord", "teams")
ALERT_LEVELS = ("INFO", "WARN", "ERROR")


def _check_alerts(file: Path, alerts: Any, bad: Any) -> dict[str, Any]:
    """``[alerts]``: every key and type checked here; the ``when`` of each rule is parsed where
    rules are used (:mod:`tracker.alerts.rules`), with the same kind of message."""
    if not isinstance(alerts, dict):
        raise bad("alerts", "a table", alerts)
    _only(file, "alerts", alerts, {"channels", "rules", "interval", "retries", "backoff", "finish_timeout"})
    for key in ("interval", "backoff", "finish_timeout"):
        v = alerts.get(key, 1.0)
        if type(v) not in (int, float) or not v > 0:
            raise bad(f"[alerts] {key}", "a positive number of seconds", v)
    retries = alerts.get("retries", 0)
    if type(retries) is not int or not 0 <= retries <= 100:
        raise bad("[alerts] retries", "an int from 0 to 100", retries)
    channels = alerts.get("channels", {})
    if not isinstance(channels, dict):
        raise bad("[alerts] channels", "a table of [alerts.channels.<name>] tables", channels)
    for name, ch in channels.items():
        where = f"[alerts.channels.{name}]"
        if not isinstance(ch, dict):
            raise bad(where, "a table with a type", ch)
        kind = ch.get("type")
        if not isinstance(kind, str) or not kind:
            raise bad(f"{where} type", "webhook, email, command, desktop or a plugin's channel type", kind)
        if kind in ALERT_CHANNEL_KEYS:
            _only(file, f"alerts.channels.{name}", ch, ALERT_CHANNEL_KEYS[kind])
        _check_channel(where, kind, ch, bad)
    rules = alerts.get("rules", [])
    if not isinstance(rules, list):
        raise bad("[[alerts.rules]]", "an array of tables", rules)
    for i, rule in enumerate(rules, 1):
        where = f"[[alerts.rules]] #{i}"
        if not isinstance(rule, dict):
            raise bad(where, "a table", rule)
        _only(file, f"alerts.rules #{i}", rule, {"when", "project", "tags", "channels", "level", "title"})
        if not isinstance(rule.get("when"), str) or not rule["when"].strip():
            raise bad(f"{where} when", 'a condition such as "loss is nan" or "run crashed"', rule.get("when"))
        for key in ("project", "title"):
            if key in rule and not isinstance(rule[key], str):
                raise bad(f"{where} {key}", "a string", rule[key])
        for key in ("tags", "channels"):
            if key in rule and (not isinstance(rule[key], list) or not all(isinstance(x, str) for x in rule[key])):
                raise bad(f"{where} {key}", "a list of strings", rule[key])
        for name in rule.get("channels", []):
            if name not in channels:
                raise bad(f"{where} channels", "names of [alerts.channels.<name>] tables "
                          f"({', '.join(sorted(channels)) or 'none defined'})", name)
        if "level" in rule and rule["level"] not in ALERT_LEVELS:
            raise bad(f"{where} level", "one of " + ", ".join(ALERT_LEVELS), rule["level"])
    return alerts


def _check_channel(where: str, kind: str, ch: dict[str, Any], bad: Any) -> None:
    """The values of a built-in channel type's keys."""
    if "timeout" in ch and (type(ch["timeout"]) not in (int, float) or not ch["timeout"] > 0):
        raise bad(f"{where} timeout", "a positive number of seconds", ch["timeout"])
    if kind == "webhook":
        url = ch.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise bad(f"{where} url", "an http:// or https:// URL", url)
        if ch.get("format", "auto") not in WEBHOOK_FORMATS:
            raise bad(f"{where} format", "one of " + ", ".join(WEBHOOK_FORMATS), ch.get("format"))
    elif kind == "email":
        for key in ("host", "from"):
            if not isinstance(ch.get(key), str) or not ch[key]:
                raise bad(f"{where} {key}", "a non-empty string", ch.get(key))
        to = ch.get("to")
        if not (isinstance(to, str) and to) and not (isinstance(to, list) and to and
                                                     all(isinstance(x, str) and x for x in to)):
            raise bad(f"{where} to", "an address or a list of addresses", to)
        port = ch.get("port", 587)
        if type(port) is not int or not 0 < port < 65536:
            raise bad(f"{where} port", "a port number (1..65535)", port)
        for key in ("user", "password_env"):
            if key in ch and not isinstance(ch[key], str):
                raise bad(f"{where} {key}", "a string", ch[key])
        if "starttls" in ch and type(ch["starttls"]) is not bool:
            raise bad(f"{where} starttls", "true or false", ch["starttls"])
    elif kind == "command":
        cmd = ch.get("command")
        if not (isinstance(cmd, str) and cmd.strip()) and not (
                isinstance(cmd, list) and cmd and all(isinstance(x, str) for x in cmd)):
            raise bad(f"{where} command", "a list of strings, or a string split as a shell would", cmd)


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
