"""Dashboard panel of quantisation analysis (``tracker ui``): SQNR against the theoretical SQNR."""

from __future__ import annotations

from typing import Any

from tracker import LineChart, Panel, RunView, Series, Table, TableFigure

from .analysis import theoretical_sqnr


def sqnr_panel(table: Table, run: RunView) -> list[Any]:
    """Measured SQNR over bits per tensor and granularity, with the ideal 6.02 b + 1.76 dB line."""
    groups: dict[tuple[str, str, str], dict[int, float]] = {}
    for row in table.rows():
        groups.setdefault((row.tensor, row.granularity, row.mode), {})[row.bits] = row.sqnr_db
    modes = {k[2] for k in groups}
    series = []
    for (tensor, gran, mode), by_bits in groups.items():
        bits = sorted(by_bits)
        name = f"{tensor} · {gran}" + (f" · {mode}" if len(modes) > 1 else "")
        series.append(Series(name, [by_bits[b] for b in bits], x=bits,
                             kind="points" if len(bits) == 1 else "line"))
    all_bits = sorted({b for g in groups.values() for b in g})
    lo, hi = (all_bits[0], all_bits[-1]) if all_bits else (2, 16)
    ideal = list(range(lo, hi + 1))
    series.append(Series("theoretical 6.02·b + 1.76 dB", [theoretical_sqnr(b) for b in ideal], x=ideal,
                         kind="dashed", color="#9ca3af"))
    rows = [{"tensor": t, "granularity": g, "mode": m, "bits": b, "sqnr_db": s,
             "theoretical_db": round(theoretical_sqnr(b), 2), "gap_db": s - theoretical_sqnr(b)}
            for (t, g, m), by_bits in groups.items() for b, s in sorted(by_bits.items())]
    return [LineChart("SQNR vs bits, measured and theoretical", series, x_label="bits", y_label="SQNR (dB)"),
            TableFigure("SQNR per tensor, granularity and bits", rows,
                        notes=["gap_db < 0: below an ideal quantiser of a full-scale sine (outliers, clipping)"])]


PANELS = [Panel("quant.sqnr", "quant.error", sqnr_panel, title="SQNR vs theoretical")]
