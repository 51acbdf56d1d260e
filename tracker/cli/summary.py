"""``tracker summary``: the summaries of a run, and how every command prints summaries."""

from __future__ import annotations

from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors, require_schema, schema_option
from tracker.cli.render import csv_text, dumps, table_text
from tracker.cli.terminal import style, use_color
from tracker.core.text import human_rows


def summaries_csv(summaries: list[Any]) -> str:
    """Every summary in one CSV: a ``summary`` column, then the union of their columns."""
    columns: dict[str, None] = {"summary": None}
    rows = []
    for s in summaries:
        for c in s.column_names():
            columns.setdefault(c, None)
        rows += [{"summary": s.summarizer or s.title, **r} for r in s.rows]
    return csv_text(list(columns), rows)


def print_summaries(fmt: str, summaries: list[Any], meta: dict[str, Any]) -> None:
    """Print summaries as aligned tables one after another, as one JSON document, or as one CSV."""
    if fmt == "json":
        click.echo(dumps({**meta, "summaries": [s.to_dict() for s in summaries]}))
        return
    if fmt == "csv":
        if summaries:
            click.echo(summaries_csv(summaries), nl=False)
        else:
            click.echo("tracker: no summaries: the run has no records with a summarizer", err=True)
        return
    if not summaries:
        click.echo("(no summaries: the run has no records with a summarizer)")
        return
    color = use_color()
    for i, s in enumerate(summaries):
        if i:
            click.echo()
        click.echo(style(s.title, bold=True) + style(f"  ({s.summarizer})", dim=True) if s.summarizer
                   else style(s.title, bold=True))
        cols = s.column_names()
        click.echo(table_text(cols, human_rows(cols, s.rows), color=color) if s.rows else "(no rows)")
        for note in s.notes:
            click.echo(f"  {note}")


@click.command("summary")
@click.argument("run")
@schema_option("Only the summaries of this schema.")
@format_option()
@click.pass_obj
@handle_errors
def summary_cmd(obj: CliContext, run: str, schema: str | None, fmt: str) -> None:
    """Print the summaries of a run (every schema it holds, or one).

    RUN is an id, a unique prefix of one, or a run name.

    \b
    Examples:
      tracker summary 3f2a
      tracker summary 3f2a --schema metrics --format csv
    """
    view = obj.store.run(run)
    if schema is not None:
        require_schema(obj.host, schema)
    print_summaries(fmt, view.summarize(schema), {"run": view.id, "name": view.info.name})
