"""``tracker keys create|list|revoke``: the API keys of ``tracker server``, on its store or over HTTPS."""

from __future__ import annotations

import ipaddress
import json
import os
import time
from typing import Any
from urllib.parse import quote, urlsplit

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.core.errors import TrackerError


def _is_http(text: Any) -> bool:
    return isinstance(text, str) and text.lower().startswith(("http://", "https://"))


def _where(obj: CliContext) -> str:
    """The store the keys live in: the ``--store`` given, else the server of an ``https://`` ``[team] url``
    (or ``TRACKER_URL``), else the store folder."""
    given = obj.given_store
    if given:
        return str(given) if _is_http(given) or "://" in str(given) else str(obj.store_path)
    from tracker.core.urls import team_url

    for url in (team_url(obj.config), os.environ.get("TRACKER_URL")):
        if _is_http(url):
            return str(url)
    return str(obj.store_path)


class Admin:
    """The keys endpoints of a server (``/api/v1/keys``), with the admin key of ``TRACKER_API_KEY``."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.scheme.lower() == "http" and not _loopback(host):
            raise TrackerError(f"refusing to send an API key over plain http to {host}: use https://")
        self.base = url.rstrip("/")
        self.key = os.environ.get("TRACKER_API_KEY", "").strip()
        if not self.key:
            raise TrackerError(f"managing keys over {self.base} needs an admin key: set TRACKER_API_KEY")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        import ssl
        import urllib.error
        import urllib.request

        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.key}", "Accept": "application/json",
            **({"Content-Type": "application/json"} if data is not None else {})})
        ca = os.environ.get("TRACKER_CA_FILE")
        context = ssl.create_default_context(cafile=ca) if ca else None
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:  # noqa: S310 - http(s) only
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read()).get("error") or exc.reason
            except (ValueError, AttributeError):
                message = exc.reason
            raise TrackerError(f"{self.base}: {exc.code}: {message}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TrackerError(f"cannot reach {self.base}: {reason}") from None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _local(where: str) -> Any:
    from tracker.remote.keys import open_keys

    return open_keys(where)


def _when(t: float | None) -> str:
    return "never" if t is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


@click.group("keys")
def keys_group() -> None:
    """Make, list and revoke the API keys of `tracker server` (on its store, or over HTTPS with an admin key).

    A key is shown once, when it is made; the store keeps only its hash.
    `--store` names the server's store (a folder or postgresql://...), or the
    server itself (https://...; TRACKER_API_KEY holds an admin key).

    \b
    Examples:
      tracker keys create gpu-box --scope write --project vision --expires 90d
      tracker keys list
      tracker keys revoke 3f2a9c01b7e4
      TRACKER_API_KEY=trk_... tracker --store https://lab:8443 keys list
    """


@keys_group.command("create")
@click.argument("name")
@click.option("--scope", type=click.Choice(["read", "write", "admin"]), required=True,
              help="read: reads; write: also creates runs and appends to those it created; admin: also keys.")
@click.option("--project", "projects", multiple=True, metavar="P",
              help="Limit the key to this project (repeat for more); default: every project.")
@click.option("--expires", default=None, metavar="DURATION", help="90d, 12h, 30m, 2w, 1y (default: never).")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def create_cmd(obj: CliContext, name: str, scope: str, projects: tuple[str, ...], expires: str | None,
               fmt: str) -> None:
    """Make a key; the key is printed once, alone on the last line.

    \b
    Examples:
      tracker keys create ana-laptop --scope write
      tracker keys create ci --scope read --project vision --expires 30d --format json
    """
    from tracker.remote.keys import check_fields, parse_expires

    name, scope, plist = check_fields(name, scope, list(projects))
    when = parse_expires(expires)
    where = _where(obj)
    if _is_http(where):
        doc = Admin(where).call("POST", "/api/v1/keys", {"name": name, "scope": scope, "projects": plist,
                                                          "expires": expires})
    else:
        keys = _local(where)
        try:
            info, key = keys.create(name, scope, plist, when)
        finally:
            keys.close()
        doc = {"id": info.id, "key": key, "name": info.name, "scope": info.scope, "projects": info.projects,
               "expires": info.expires}
    if fmt == "json":
        click.echo(json.dumps(doc))
        return
    limits = ", ".join(doc["projects"]) if doc["projects"] else "every project"
    click.echo(f"tracker keys: made key {doc['id']} ({doc['name']}): scope {doc['scope']}, {limits}, "
               f"expires {_when(doc['expires'])}")
    click.echo("Keep the key now: it is not shown again (the store keeps only its hash).")
    click.echo(doc["key"])


@keys_group.command("list")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def list_cmd(obj: CliContext, fmt: str) -> None:
    """List the keys: id, name, scope, projects, status, created, expires, last used, creator (never a secret)."""
    where = _where(obj)
    if _is_http(where):
        docs = Admin(where).call("GET", "/api/v1/keys")["keys"]
    else:
        keys = _local(where)
        try:
            docs = [k.to_json() for k in keys.keys()]
        finally:
            keys.close()
    if fmt == "json":
        click.echo(json.dumps(docs))
        return
    if not docs:
        click.echo("no keys (make one with `tracker keys create NAME --scope write`)")
        return
    rows = [("ID", "NAME", "SCOPE", "PROJECTS", "STATUS", "CREATED", "EXPIRES", "LAST USED", "CREATOR")]
    for d in docs:
        rows.append((d["id"], d["name"], d["scope"], ",".join(d["projects"]) or "*", d["status"], _when(d["created"]),
                     _when(d["expires"]), "-" if d.get("last_used") is None else _when(d["last_used"]),
                     d.get("creator") or ""))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


@keys_group.command("revoke")
@click.argument("key_id")
@click.pass_obj
@handle_errors
def revoke_cmd(obj: CliContext, key_id: str) -> None:
    """Revoke key KEY_ID: its next request is refused (revoking it again changes nothing).

    \b
    Examples:
      tracker keys revoke 3f2a9c01b7e4
    """
    where = _where(obj)
    if key_id.startswith("trk_"):
        key_id = key_id[4:].partition("_")[0]  # a whole key pasted: its id only, never echoed
    if _is_http(where):
        doc = Admin(where).call("DELETE", f"/api/v1/keys/{quote(key_id, safe='')}")
    else:
        keys = _local(where)
        try:
            doc = keys.revoke(key_id).to_json()
        finally:
            keys.close()
    click.echo(f"tracker keys: revoked {doc['id']} ({doc['name']})")
