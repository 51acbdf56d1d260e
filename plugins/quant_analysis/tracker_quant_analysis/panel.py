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
    # One colour per tensor (and mode), well apart from each other; per channel a solid line, per tensor
    # dashed: nine series no longer share two near-identical colours.
    hues: dict[tuple[str, str], str] = {}
    series = []
    for (tensor, gran, mode), by_bits in groups.items():
        bits = sorted(by_bits)
        name = f"{tensor} · {gran}" + (f" · {mode}" if len(modes) > 1 else "")
        color = hues.setdefault((tensor, mode), SERIES_COLORS[len(hues) % len(SERIES_COLORS)])
        kind = "points" if len(bits) == 1 else ("dashed" if gran == "per_tensor" else "line")
        series.append(Series(name, [by_bits[b] for b in bits], x=bits, kind=kind, color=color))
    all_bits = sorted({b for g in groups.values() for b in g})
    lo, hi = (all_bits[0], all_bits[-1]) if all_bits else (2, 16)
    ideal = list(range(lo, hi + 1))
    series.append(Series("theoretical 6.02·b + 1.76 dB", [theoretical_sqnr(b) for b in ideal], x=ideal,
                         kind="dashed", color="#9ca3af"))
    # gap_db as the summary (quant.errors) has it: theory minus measured, how far below theory.
    rows = [{"tensor": t, "granularity": g, "mode": m, "bits": b, "sqnr_db": s,
             "theoretical_db": round(theoretical_sqnr(b), 2), "gap_db": gap_db(b, s)}
            for (t, g, m), by_bits in groups.items() for b, s in sorted(by_bits.items())]
    # Both wide: side by side, the chart sat above a large empty area the long table left under it.
    return [LineChart("SQNR vs bits, measured and theoretical", series, x_label="bits", y_label="SQNR (dB)",
                      wide=True),
            TableFigure("SQNR per tensor, granularity and bits", rows, wide=True,
                        notes=["gap_db = theoretical - measured, as in the quant.errors summary: "
                               "above 0, below an ideal quantiser of a full-scale sine (outliers, clipping)"])]


#: Well-separated colours (Tableau 10 without its grey, which the theory line uses).
SERIES_COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
                 "#9c755f")


def gap_db(bits: int, sqnr_db: float) -> float:
    """Theoretical SQNR minus the measured one (0 for equal infinities), as the summary computes it."""
    theory = theoretical_sqnr(bits)
    return 0.0 if theory == sqnr_db else theory - sqnr_db


PANELS = [Panel("quant.sqnr", "quant.error", sqnr_panel, title="SQNR vs theoretical")]
