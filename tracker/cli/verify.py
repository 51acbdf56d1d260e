"""``tracker verify``: check the integrity of runs, every problem with its file and line."""

from __future__ import annotations

import sys

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import csv_text, dumps
from tracker.cli.terminal import progress, style
from tracker.read.verify import store_size, verify_store


@click.command("verify")
@click.argument("runs", nargs=-1)
@format_option()
@click.pass_obj
@handle_errors
def verify_cmd(obj: CliContext, runs: tuple[str, ...], fmt: str) -> None:
    """Check runs (default: all): torn, corrupt or changed lines, gaps and duplicates, missing starts.

    Prints every problem as file:line: kind: message; exits 0 when the
    runs are intact and 1 otherwise. Nothing is changed.

    \b
    Examples:
      tracker verify
      tracker verify 3f2a 9c1e --format json
    """
    store = obj.store
    ids = [store.run(r).id for r in runs] if runs else store.run_ids()
    timeout = obj.host.config.heartbeat_timeout
    with progress(store_size(store.path, ids), "verifying") as bar:
        report = verify_store(store.path, ids, timeout=timeout, progress=bar.update)
    from tracker.capture.check import check_blobs

    files, blob_problems = check_blobs(store.path, ids, open_run=store.run)
    report.problems.extend(blob_problems)
    counts = {"runs": report.runs, "segments": report.segments, "events": report.events,
              "records": report.records, "bytes": report.bytes, "blobs": files}
    problems = [{"path": p.path, "line": p.line, "kind": p.kind, "message": p.message} for p in report.problems]
    if fmt == "json":
        click.echo(dumps({"ok": report.ok, **counts, "problems": problems}))
    elif fmt == "csv":
        click.echo(csv_text(["path", "line", "kind", "message"], problems), nl=False)
    else:
        for p in report.problems:
            where = p.path if p.line is None else f"{p.path}:{p.line}"
            click.echo(f"{where}: {style(p.kind, fg='red', bold=True)}: {p.message}")
        n = len(report.problems)
        summary = (f"{report.runs} run{'s' if report.runs != 1 else ''}, "
                   f"{report.segments} segment{'s' if report.segments != 1 else ''}, "
                   f"{report.events} events" + (f", {files} stored files" if files else "") + " checked: ")
        if n:
            click.echo(summary + style(f"{n} problem{'s' if n != 1 else ''}", fg="red", bold=True))
        else:
            click.echo(summary + style("ok", fg="green"))
    sys.exit(0 if report.ok else 1)
