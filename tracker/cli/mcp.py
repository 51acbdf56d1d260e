"""``tracker mcp``: the store served to assistants over the Model Context Protocol (optional extra ``mcp``)."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, handle_errors
from tracker.cli.ui import is_loopback

INSTALL_HINT = 'tracker mcp needs the MCP SDK: pip install "tracker-core[mcp]"'


@click.command("mcp")
@click.option("--http", "http", is_flag=True, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address for --http.")
@click.option("--port", default=5171, show_default=True, type=click.IntRange(0, 65535), help="Port for --http.")
@click.pass_obj
@handle_errors
def mcp_cmd(obj: CliContext, http: bool, host: str, port: int) -> None:
    """Serve the store to assistants over the Model Context Protocol (stdio, or --http on loopback).

    Read-only tools: list_runs, get_run, get_metrics, compare_runs, query,
    list_alerts, list_sweeps; resource tracker://runs/{id}. See docs/mcp.md
    for registering it with an MCP client.

    \b
    tracker mcp                       # an MCP client starts this on stdio
    tracker --store ~/exp/.tracker mcp --http --port 5171
    """
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        fail(INSTALL_HINT)
    if http and not is_loopback(host):
        fail(f"--host {host}: tracker mcp --http serves only a loopback address (127.0.0.1, ::1, localhost)")
    from tracker.mcp.server import serve

    store = obj.store
    if http:
        click.echo(f"tracker mcp: serving {getattr(store, 'path', store)} at http://{host}:{port}/mcp "
                   "(Ctrl-C to stop)", err=True)
    try:
        serve(store, http=http, host=host, port=port)
    except KeyboardInterrupt:
        pass
