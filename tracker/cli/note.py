"""``tracker note``: write or extend a run's notes after the fact."""

from __future__ import annotations

import sys

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps


@click.command("note")
@click.argument("run")
@click.argument("text")
@click.option("--append", is_flag=True, help="Add TEXT as a new line after the notes instead of replacing them.")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def note_cmd(obj: CliContext, run: str, text: str, append: bool, fmt: str) -> None:
    """Set a run's notes to TEXT ("-" reads it from stdin); --append adds a line.

    The notes are one text, shown by ``tracker show`` and the dashboard. Each
    change is an event appended to the run; an empty TEXT clears the notes.

    \b
    Examples:
      tracker note 3f2a "diverged after the lr warmup; rerun with clipping"
      tracker note 3f2a --append "rerun: 9c1e"
      git log -1 --format=%B | tracker note 3f2a -
    """
    from tracker.lifecycle import note_run

    if text == "-":
        text = sys.stdin.read().rstrip("\n")
    info = note_run(obj.store, run, text, append=append)
    if fmt == "json":
        click.echo(dumps({"id": info.id, "short_id": obj.short(info.id), "name": info.name,
                          "notes": info.notes}))
        return
    click.echo(f"{obj.short(info.id)}" + (f" ({info.name})" if info.name else "") + ":")
    for line in (info.notes or "(no notes)").splitlines() or [""]:
        click.echo(f"  {line}")
