"""``tracker index``: build the derived columns and the run catalog of the whole store, or drop them."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB"


@click.command("index")
@click.option("--drop", is_flag=True, help="Remove the derived data (readers build it again when they need it).")
@click.option("--rebuild", is_flag=True, help="Drop the derived data, then build it all again.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: one per CPU).")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def index_cmd(obj: CliContext, drop: bool, rebuild: bool, jobs: int | None, fmt: str) -> None:
    """Build every run's derived columns and the run catalog ahead of time, with a progress bar.

    Readers build this data themselves the first time they need it (the API,
    every command, the dashboard, tracker query) and extend it with new lines;
    warming it ahead of time makes the first look at any run fast. It lives in
    the store's index/ folder and is derived: the JSONL files stay the only
    truth, and deleting index/ changes no answer, only the time it takes.
    A second tracker index started meanwhile waits for the first.

    \b
    Examples:
      tracker index
      tracker index --drop
      tracker query "SELECT run_id, min FROM metric_stats WHERE name = 'loss' ORDER BY min LIMIT 10"
    """

    from tracker.cli.terminal import progress
    from tracker.query.index import drop as drop_index
    from tracker.query.index import warm

    store = obj.store

    def waiting() -> None:
        click.echo("tracker index: another `tracker index` is running on this store; waiting for it to finish",
                   err=True)

    if drop or rebuild:
        freed = drop_index(store, on_wait=waiting)
        if drop:
            if fmt == "json":
                click.echo(dumps({"dropped_bytes": freed}))
            else:
                click.echo(f"dropped the derived data ({_mib(freed)}); readers build it again when they need it")
            return
    from tracker.query.index import plan_work

    _, total = plan_work(store)
    with progress(total, "indexing", output_on_terminal=False) as bar:
        rep = warm(store, procs=jobs, progress=bar.update, on_wait=waiting)
    for m in dict.fromkeys(rep.messages):
        click.echo(f"tracker: {m}" if not m.startswith("tracker:") else m, err=True)
    if fmt == "json":
        click.echo(dumps({"runs": rep.runs, "segments": rep.segments, "built": rep.built, "records": rep.records,
                          "jsonl_bytes": rep.jsonl_bytes, "index_bytes": rep.index_bytes,
                          "seconds": rep.seconds}))
        return
    click.echo(f"indexed {rep.runs} run{'s' if rep.runs != 1 else ''} ({rep.records:,} records, "
               f"{rep.segments} segment{'s' if rep.segments != 1 else ''}, {rep.built} built or extended) "
               f"in {rep.seconds:.1f}s")
    click.echo(f"JSONL {_mib(rep.jsonl_bytes)}, derived data {_mib(rep.index_bytes)}")


__all__ = ["index_cmd"]
