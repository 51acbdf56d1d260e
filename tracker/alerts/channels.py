"""Where alerts go: the built-in channel types (webhook, email, command, desktop) and the plugins' ones.

A channel is an object with ``send(alert)``, made by its type's factory as
``factory(name, options)`` from an ``[alerts.channels.<name>]`` table. ``send``
raises on failure (the sender retries with backoff); a
:class:`ChannelError` with ``permanent=True`` is not retried. Plugins add
types with the ``tracker_alert_channels`` hook.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import smtplib
import ssl
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
import weakref
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any, Protocol

import attrs

from tracker.core.errors import ConfigError, TrackerError


class ChannelError(TrackerError):
    """A delivery that failed; ``permanent`` ones (a missing program, a bad address) are not retried."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@attrs.frozen(kw_only=True)
class Alert:
    """An alert as channels get it: what it says, and the run and condition it is about."""

    title: str
    text: str
    level: str
    run_id: str
    run_name: str | None = None
    project: str | None = None
    condition: str = ""
    time: float = 0.0
    step: int | None = None

    @property
    def run_label(self) -> str:
        """``name (id)``, or the id of a run without a name."""
        return f"{self.run_name} ({self.run_id})" if self.run_name else self.run_id

    def body(self) -> str:
        """The text a person reads: the alert's text, then the run and the condition."""
        lines = [self.text] if self.text else []
        lines.append(f"run: {self.run_label}" + (f", project {self.project}" if self.project else ""))
        lines.append(f"condition: {self.condition or 'run.alert()'}" + (f", step {self.step}"
                                                                        if self.step is not None else ""))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """Every field, for JSON webhooks and the command channel."""
        return attrs.asdict(self)


class Channel(Protocol):
    """What a channel type's factory returns."""

    name: str

    def send(self, alert: Alert) -> None:
        """Deliver ``alert``; raise on failure."""


ChannelFactory = Callable[[str, dict[str, Any]], Channel]

_LEVEL_COLOURS = {"INFO": "2EB67D", "WARN": "ECB22E", "ERROR": "E01E5A"}


def webhook_payload(alert: Alert, fmt: str) -> dict[str, Any]:
    """The JSON body of a webhook POST in format ``fmt`` (``slack``, ``discord``, ``teams`` or ``json``)."""
    head = f"[{alert.level}] {alert.title}"
    if fmt == "slack":  # &, < and > are Slack's control characters: escaped, so a title never pings a channel
        return {"text": _slack_escape(f"*{head}*\n{alert.body()}")}
    if fmt == "discord":  # no mention in an alert's text ever notifies anyone
        return {"content": f"**{head}**\n{alert.body()}"[:2000], "allowed_mentions": {"parse": []}}
    if fmt == "teams":  # an Adaptive Card, what Teams' workflow webhooks (and the old connectors) take
        return {"type": "message", "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
                        "version": "1.4", "body": [
                            {"type": "TextBlock", "text": head, "weight": "Bolder", "size": "Medium", "wrap": True,
                             "color": {"ERROR": "Attention", "WARN": "Warning"}.get(alert.level, "Default")},
                            {"type": "TextBlock", "text": alert.body(), "wrap": True}]}}]}
    return {"alert": alert.to_json()}


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def webhook_format(url: str, fmt: str) -> str:
    """``auto`` resolved from the URL's host: Slack, Discord, Teams (Office or Power Automate), else plain JSON."""
    if fmt != "auto":
        return fmt
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host.endswith("slack.com"):
        return "slack"
    if host.endswith(("discord.com", "discordapp.com")):
        return "discord"
    if host.endswith(("office.com", "office365.com", "logic.azure.com", "powerplatform.com")):
        return "teams"
    return "json"


