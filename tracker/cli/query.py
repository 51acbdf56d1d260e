"""``tracker query``: SQL over the store's views (DuckDB)."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import csv_text, dumps, table_text
from tracker.core.text import human_rows
from tracker.query.rows import run_query, run_query_capped  # noqa: F401 - the command's rows, and the MCP tool's


@click.command("query")
@click.argument("sql", metavar="SQL")
@click.option("--no-index", is_flag=True,
              help="Read every run from its JSONL files (each line checked), not from the derived columns.")
@format_option()
@click.pass_obj
@handle_errors
def query_cmd(obj: CliContext, sql: str, no_index: bool, fmt: str) -> None:
    """Run SQL over the store: views runs, metrics, records, metric_stats and one per schema (needs DuckDB).

    Views: runs (id, name, project, status, created_at, ended_at, tags,
    config, one column per config key), metrics (run_id, step, time, name,
    value), records (run_id, schema, step, time, writer, seq, data),
    metric_stats (run_id, name, count, first, last, min, max and the steps
    of each: the run catalog's figures, the fast way to compare runs), and
    one per schema with typed columns, e.g. "fft.loss_point". They read the
    derived columns under the store's index/ folder plus the lines appended
    since, with the same answers as the JSONL.

    \b
    Examples:
      tracker query "SELECT status, count(*) FROM runs GROUP BY status"
      tracker query "SELECT run_id, min FROM metric_stats WHERE name = 'loss'
                     ORDER BY min LIMIT 10"
      tracker query "SELECT r.name, min(m.value) AS best, r.lr FROM metrics m
                     JOIN runs r ON r.id = m.run_id WHERE m.name = 'loss'
                     GROUP BY ALL ORDER BY best LIMIT 10"
      tracker query 'SELECT * FROM "fft.loss_point" LIMIT 5' --format csv
    """
    columns, rows = run_query(obj.store, sql, use_index=not no_index)
    if fmt == "json":
        click.echo(dumps(rows))
    elif fmt == "csv":
        click.echo(csv_text(columns, rows), nl=False)
    elif columns:
        # A table for people: Unix times as dates, bytes as KiB/MiB/GiB (JSON and CSV keep the numbers).
        click.echo(table_text(columns, human_rows(columns, rows)))
        if not rows:
            click.echo("(no rows)", err=True)


__all__ = ["query_cmd", "run_query"]
