"""``tracker ui``: serve the dashboard over the store (optional extra ``tracker-core[ui]``)."""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, handle_errors
from tracker.core.errors import TrackerError
from tracker.core.urls import redact_url

INSTALL_HINT = 'tracker ui needs the dashboard extra: pip install "tracker-core[ui]"'


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, for uvicorn to serve on.

    Bound here, before uvicorn starts, so that a port in use is one clear line
    naming it (uvicorn would log its own ``[Errno 98]`` and exit with 3).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        fail(f"cannot listen on {host}: {exc.strerror or exc}", 2)
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # what uvicorn does: restarts reuse the port
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            fail(f"port {port} on {host} is in use (another tracker ui?): choose another with --port, "
                 f"e.g. tracker ui --port {port + 1 if port < 65535 else 5170}", 2)
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", 2)
    sock.set_inheritable(True)
    return sock


def can_open_browser() -> bool:
    """Whether a browser can be shown (a display on Linux; always elsewhere)."""
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


@click.group("ui", invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but a loopback address needs --auth.")
@click.option("--port", default=5170, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option("--auth", metavar="token|USERS.toml",
              help="Who gets in: 'token' (a random token, in the URL printed) or a users file of "
                   "`tracker ui passwd`; needed on any address but loopback.")
@click.option("--watch", is_flag=True,
              help="Also check the alert rules of tracker.toml, as `tracker watch` does (it records its alerts).")
@click.pass_context
@handle_errors
def ui_cmd(ctx: click.Context, host: str, port: int, no_open: bool, auth: str | None, watch: bool = False) -> None:
    """Serve the dashboard: runs, charts (live while runs go), comparisons, plugin panels.

    Read-only; a store that does not exist yet is shown empty until runs appear.
    Stop it with Ctrl-C. On an address other than loopback (a shared server)
    it needs --auth: `--auth token`, or `--auth users.toml` with users added
    by `tracker ui passwd USER --file users.toml`.

    \b
    Examples:
      tracker ui
      tracker --store runs/.tracker ui --port 8080 --no-open
      tracker ui --host 0.0.0.0 --auth token
      tracker ui --watch
    """
    if ctx.invoked_subcommand is not None:
        return
    raw = _raw_store(ctx)
    try:
        serve(ctx.obj, host, port, no_open, auth, raw, watch=watch)
    except TrackerError as exc:
        fail(_redacted(str(exc), raw))


def _raw_store(ctx: click.Context) -> str | None:
    """The store as the user named it (``--store`` or ``TRACKER_STORE``), to show it without a password."""
    raw = ctx.find_root().params.get("store")
    return str(raw) if raw is not None else os.environ.get("TRACKER_STORE")


def _redacted(text: str, raw: str | None) -> str:
    """``text`` with the password of the store's URL (if it has one) replaced by ``***``."""
    if raw and "://" in raw:
        text = text.replace(raw, redact_url(raw))
        secret = urlsplit(raw).password
        if secret:
            text = text.replace(secret, "***")
    return text


def serve(obj: CliContext, host: str, port: int, no_open: bool, auth: str | None, raw: str | None = None, *,
          watch: bool = False, options: Any = None) -> None:
    """``tracker ui``: check the options, then serve until Ctrl-C (see :func:`ui_cmd`).

    :param options: ``tracker server``'s options (:class:`tracker.cli.server.ServerOptions`): keys and
        writing under ``/api/v1/``, TLS, proxy headers; ``None`` for ``tracker ui``.
    """
    label = "tracker server" if options is not None else "tracker ui"
    if not is_loopback(host) and not auth:
        where = redact_url(raw) if raw and "://" in raw else str(obj.store_path)
        fail(f"{label} --host {host} would serve the store {where} to anyone who can reach this machine: "
             "start it with --auth token (a random token in the URL printed) or --auth users.toml "
             "(users added by `tracker ui passwd USER --file users.toml`); see docs/team.md", 2)
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        fail(INSTALL_HINT)
    from tracker.core.urls import is_database_url
    from tracker.store import Store
    from tracker.ui.app import create_app
    from tracker.ui.auth import TokenAuth, UsersAuth, make_auth

    given = obj.given_store
    if isinstance(given, str) and given.lower().startswith(("http://", "https://")):
        from tracker.remote.session import shown

        fail(f"{shown(given)} is a tracker server, which serves its own dashboard: open {shown(given)}/ in a "
             f"browser (the dashboard here serves a store folder or the team database)", 2)
    gate = make_auth(None if auth is None else "token" if auth == "token" else Path(auth))
    # The team database (postgresql://...) is served like a folder; a folder that does not exist yet is empty.
    store = obj.store if is_database_url(obj.given_store) else Store(obj.store_path, host=lambda: obj.host)
    where = redact_url(store.path)
    remote = options.remote(obj, store) if options is not None else None
    # Served on every address: the banner names this machine as a colleague reaches it (its host name and
    # addresses), and the Host check lets those names in. On 0.0.0.0 only IPv4 is served.
    names: list[str] = []
    if host in ("0.0.0.0", "::"):
        from tracker.ui.hosts import machine_names

        names = [*machine_names(ipv6=host == "::"), "127.0.0.1"]
    allowed = options.allow_hosts if options is not None else ()
    app = create_app(store, hosts=(host, *names, *allowed), auth=gate, remote=remote)
    tls = options is not None and options.tls_cert is not None
    if not is_loopback(host) and not tls:
        click.echo(f"tracker: warning: listening on {host}: anyone who can reach this machine may try to log in; "
                   "plain http shows the token, password or API key to the network on the way: keep it on a trusted "
                   "network, or behind HTTPS (--tls-cert, or a proxy with --proxy-headers) or an SSH tunnel",
                   err=True)
    stop_watch = None
    if watch:
        from tracker.alerts.watch import Watcher, start_in_thread

        if not Watcher(store, obj.host).rules:  # a rule that does not parse: one line, before serving
            click.echo("tracker: warning: --watch: no [[alerts.rules]] in tracker.toml", err=True)
        stop_watch = start_in_thread(store, obj.host, say=lambda line: click.echo(line, err=True))
    sock = listen(host, port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            **(options.uvicorn_options() if options is not None else {}))
    server = uvicorn.Server(config)

    def announce() -> None:
        # Printed once the socket listens, so the URL works when it is shown.
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.started:
            bound = port
            if port == 0 and server.servers:
                bound = server.servers[0].sockets[0].getsockname()[1]
            token = f"?token={gate.token}" if isinstance(gate, TokenAuth) else ""

            def url(name: str) -> str:
                shown = f"[{name}]" if ":" in name and not name.startswith("[") else name
                return f"{'https' if tls else 'http'}://{shown}:{bound}/{token}"

            urls = [url(n) for n in names] or [url(host)]
            who = f", users of {gate.path}" if isinstance(gate, UsersAuth) else ""
            click.echo(f"{label}: serving {where} at {urls[0]}  (Ctrl-C to stop{who})")
            if options is not None:
                click.echo(options.banner(urls[0].split("?")[0].rstrip("/")))
            for other in urls[1:]:
                click.echo(f"  or {other}")
            if not no_open and can_open_browser():
                import webbrowser

                webbrowser.open(urls[-1])  # this machine's browser: the loopback URL when there are several

    threading.Thread(target=announce, name="tracker-ui-announce", daemon=True).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        if stop_watch is not None:
            stop_watch.set()
    if not server.started:
        fail(f"cannot listen on {host}:{port} (is the port in use? choose another with --port)")
    click.echo(f"{label}: stopped")


@ui_cmd.command("passwd")
@click.argument("user")
@click.option("--file", "-f", "path", default="users.toml", show_default=True, type=click.Path(dir_okay=False),
              help="The users file (`tracker ui --auth FILE`); made when missing.")
@handle_errors
def passwd_cmd(user: str, path: str) -> None:
    """Add USER to a users file of `tracker ui --auth FILE`, or change their password.

    The password is asked twice and not shown; the file keeps its scrypt hash
    (with salt and parameters), never the password. A dashboard serving the
    file reads it again, and a changed password ends the user's sessions.

    \b
    Examples:
      tracker ui passwd ana
      tracker ui passwd ben --file /etc/tracker/users.toml
    """
    from tracker.ui.auth import MIN_PASSWORD, check_user_name, read_users, set_password

    check_user_name(user)
    if Path(path).exists():
        read_users(path)  # a bad file is one line now, before the password is asked
    password = click.prompt(f"Password for {user}", hide_input=True, default="", show_default=False)
    if len(password) < MIN_PASSWORD:
        fail(f"the password is too short: expected at least {MIN_PASSWORD} characters; nothing changed")
    again = click.prompt("Again", hide_input=True, default="", show_default=False)
    if again != password:
        fail("the two passwords differ; nothing changed")
    new = set_password(path, user, password)
    click.echo(f"tracker ui: {'added' if new else 'changed the password of'} {user} in {path}")
