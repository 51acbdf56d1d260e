"""``tracker index``: the Parquet index of runs that no longer run."""

from __future__ import annotations

import click

from . import CliContext
from .options import format_option, handle_errors
from .render import dumps


@click.command("index")
@click.option("--rebuild", is_flag=True, help="Drop the index and index every run again.")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def index_cmd(obj: CliContext, rebuild: bool, fmt: str) -> None:
    """Index finished, failed and crashed runs into Parquet files (zstd) for fast queries.

    The index lives in the store's index/ folder and is derived: the JSONL
    files stay the source of truth, deleting the index changes no answer.
    A second call indexes only the runs that ended or changed since; a run
    appended to after it was indexed is read from its JSONL until then.

    \b
    Examples:
      tracker index
      tracker query "SELECT count(*) FROM metrics"
    """
    from ..query.index import build_index
    from ..query.sql import duckdb_module

    duckdb_module()
    rep = build_index(obj.store, rebuild=rebuild)
    jsonl, parquet = rep.per_record()
    if fmt == "json":
        click.echo(dumps({"indexed": rep.indexed, "running_left_out": rep.skipped_running, "removed": rep.removed,
                          "runs": rep.total_runs, "records": rep.records, "jsonl_bytes": rep.jsonl_bytes,
                          "parquet_bytes": rep.parquet_bytes, "jsonl_bytes_per_record": jsonl,
                          "parquet_bytes_per_record": parquet, "seconds": rep.seconds}))
        return
    click.echo(f"indexed {rep.indexed} run{'s' if rep.indexed != 1 else ''} in {rep.seconds:.1f}s"
               + (f" ({rep.skipped_running} still running, left out)" if rep.skipped_running else ""))
    click.echo(f"index: {rep.total_runs} runs, {rep.records} records")
    if jsonl is not None and parquet is not None:
        click.echo(f"bytes per record: JSONL {jsonl:.1f}, Parquet {parquet:.1f} "
                   f"({jsonl / parquet:.1f}x smaller)" if parquet else "")


__all__ = ["index_cmd"]
