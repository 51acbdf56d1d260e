"""``tracker du``: bytes per run and per project, largest first, and the total."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps, table_text


@click.command("du")
@click.option("-n", "--limit", type=click.IntRange(min=1), help="Show at most this many runs.")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def du_cmd(obj: CliContext, limit: int | None, fmt: str) -> None:
    """Show the bytes each run and each project takes: JSONL, blobs, index; largest first; the total.

    Apparent sizes. A blob shared by several runs counts in each run and
    once in the total; the total also counts the trash and blobs no run
    references (`tracker gc` removes both).

    \b
    Examples:
      tracker du
      tracker du -n 20 --format json
    """
    from tracker.lifecycle import disk_usage, human_bytes

    usage = disk_usage(obj.store)
    runs = usage["runs"][:limit] if limit else usage["runs"]
    if fmt == "json":
        click.echo(dumps({**usage, "runs": runs}))
        return
    h = human_bytes
    rows = [{"id": obj.short(r["id"]), "name": r["name"], "project": r["project"], "jsonl": h(r["jsonl"]),
             "blobs": h(r["blobs"]), "index": h(r["index"]), "total": h(r["total"])} for r in runs]
    columns = ["jsonl", "blobs", "index", "total"]
    if rows:
        click.echo(table_text(["id", "name", "project", *columns], rows))
        if limit and len(usage["runs"]) > limit:
            click.echo(f"({len(usage['runs']) - limit} smaller runs not shown)")
        click.echo()
        prows = [{"project": p["project"], "runs": p["runs"], **{c: h(p[c]) for c in columns}}
                 for p in usage["projects"]]
        click.echo(table_text(["project", "runs", *columns], prows))
        click.echo()
    else:
        click.echo("(no runs)")
    blobs = usage["blobs"]
    unref = "" if blobs["unreferenced"] is None else \
        f", {blobs['unreferenced']} unreferenced ({h(blobs['unreferenced_bytes'])})"
    click.echo(f"runs:  {h(usage['runs_total'])} (blobs shared by runs counted once)")
    click.echo(f"blobs: {blobs['count']} ({h(blobs['bytes'])}){unref}")
    click.echo(f"trash: {h(usage['trash'])}")
    click.echo(f"total: {h(usage['total'])}")