@attrs.define
class Webhook:
    """A JSON POST to ``url`` in Slack's, Discord's, Teams' or a plain shape."""

    name: str
    url: str
    format: str = "auto"
    timeout: float = 10.0

    def send(self, alert: Alert) -> None:
        body = json.dumps(webhook_payload(alert, webhook_format(self.url, self.format))).encode()
        req = urllib.request.Request(self.url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": "tracker-alerts"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - the user's own URL
                resp.read()
        except urllib.error.HTTPError as exc:
            raise ChannelError(f"webhook {self.name}: HTTP {exc.code} {exc.reason}",
                               permanent=exc.code in (400, 401, 403, 404, 410)) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ChannelError(f"webhook {self.name}: {getattr(exc, 'reason', exc)}") from None


@attrs.define
class Email:
    """A mail through an SMTP server, upgraded with STARTTLS; the password is read from ``password_env``."""

    name: str
    host: str
    sender: str
    to: list[str]
    port: int = 587
    user: str | None = None
    password_env: str | None = None
    starttls: bool = True
    timeout: float = 30.0

    def send(self, alert: Alert) -> None:
        msg = EmailMessage()
        msg["Subject"] = " ".join(f"[tracker] {alert.level}: {alert.title}".split())  # one line, always
        msg["From"] = self.sender
        msg["To"] = ", ".join(self.to)
        msg.set_content(alert.body())
        password = None
        if self.password_env:
            password = os.environ.get(self.password_env)
            if password is None:
                raise ChannelError(f"email {self.name}: the environment variable {self.password_env} "
                                   "(password_env) is not set", permanent=True)
        try:
            with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as smtp:
                smtp.ehlo()
                if self.starttls:
                    if not smtp.has_extn("starttls"):
                        raise ChannelError(f"email {self.name}: {self.host}:{self.port} does not offer STARTTLS "
                                           "(set starttls = false to send without it)", permanent=True)
                    smtp.starttls(context=ssl.create_default_context())
                    smtp.ehlo()
                if self.user:
                    smtp.login(self.user, password or "")
                smtp.send_message(msg)
        except smtplib.SMTPAuthenticationError as exc:
            raise ChannelError(f"email {self.name}: login refused ({exc.smtp_code})", permanent=True) from None
        except (smtplib.SMTPException, OSError) as exc:
            raise ChannelError(f"email {self.name}: {exc}") from None


@attrs.define
class Command:
    """A program run with the alert in its environment (``TRACKER_ALERT_*``) and as JSON on its stdin."""

    name: str
    argv: list[str]
    timeout: float = 60.0

    def send(self, alert: Alert) -> None:
        env = {**os.environ, "TRACKER_ALERT_TITLE": alert.title, "TRACKER_ALERT_TEXT": alert.text,
               "TRACKER_ALERT_LEVEL": alert.level, "TRACKER_ALERT_RUN_ID": alert.run_id,
               "TRACKER_ALERT_RUN_NAME": alert.run_name or "", "TRACKER_ALERT_PROJECT": alert.project or "",
               "TRACKER_ALERT_CONDITION": alert.condition, "TRACKER_ALERT_BODY": alert.body()}
        try:
            done = subprocess.run(self.argv, input=json.dumps(alert.to_json()).encode(), env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=self.timeout,
                                  check=False)
        except FileNotFoundError:
            raise ChannelError(f"command {self.name}: no such program {self.argv[0]!r}", permanent=True) from None
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ChannelError(f"command {self.name}: {exc}") from None
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace").strip().splitlines()
            raise ChannelError(f"command {self.name}: exit code {done.returncode}"
                               + (f": {err[-1]}" if err else ""))


@attrs.define
class Desktop:
    """A desktop notification through ``notify-send`` (libnotify), where it is installed."""

    name: str

    def send(self, alert: Alert) -> None:
        exe = shutil.which("notify-send")
        if exe is None:
            raise ChannelError(f"desktop {self.name}: notify-send is not installed (libnotify-bin)", permanent=True)
        urgency = {"ERROR": "critical", "WARN": "normal"}.get(alert.level, "low")
        done = subprocess.run([exe, "-u", urgency, "-a", "tracker", alert.title, alert.body()],
                              capture_output=True, timeout=30, check=False)
        if done.returncode != 0:
            raise ChannelError(f"desktop {self.name}: notify-send exit code {done.returncode}")


def _webhook(name: str, o: dict[str, Any]) -> Channel:
    return Webhook(name, o["url"], o.get("format", "auto"), float(o.get("timeout", 10.0)))


def _email(name: str, o: dict[str, Any]) -> Channel:
    to = [o["to"]] if isinstance(o["to"], str) else list(o["to"])
    return Email(name, o["host"], o["from"], to, int(o.get("port", 587)), o.get("user"), o.get("password_env"),
                 bool(o.get("starttls", True)), float(o.get("timeout", 30.0)))


def _command(name: str, o: dict[str, Any]) -> Channel:
    cmd = o["command"]
    return Command(name, shlex.split(cmd) if isinstance(cmd, str) else list(cmd), float(o.get("timeout", 60.0)))


def _desktop(name: str, o: dict[str, Any]) -> Channel:
    return Desktop(name)


BUILTIN_TYPES: dict[str, ChannelFactory] = {"webhook": _webhook, "email": _email, "command": _command,
                                            "desktop": _desktop}
_types_cache: weakref.WeakKeyDictionary[Any, dict[str, ChannelFactory]] = weakref.WeakKeyDictionary()
_types_lock = threading.Lock()


def channel_types(host: Any) -> dict[str, ChannelFactory]:
    """The channel types by name: the built-in ones, then the plugins' (``tracker_alert_channels``).

    Collected once per host. A plugin offering a type name that is already
    taken, or something that is not callable, is reported broken.
    """
    with _types_lock:
        if host in _types_cache:
            return _types_cache[host]
        types: dict[str, ChannelFactory] = dict(BUILTIN_TYPES)
        owner: dict[str, str] = dict.fromkeys(BUILTIN_TYPES, "tracker")

        def collect(plugin: str, result: Any) -> None:
            if not isinstance(result, dict):
                raise TypeError(f"tracker_alert_channels returned {type(result).__name__}, expected a dict of "
                                "type name -> factory(name, options)")
            for name, factory in result.items():
                if not isinstance(name, str) or not callable(factory):
                    raise TypeError(f"tracker_alert_channels: {name!r} -> {factory!r} is not a name and a factory")
                if name in types:
                    raise ValueError(f"channel type {name!r} is already offered by {owner[name]!r}")
            for name, factory in result.items():
                types[name], owner[name] = factory, plugin

        host.call_each(host.pm.hook.tracker_alert_channels, collect=collect)
        _types_cache[host] = types
        return types


def build_channels(alerts: dict[str, Any], host: Any, file: Any = None) -> dict[str, Channel]:
    """Every ``[alerts.channels.<name>]`` as a channel object.

    :raises ConfigError: a type no built-in or plugin offers, or a factory that refuses its options.
    """
    types = channel_types(host)
    out: dict[str, Channel] = {}
    for name, options in alerts.get("channels", {}).items():
        kind = options["type"]
        factory = types.get(kind)
        if factory is None:
            raise ConfigError(f"{file or 'tracker.toml'}: [alerts.channels.{name}] type: expected one of "
                              f"{', '.join(sorted(types))} (a plugin adds others), given {kind!r}")
        try:
            out[name] = factory(name, dict(options))
        except Exception as exc:  # noqa: BLE001 - a plugin's factory: its message, one line
            raise ConfigError(f"{file or 'tracker.toml'}: [alerts.channels.{name}]: {exc}") from None
    return out
