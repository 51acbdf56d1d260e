"""``tracker tag``: add and remove tags of runs after the fact."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps, table_text


@click.command("tag")
@click.argument("runs", nargs=-1, required=True)
@click.option("--add", "add", metavar="TAG", multiple=True, help="Add this tag (repeatable).")
@click.option("--remove", "remove", metavar="TAG", multiple=True, help="Remove this tag (repeatable).")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def tag_cmd(obj: CliContext, runs: tuple[str, ...], add: tuple[str, ...], remove: tuple[str, ...],
            fmt: str) -> None:
    """Add or remove tags of runs; without --add or --remove, print their tags.

    Each edit is an event appended to the run (its records and its writers
    are untouched), so a running run can be tagged too. RUN is an id, a
    unique prefix of one, or a run name. An unknown run or a bad tag (empty,
    or with a line break) changes nothing.

    \b
    Examples:
      tracker tag 3f2a --add baseline --add lr-sweep
      tracker tag 3f2a 9c1e --remove draft
      tracker tag 3f2a
    """
    from tracker.write.edits import named_views, tag_runs

    store = obj.store
    infos = tag_runs(store, runs, add, remove) if add or remove else [v.info for v in named_views(store, runs)]
    if fmt == "json":
        click.echo(dumps([{"id": i.id, "short_id": obj.short(i.id), "name": i.name, "tags": i.tags}
                          for i in infos]))
        return
    rows = [{"id": obj.short(i.id), "name": i.name, "tags": ", ".join(i.tags) or "-"} for i in infos]
    click.echo(table_text(["id", "name", "tags"], rows))
