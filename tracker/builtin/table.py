"""Built-in ``table`` schema: a logged table of rows (W&B's ``wandb.Table``), and its summary.

A ``table`` record holds the key it was logged under, its column names and
its rows, each row one JSON value per column.
"""

from __future__ import annotations

from typing import Any

import attrs

from tracker import Schema, Summarizer, Summary, Table, hookimpl


def _rows_match(inst: TableRecord, _attribute: attrs.Attribute, data: list[list[Any]]) -> None:
    width = len(inst.columns)
    for i, row in enumerate(data):
        if len(row) != width:
            raise ValueError(f"row {i} has {len(row)} values, expected {width} (one per column)")


def _unique(_inst: object, _attribute: attrs.Attribute, columns: list[str]) -> None:
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        raise ValueError(f"column names must be unique, given {twice} more than once")


@attrs.frozen(kw_only=True)
class TableRecord:
    """A table: its name (the key it was logged under), column names and rows."""

    name: str
    columns: list[str] = attrs.field(validator=_unique)
    data: list[list[Any]] = attrs.field(validator=_rows_match)


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("table", TableRecord, description="a table of rows, one JSON value per column")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("table.names", "table", summarize_tables, "per table name: count, steps, last size")]


def summarize_tables(table: Table) -> Summary:
    """Per table name: tables logged, first and last step, the last one's rows and columns."""
    steps = table["step"]
    by_name: dict[str, list[int]] = {}
    for i, name in enumerate(table["name"]):
        by_name.setdefault(name, []).append(i)
    rows = []
    for name, idx in by_name.items():
        last = idx[-1]
        rows.append({"name": name, "tables": len(idx), "first_step": int(steps[idx[0]]),
                     "last_step": int(steps[last]), "rows": len(table["data"][last]),
                     "columns": ", ".join(table["columns"][last])})
    return Summary("Tables", rows)
