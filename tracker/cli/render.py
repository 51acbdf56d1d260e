"""Output formats shared by the commands: aligned tables, strict JSON, CSV."""

from __future__ import annotations

import csv
import io
import math
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click
import orjson

from tracker.cli.numbers import aligned, number
from tracker.core.format import encode_nonfinite

FORMATS = ("table", "json", "csv")
#: A column is never squeezed below this many characters to fit the terminal.
MIN_COLUMN = 10


def dumps(doc: Any, *, encoded: bool = False) -> str:
    """One strict JSON document; NaN and infinities as the store writes them.

    NaN, +Inf and -Inf become the strings ``"NaN"``, ``"Infinity"`` and
    ``"-Infinity"``; numpy scalars become Python numbers.

    :param encoded: the caller has already encoded the document's non-finite numbers
        (a listing of thousands of runs, most of which hold none, skips the walk).
    """
    return orjson.dumps(doc if encoded else encode_nonfinite_deep(doc),
                        option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode()


def dumps_line(doc: Any) -> str:
    """Like :func:`dumps`, on one line (for JSON Lines)."""
    option = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
    return orjson.dumps(encode_nonfinite_deep(doc), option=option).decode()


_PLAIN = frozenset((str, int, bool, type(None)))


def encode_nonfinite_deep(obj: Any) -> Any:
    """Like the store's encoding, through nested dicts, lists and numpy values."""
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is float:
        return obj if obj - obj == 0.0 else encode_nonfinite(obj)
    if t is dict:
        # Plain values are taken as they are: one type test each, no call (listings hold many).
        plain = _PLAIN
        return {k: v if type(v) in plain or (type(v) is float and v - v == 0.0) else encode_nonfinite_deep(v)
                for k, v in obj.items()}
    if t is list or t is tuple:
        plain = _PLAIN
        return [v if type(v) in plain or (type(v) is float and v - v == 0.0) else encode_nonfinite_deep(v)
                for v in obj]
    if isinstance(obj, float):  # numpy's float64, a float subclass
        return obj if math.isfinite(obj) else encode_nonfinite(float(obj))
    if isinstance(obj, dict):
        return {k: encode_nonfinite_deep(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode_nonfinite_deep(v) for v in obj]
    if type(obj).__module__ == "numpy" and hasattr(obj, "tolist"):
        return encode_nonfinite_deep(obj.tolist())
    return obj


def cell(value: Any) -> str:
    """One value as table text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (int, float)):
        return number(value)  # the page's rules too (tracker/cli/numbers.py)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {cell(v)}" for k, v in value.items()) + "}"
    return str(value)


def is_number(v: Any) -> bool:
    """Whether ``v`` is an int or float (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def terminal_width() -> int | None:
    """The terminal's width when stdout is one, else ``None`` (no fitting when piped)."""
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size((100, 24)).columns


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def table_text(columns: Sequence[str], rows: Iterable[dict[str, Any]], *,
               headers: dict[str, str] | None = None,
               marks: set[tuple[int, str]] | None = None,
               styles: Callable[[int, str, Any], dict[str, Any] | None] | None = None,
               width: int | None = -1, color: bool = False) -> str:
    """An aligned text table.

    :param headers: display names of some columns (default: the column names).
    :param marks: ``(row index, column)`` cells to mark as best with a ``*``.
    :param styles: ``styles(row, column, value)`` gives ``click.style`` options for a cell.
    :param width: fit into this many characters by clipping wide text columns;
        ``-1`` (default) for the terminal's width on a terminal, ``None`` for no limit.
    :param color: apply ``styles``, bold headers and marks' colour.
    """
    rows = list(rows)
    headers = headers or {}
    names = [headers.get(c, c) for c in columns]
    body = []
    for row in rows:
        line = []
        for c in columns:
            line.append(cell(row.get(c)))
        body.append(line)
    numeric = [bool(rows) and all(row.get(c) is None or is_number(row.get(c)) for row in rows) for c in columns]
    for j, is_num in enumerate(numeric):
        if is_num:  # decimal points one under the other
            for line, text in zip(body, aligned([line[j] for line in body]), strict=True):
                line[j] = text
    if marks:
        for i, line in enumerate(body):
            for j, c in enumerate(columns):
                if (i, c) in marks:
                    line[j] = line[j].rstrip() + "*" + line[j][len(line[j].rstrip()) + 1:]
    widths = [max([len(n)] + [len(r[j]) for r in body]) for j, n in enumerate(names)]
    if width == -1:
        width = terminal_width()
    if width is not None:
        _fit(widths, numeric, width)

    def line_of(cells: Sequence[str], row: int | None) -> str:
        parts = []
        for j, text in enumerate(cells):
            text = _clip(text, widths[j])
            padded = text.rjust(widths[j]) if numeric[j] and row is not None else text.ljust(widths[j])
            if color:
                if row is None:
                    padded = click.style(padded, bold=True)
                else:
                    opts = styles(row, columns[j], rows[row].get(columns[j])) if styles else None
                    if marks and (row, columns[j]) in marks:
                        opts = {**(opts or {}), "fg": "green", "bold": True}
                    if opts:
                        padded = click.style(padded, **opts)
            parts.append(padded)
        return "  ".join(parts).rstrip()

    lines = [line_of(names, None), "  ".join("-" * w for w in widths)]
    lines += [line_of(r, i) for i, r in enumerate(body)]
    return "\n".join(lines)


def _fit(widths: list[int], numeric: list[bool], limit: int) -> None:
    """Narrow the widest text columns until the table fits ``limit`` (numbers are never clipped)."""
    while True:
        excess = sum(widths) + 2 * (len(widths) - 1) - limit
        if excess <= 0:
            return
        candidates = [j for j, w in enumerate(widths) if not numeric[j] and w > MIN_COLUMN]
        if not candidates:
            return
        j = max(candidates, key=widths.__getitem__)
        second = max((widths[k] for k in candidates if k != j), default=MIN_COLUMN)
        widths[j] -= min(excess, widths[j] - max(second, MIN_COLUMN)) or 1


def csv_text(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> str:
    """CSV with a header line; NaN and infinities as ``NaN``, ``inf``, ``-inf``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([csv_value(row.get(c)) for c in columns])
    return buf.getvalue()


def csv_value(v: Any) -> Any:
    """One value as a CSV cell: empty for None, JSON text for lists and dicts."""
    if v is None:
        return ""
    if type(v).__module__ == "numpy" and hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (list, tuple, dict)):
        return orjson.dumps(encode_nonfinite_deep(v)).decode()
    return v

