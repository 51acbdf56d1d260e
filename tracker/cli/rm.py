"""``tracker rm``: move runs to the trash, by id or by selection."""

from __future__ import annotations

import sys

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, format_option, handle_errors
from tracker.cli.render import dumps, table_text
from tracker.cli.terminal import is_terminal
from tracker.core.text import when

STATUSES = ("running", "finished", "failed", "crashed", "stopped")


def run_rows(obj: CliContext, infos: list, sizes: dict[str, int] | None = None) -> list[dict]:
    """Table rows of runs: id, name, project, status, start (and size)."""
    from tracker.lifecycle import human_bytes

    rows = []
    for i in infos:
        row = {"id": obj.short(i.id), "name": i.name, "project": i.project, "status": i.status,
               "start": when(i.created_at)}
        if sizes is not None:
            row["size"] = human_bytes(sizes.get(i.id, 0))
        rows.append(row)
    return rows


def run_docs(infos: list, sizes: dict[str, int] | None = None) -> list[dict]:
    """JSON objects of runs: id, name, project, status, created_at, tags (and bytes)."""
    docs = []
    for i in infos:
        doc = {"id": i.id, "name": i.name, "project": i.project, "status": i.status,
               "created_at": i.created_at, "tags": i.tags}
        if sizes is not None:
            doc["bytes"] = sizes.get(i.id, 0)
        docs.append(doc)
    return docs


@click.command("rm")
@click.argument("runs", nargs=-1)
@click.option("--project", metavar="P", help="Select the runs of this project.")
@click.option("--status", type=click.Choice(STATUSES), help="Select the runs with this status.")
@click.option("--older-than", "older_than", metavar="AGE",
              help="Select runs started longer ago than AGE (90s, 30m, 12h, 7d, 2w).")
@click.option("--tag", "tags", metavar="T", multiple=True, help="Select runs with this tag (repeat: all of them).")
@click.option("--dry-run", is_flag=True, help="Only show what would be moved to the trash.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Also move runs whose writer is still alive.")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def rm_cmd(obj: CliContext, runs: tuple[str, ...], project: str | None, status: str | None,
           older_than: str | None, tags: tuple[str, ...], dry_run: bool, yes: bool, force: bool,
           fmt: str) -> None:
    """Move runs to the trash (<store>/trash), by id or by selection; `tracker restore` brings them back.

    Shows what it moves (count, names, bytes) and asks on a terminal; off a
    terminal it needs --yes. A run whose writer is alive is refused unless
    --force; a selection skips such runs and says so. Each run moves with one
    rename: nothing is copied or rewritten. `tracker gc` empties the trash.

    \b
    Examples:
      tracker rm 3f2a 9c1e
      tracker rm --project scratch --status crashed --older-than 7d --dry-run
      tracker rm --tag draft --yes
    """
    from tracker.lifecycle import human_bytes, parse_age, plan_removal, remove_runs

    age = parse_age(older_than) if older_than is not None else None
    store = obj.store
    plan = plan_removal(store, runs, project=project, status=status, older_than=age, tags=tags, force=force)
    n = len(plan.runs)
    what = f"{n} run{'s' if n != 1 else ''}, {human_bytes(plan.bytes)}"
    for info in plan.skipped:
        click.echo(f"tracker: skipped {info.id}" + (f" ({info.name})" if info.name else "")
                   + ": it is running (its writer is alive; --force moves it anyway)", err=True)
    if fmt == "table" and n:
        click.echo(table_text(["id", "name", "project", "status", "start", "size"], run_rows(obj, plan.runs,
                                                                                              plan.sizes)))
    if not n:
        click.echo("tracker: no runs match the selection; nothing to remove", err=True)
    elif dry_run:
        if fmt == "table":
            click.echo(f"dry run: would move {what} to the trash")
    elif not yes:
        if not is_terminal(sys.stdin):
            fail(f"refusing to move {what} to the trash without confirmation: stdin is not a terminal; "
                 "pass --yes (or --dry-run to only look)")
        if not click.confirm(f"Move {what} to the trash?", default=False, err=True):
            fail("nothing was removed")
    moved = remove_runs(store, plan) if n and not dry_run else []
    if fmt == "json":
        chosen = plan.runs if dry_run else [i for i in plan.runs if i.id in moved]
        click.echo(dumps({"dry_run": dry_run, "count": len(chosen),
                          "bytes": sum(plan.sizes[i.id] for i in chosen),
                          "removed": run_docs(chosen, plan.sizes), "skipped": run_docs(plan.skipped)}))
    elif moved:
        moved_bytes = sum(plan.sizes[i] for i in moved)
        click.echo(f"moved {len(moved)} run{'s' if len(moved) != 1 else ''} ({human_bytes(moved_bytes)}) "
                   "to the trash; `tracker restore RUN` brings one back, `tracker gc` empties the trash")
