"""``tracker keys create|list|revoke``: the API keys of ``tracker server``, on its store or over HTTPS."""

from __future__ import annotations

import json
import os
import time
from typing import Any
from urllib.parse import quote

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
    """The keys endpoints of a server (``/api/v1/keys``) through a :class:`tracker.remote.session.Session`: the
    key of ``TRACKER_API_KEY`` or of ``tracker login`` (an admin key), TLS verified (``TRACKER_CA_FILE`` /
    ``[team] ca_file``), plain ``http://`` to loopback only."""

    def __init__(self, url: str, config: Any = None) -> None:
        from tracker.remote.session import Session

        self.session = Session.from_config(url, config)
        if not self.session.has_key:
            raise TrackerError(f"managing keys over {self.session.url} needs an admin key: run `tracker login "
                               f"{self.session.url}` with one, or set TRACKER_API_KEY")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        from tracker.remote.session import API

        with self.session as session:
            return session.json(method, API + path, body)


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
    server itself (https://...; an admin key from `tracker login` or TRACKER_API_KEY).

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
        doc = Admin(where, obj.config).call("POST", "/keys", {"name": name, "scope": scope, "projects": plist,
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
        docs = Admin(where, obj.config).call("GET", "/keys")["keys"]
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
        doc = Admin(where, obj.config).call("DELETE", f"/keys/{quote(key_id, safe='')}")
    else:
        keys = _local(where)
        try:
            doc = keys.revoke(key_id).to_json()
        finally:
            keys.close()
    click.echo(f"tracker keys: revoked {doc['id']} ({doc['name']})")
