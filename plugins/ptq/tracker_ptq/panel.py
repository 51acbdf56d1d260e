"""Dashboard panels of PTQ (``tracker ui``): per-layer max error against scale/2, bytes fp32 vs int8."""

from __future__ import annotations

from typing import Any

from tracker import BarChart, Panel, RunView, Series, Table


def _latest(table: Table) -> list[Any]:
    """Each (layer, scheme)'s latest record, in order of first appearance."""
    latest: dict[tuple[str, str], Any] = {}
    for row in table.rows():
        latest[(row.name, row.scheme)] = row
    return list(latest.values())


def _short(scheme: str) -> str:
    return scheme.replace("symmetric_", "").replace("_int8", "")


def _labels(rows: list[Any]) -> list[str]:
    schemes = {r.scheme for r in rows}
    return [r.name if len(schemes) == 1 else f"{r.name} {_short(r.scheme)}" for r in rows]


def error_panel(table: Table, run: RunView) -> list[Any]:
    """Each layer's largest rounding error next to scale/2, the most rounding can cost."""
    rows = _latest(table)
    labels = _labels(rows)
    over = [lab for lab, r in zip(labels, rows, strict=True) if r.max_abs_err > r.scale / 2 * (1 + 1e-6)]
    title = "Max |error| per layer vs scale/2" + (f" ({len(over)} over: clipped)" if over else " (all within)")
    return [BarChart(title, labels, [Series("max |error|", [r.max_abs_err for r in rows]),
                                     Series("scale / 2", [r.scale / 2 for r in rows], color="#9ca3af")],
                     y_label="weight units", log_y=True)]


def bytes_panel(table: Table, run: RunView) -> list[Any]:
    """Bytes of each layer in float32 and once quantised to int8."""
    rows = _latest(table)
    fp32 = sum({r.name: r.bytes_fp32 for r in rows}.values())
    int8: dict[str, int] = {}
    for r in rows:
        int8[r.scheme] = int8.get(r.scheme, 0) + r.bytes_int8
    totals = ", ".join(f"{_short(s) + ' ' if len(int8) > 1 else ''}{b:,} int8 ({fp32 / b:.2f}x smaller)"
                       for s, b in int8.items() if b)
    return [BarChart(f"Bytes per layer: {fp32:,} fp32 -> {totals}", _labels(rows),
                     [Series("fp32", [r.bytes_fp32 for r in rows], color="#6366f1"),
                      Series("int8", [r.bytes_int8 for r in rows], color="#10b981")], y_label="bytes")]


PANELS = [
    Panel("ptq.errors", "ptq.layer", error_panel, title="Rounding error per layer"),
    Panel("ptq.bytes", "ptq.layer", bytes_panel, title="Size per layer"),
]
