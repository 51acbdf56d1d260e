"""``tracker ui``: serve the dashboard over the store (optional extra ``tracker-core[ui]``)."""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import sys
import threading

import click

from . import CliContext
from .options import fail, handle_errors

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


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but a loopback address makes the store readable by the network.")
@click.option("--port", default=5170, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option("--watch", is_flag=True,
              help="Also check the alert rules of tracker.toml, as `tracker watch` does (it records its alerts).")
@click.pass_obj
@handle_errors
def ui_cmd(obj: CliContext, host: str, port: int, no_open: bool, watch: bool = False) -> None:
    """Serve the dashboard: runs, charts (live while runs go), comparisons, plugin panels.

    Read-only; a store that does not exist yet is shown empty until runs appear.
    Stop it with Ctrl-C.

    \b
    Examples:
      tracker ui
      tracker --store runs/.tracker ui --port 8080 --no-open
    """
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        fail(INSTALL_HINT)
    from ..store import Store
    from ..ui.app import create_app

    store = Store(obj.store_path, host=lambda: obj.host)
    app = create_app(store, hosts=(host,))
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    url = f"http://{shown if host not in ('0.0.0.0', '::') else '127.0.0.1'}:{port}/"
    if not is_loopback(host):
        click.echo(f"tracker: warning: listening on {host}: the store {store.path} becomes readable by anyone "
                   "who can reach this machine on the network", err=True)
    stop_watch = None
    if watch:
        from ..alerts.watch import Watcher, start_in_thread

        if not Watcher(store, obj.host).rules:  # a rule that does not parse: one line, before serving
            click.echo("tracker: warning: --watch: no [[alerts.rules]] in tracker.toml", err=True)
        stop_watch = start_in_thread(store, obj.host)
    sock = listen(host, port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)

    def announce() -> None:
        # Printed once the socket listens, so the URL works when it is shown.
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.started:
            bound = port
            if port == 0 and server.servers:
                bound = server.servers[0].sockets[0].getsockname()[1]
            real = url.rsplit(":", 1)[0] + f":{bound}/"
            click.echo(f"tracker ui: serving {store.path} at {real}  (Ctrl-C to stop)")
            if not no_open and can_open_browser():
                import webbrowser

                webbrowser.open(real)

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
    click.echo("tracker ui: stopped")
