"""``tracker restore``: move runs back from the trash."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps, table_text
from tracker.cli.rm import run_docs, run_rows


@click.command("restore")
@click.argument("runs", nargs=-1, required=True)
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def restore_cmd(obj: CliContext, runs: tuple[str, ...], fmt: str) -> None:
    """Move runs back from the trash (see `tracker runs --trash`).

    RUN is an id, a unique prefix of one, or a run name, as the trash lists
    them. A run whose id exists in the store again is refused, and then
    nothing is restored.

    \b
    Examples:
      tracker restore 3f2a
    """
    from tracker.lifecycle import restore_runs

    infos = restore_runs(obj.store, runs)
    if fmt == "json":
        click.echo(dumps({"restored": run_docs(infos)}))
        return
    click.echo(table_text(["id", "name", "project", "status", "start"], run_rows(obj, infos)))
    click.echo(f"restored {len(infos)} run{'s' if len(infos) != 1 else ''}")
