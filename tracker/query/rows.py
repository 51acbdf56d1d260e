"""Query answers as plain rows: column names and dicts of plain values, all rows or the first ``limit``.

What ``tracker query`` prints and the MCP server's ``query`` tool returns, from the same code.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import uuid
from typing import Any

import orjson


def plain_value(value: Any, is_json: bool) -> Any:
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
        return [plain_value(v, False) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_value(v, False) for k, v in value.items()}
    return value


def run_query(store: Any, sql: str, use_index: bool = True) -> tuple[list[str], list[dict[str, Any]]]:
    """Column names and rows (as dicts of plain values) of ``sql`` over ``store``.

    :raises QueryError: carrying DuckDB's message, also for errors met while fetching.
    """
    from tracker.core.errors import QueryError
    from tracker.query.sql import duckdb_module, query

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
    rows = [{c: plain_value(v, j) for c, v, j in zip(columns, row, json_cols, strict=True)} for row in raw]
    return columns, rows


def run_query_capped(store: Any, sql: str, limit: int) -> tuple[list[str], list[dict[str, Any]], int]:
    """Like :func:`run_query`, fetching at most ``limit`` rows; also the number of rows of the whole result.

    Only ``limit`` rows are turned into Python values, so a query over millions of rows costs the
    count, not their transfer.
    """
    from tracker.core.errors import QueryError
    from tracker.query.sql import duckdb_module, query

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
    rows = [{c: plain_value(v, j) for c, v, j in zip(columns, row, json_cols, strict=True)} for row in raw]
    return columns, rows, total
