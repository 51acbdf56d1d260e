"""``tracker artifacts RUN``: the artifacts a run logged (name, kind, size, hash, step)."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import csv_text, dumps, table_text
from tracker.core.text import when

COLUMNS = ["name", "kind", "size", "files", "sha256", "step", "logged", "stored", "path"]


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@click.command("artifacts")
@click.argument("run")
@format_option()
@click.pass_obj
@handle_errors
def artifacts_cmd(obj: CliContext, run: str, fmt: str) -> None:
    """List a run's artifacts in log order: name, kind, size, sha256, step, where the bytes are.

    \b
    Examples:
      tracker artifacts 3f2a
      tracker artifacts 3f2a --format json
    """
    view = obj.store.run(run)
    rows = [{"name": a.name, "kind": a.kind, "size": a.size, "files": a.file_count, "sha256": a.sha256,
             "step": a.step, "time": a.time, "stored": "reference" if a.reference else "copy",
             "path": str(a.path)} for a in view.artifacts()]
    if fmt == "json":
        click.echo(dumps({"run": view.id, "artifacts": rows}))
    elif fmt == "csv":
        click.echo(csv_text(["name", "kind", "size", "files", "sha256", "step", "time", "stored", "path"], rows),
                   nl=False)
    elif not rows:
        click.echo(f"run {view.id} has no artifacts")
    else:
        shown = [{**r, "size": _size(r["size"]), "sha256": r["sha256"][:12], "logged": when(r["time"])}
                 for r in rows]
        click.echo(table_text(COLUMNS, shown))
