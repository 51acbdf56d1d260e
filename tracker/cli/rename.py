"""``tracker rename``: give a run a new name after the fact."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps, table_text


@click.command("rename")
@click.argument("run")
@click.argument("name")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def rename_cmd(obj: CliContext, run: str, name: str, fmt: str) -> None:
    """Rename a run (NAME: free text on one line, not empty).

    The new name is an event appended to the run; the old one stays in its
    history. RUN is an id, a unique prefix of one, or the run's current name.

    \b
    Examples:
      tracker rename 3f2a "baseline, lr 3e-4"
    """
    from tracker.lifecycle import rename_run

    store = obj.store
    before = store.run(run).info.name
    info = rename_run(store, run, name)
    if fmt == "json":
        click.echo(dumps({"id": info.id, "short_id": obj.short(info.id), "name": info.name, "previous": before}))
        return
    click.echo(table_text(["id", "previous", "name"], [{"id": obj.short(info.id), "previous": before,
                                                       "name": info.name}]))
