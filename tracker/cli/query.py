"""``tracker query``: SQL over the store's views (DuckDB)."""

from __future__ import annotations

import datetime as _dt
import decimal
import uuid
from typing import Any

import click
import orjson

from . import CliContext
from .options import format_option, handle_errors
from .render import csv_text, dumps, table_text
from .text import human_rows


def _plain(value: Any, is_json: bool) -> Any:
    """A DuckDB value as plain data: JSON columns parsed, exotic types as numbers or text."""
    if value is None:
        return None
    if is_json and isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v, False) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, False) for k, v in value.items()}
    return value


def run_query(store: Any, sql: str, use_index: bool = True) -> tuple[list[str], list[dict[str, Any]]]:
    """Column names and rows (as dicts of plain values) of ``sql`` over ``store``.

    :raises QueryError: carrying DuckDB's message, also for errors met while fetching.
    """
    from ..errors import QueryError
    from ..query.sql import duckdb_module, query

    duckdb = duckdb_module()
    rel = query(store, sql, use_index=use_index)
    if rel is None:
        return [], []
    try:
        columns = list(rel.columns)
        json_cols = [str(t) == "JSON" for t in rel.types]
        raw = rel.fetchall()
    except duckdb.Error as exc:
        raise QueryError(str(exc)) from None
    rows = [{c: _plain(v, j) for c, v, j in zip(columns, row, json_cols, strict=True)} for row in raw]
    return columns, rows


def run_query_capped(store: Any, sql: str, limit: int) -> tuple[list[str], list[dict[str, Any]], int]:
    """Like :func:`run_query`, fetching at most ``limit`` rows; also the number of rows of the whole result.

    Only ``limit`` rows are turned into Python values, so a query over millions of rows costs the
    count, not their transfer.
    """
    from ..errors import QueryError
    from ..query.sql import duckdb_module, query

    duckdb = duckdb_module()
    rel = query(store, sql)
    if rel is None:
        return [], [], 0
    try:
        columns = list(rel.columns)
        json_cols = [str(t) == "JSON" for t in rel.types]
        raw = rel.limit(limit).fetchall()
        total = len(raw) if len(raw) < limit else int(rel.aggregate("count(*)").fetchall()[0][0])
    except duckdb.Error as exc:
        raise QueryError(str(exc)) from None
    rows = [{c: _plain(v, j) for c, v, j in zip(columns, row, json_cols, strict=True)} for row in raw]
    return columns, rows, total


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
