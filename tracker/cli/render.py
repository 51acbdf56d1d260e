"""Output formats shared by the commands: aligned tables, JSON, CSV."""

from __future__ import annotations

import csv
import io
import math
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import click
import orjson

from ..schema import encode_nonfinite

FORMATS = ("table", "json", "csv")


def format_option(default: str = "table") -> Any:
    """The ``--format`` option of every reading command."""
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default=default, show_default=True,
                        help="Output format.")


def dumps(doc: Any) -> str:
    """Strict JSON, with NaN and infinities encoded as in the store."""
    return orjson.dumps(encode_nonfinite_deep(doc), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def encode_nonfinite_deep(obj: Any) -> Any:
    """Like the store's encoding, through nested dicts and lists of any depth."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return encode_nonfinite(obj)
    if isinstance(obj, dict):
        return {k: encode_nonfinite_deep(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode_nonfinite_deep(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", None) == 0:
        return encode_nonfinite_deep(obj.item())
    return obj


def cell(value: Any) -> str:
    """One value as table text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.4g}"
        return f"{value:.4f}".rstrip("0").rstrip(".") if abs(value) < 1e4 else f"{value:.1f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell(v) for v in value) + "]"
    return str(value)


def use_color() -> bool:
    """Colour only on a terminal and never with NO_COLOR set."""
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def table_text(columns: Sequence[str], rows: Iterable[dict[str, Any]],
               marks: dict[tuple[int, str], bool] | None = None) -> str:
    """An aligned text table; ``marks`` puts a ``*`` after chosen cells (best values)."""
    rows = list(rows)
    body = []
    for i, row in enumerate(rows):
        line = []
        for c in columns:
            text = cell(row.get(c))
            if marks and marks.get((i, c)):
                text += "*"
            line.append(text)
        body.append(line)
    widths = [max([len(c)] + [len(r[j]) for r in body]) for j, c in enumerate(columns)]
    numeric = [all(_is_num(row.get(c)) for row in rows) and rows for c in columns]

    def fmt(cells: Sequence[str], header: bool = False) -> str:
        parts = []
        for j, text in enumerate(cells):
            parts.append(text.rjust(widths[j]) if numeric[j] and not header else text.ljust(widths[j]))
        return "  ".join(parts).rstrip()

    head = fmt(columns, header=True)
    if use_color():
        head = click.style(head, bold=True)
    lines = [head, "  ".join("-" * w for w in widths)]
    lines += [fmt(r) for r in body]
    return "\n".join(lines)


def _is_num(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def csv_text(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> str:
    """CSV with a header line; NaN and infinities as NaN, inf, -inf."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([_csv_value(row.get(c)) for c in columns])
    return buf.getvalue()


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (list, dict)):
        return orjson.dumps(encode_nonfinite_deep(v)).decode()
    return v
