"""``tracker login URL``: check a key with the lab's server and keep it for that server (mode 0600)."""

from __future__ import annotations

import os
import sys

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, handle_errors


@click.command("login")
@click.argument("url")
@click.option("--key-file", "key_file", metavar="FILE", default=None,
              help="Read the key from FILE ('-': standard input) instead of asking for it.")
@click.pass_obj
@handle_errors
def login_cmd(obj: CliContext, url: str, key_file: str | None) -> None:
    """Check a key with a tracker server and keep it for that server (a file of mode 0600).

    The key comes from --key-file, else it is asked for (not echoed), else
    from TRACKER_API_KEY. The server is asked who the key is (GET
    /api/v1/whoami) before anything is kept; the key is never printed. Runs
    then ship to the server with [team] url = "https://..." (or TRACKER_URL),
    and `tracker --store https://... runs` reads from it.

    \b
    Examples:
      tracker login https://lab.example:8443
      tracker login https://lab.example:8443 --key-file ~/lab.key
    """
    from tracker.remote.credentials import KEY_ENV, check_key, save_key
    from tracker.remote.session import KeyRefused, Session, check_transport

    check_transport(url)  # plain http:// to another machine is refused before a key is even asked for
    if key_file is not None:
        try:
            text = sys.stdin.read() if key_file == "-" else open(key_file, encoding="utf-8").read()  # noqa: SIM115
        except OSError as exc:
            fail(f"{key_file}: cannot read: {exc.strerror or exc}")
        key = check_key(text, key_file if key_file != "-" else "standard input")
    elif sys.stdin.isatty():
        key = check_key(click.prompt(f"Key for {url}", hide_input=True, err=True), "the key given")
    elif os.environ.get(KEY_ENV):
        key = check_key(os.environ[KEY_ENV], KEY_ENV)
    else:
        fail(f"no key: give --key-file FILE, run in a terminal to be asked, or set {KEY_ENV}", code=2)
    with Session.from_config(url, obj.config, key=key) as session:
        try:
            who = session.whoami()
        except KeyRefused as exc:
            fail(f"the server refused the key: {exc}")
    path = save_key(url, key)
    projects = who.get("projects") or []
    expires = who.get("expires")
    if isinstance(expires, (int, float)):
        import time

        expires = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(expires))
    click.echo(f"logged in to {session.url} with key {who.get('id')}"
               + (f" ({who['name']})" if who.get("name") else "")
               + f": scope {who.get('scope')}, projects {', '.join(map(str, projects)) if projects else 'all'}"
               + (f", expires {expires}" if expires else ""))
    click.echo(f"key kept in {path} (mode 0600)")


__all__ = ["login_cmd"]
