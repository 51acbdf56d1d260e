"""``tracker plugins``: the installed plugins, their versions, what they offer, broken ones with their error."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import csv_text, dumps, table_text
from tracker.cli.terminal import use_color

_PLUGIN_STATUS_COLORS = {"ok": "green", "broken": "red", "disabled": "yellow"}


@click.command("plugins")
@format_option()
@click.pass_obj
@handle_errors
def plugins_cmd(obj: CliContext, fmt: str) -> None:
    """List plugins: distribution, version, status, schemas, summarizers, and broken ones with their error.

    \b
    Examples:
      tracker plugins
      tracker plugins --format json
    """
    infos = obj.host.plugins()
    if fmt == "json":
        click.echo(dumps([p.to_dict() for p in infos]))
        return
    rows = [{"name": p.name + (" (built-in)" if p.builtin and fmt == "table" else ""),
             "builtin": p.builtin, "distribution": p.distribution, "version": p.version, "status": p.status,
             "schemas": ", ".join(p.schemas), "summarizers": ", ".join(p.summarizers), "error": p.error}
            for p in infos]
    columns = ["name", "distribution", "version", "status", "schemas", "summarizers", "error"]
    if fmt == "csv":
        click.echo(csv_text(["name", "builtin", *columns[1:]], rows), nl=False)
        return
    if not any(r["error"] for r in rows):
        columns.remove("error")
    click.echo(table_text(columns, rows, color=use_color(),
                          styles=lambda i, c, v: {"fg": _PLUGIN_STATUS_COLORS.get(v)} if c == "status" else None))
