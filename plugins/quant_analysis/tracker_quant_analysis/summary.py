"""Summaries of a run's ``quant.error`` records.

A tensor analysed more than once in the same configuration (bits,
granularity, mode) counts once, with its latest record.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from tracker import Summarizer, Summary, Table

from .analysis import theoretical_sqnr
from .record import SCHEMA_NAME, ErrorRecord

#: Relative slack on the bound before a tensor is flagged, for float rounding.
FLAG_RTOL = 1e-6

ERROR_COLUMNS = ["tensor", "bits", "granularity", "mode", "sqnr_db", "theoretical_sqnr_db",
                 "gap_db", "max_error", "bound", "over_bound", "outlier_rate", "mse",
                 "num_samples"]
GRANULARITY_COLUMNS = ["tensor", "bits", "mode", "mse_per_tensor", "mse_per_channel",
                       "mse_ratio", "sqnr_per_tensor_db", "sqnr_per_channel_db", "gain_db"]

Key = tuple[str, int, str, str]


def over_bound(rec: ErrorRecord) -> bool:
    """Whether the largest error exceeds the theoretical one (the values were clipped)."""
    return rec.max_error > rec.theoretical_max_error * (1 + FLAG_RTOL)


def latest_errors(records: Iterable[ErrorRecord]) -> tuple[dict[Key, ErrorRecord], int]:
    """The latest record per (tensor, bits, granularity, mode), in order of first appearance.

    :returns: the records kept and how many earlier ones they replaced.
    """
    kept: dict[Key, ErrorRecord] = {}
    total = 0
    for rec in records:
        kept[(rec.tensor, rec.bits, rec.granularity, rec.mode)] = rec
        total += 1
    return kept, total - len(kept)


def _label(rec: ErrorRecord) -> str:
    return f"{rec.tensor} ({rec.bits}-bit {rec.granularity} {rec.mode})"


def _difference(a: float, b: float) -> float:
    """``a - b``, with equal infinities giving 0 rather than NaN."""
    return 0.0 if a == b else a - b


def summarize_errors(table: Table) -> Summary:
    """A row per tensor: SQNR against theory, max error against its bound, outlier rate."""
    kept, replaced = latest_errors(table.rows())
    rows = []
    for rec in kept.values():
        theory = theoretical_sqnr(rec.bits)
        rows.append({
            "tensor": rec.tensor,
            "bits": rec.bits,
            "granularity": rec.granularity,
            "mode": rec.mode,
            "sqnr_db": rec.sqnr_db,
            "theoretical_sqnr_db": theory,
            "gap_db": _difference(theory, rec.sqnr_db),
            "max_error": rec.max_error,
            "bound": rec.theoretical_max_error,
            "over_bound": over_bound(rec),
            "outlier_rate": rec.outlier_rate,
            "mse": rec.mse,
            "num_samples": rec.num_samples,
        })
    notes = []
    noisy = [r for r in kept.values() if r.num_samples > 0 and not math.isinf(r.sqnr_db)]
    if noisy:
        worst = min(noisy, key=lambda r: r.sqnr_db)
        notes.append(f"worst tensor: {_label(worst)}, SQNR {worst.sqnr_db:.2f} dB, "
                     f"{theoretical_sqnr(worst.bits) - worst.sqnr_db:.2f} dB below theory")
    else:
        notes.append("worst tensor: none, every tensor is quantised without noise")
    flagged = [_label(r) for r in kept.values() if over_bound(r)]
    notes.append("max error over its bound (clipped): " + ", ".join(flagged) if flagged
                 else "every max error within its bound (largest scale / 2)")
    notes.append("theoretical SQNR = 6.02 * bits + 1.76 dB (a full-scale sine); "
                 "heavy-tailed tensors fall short of it")
    if replaced:
        notes.append(f"{replaced} earlier record(s) of the same tensor and configuration "
                     "replaced by the latest")
    return Summary("Quantisation error", rows, columns=ERROR_COLUMNS, notes=notes)


def summarize_granularity(table: Table) -> Summary:
    """Per tensor analysed both ways: per-tensor against per-channel MSE and SQNR."""
    kept, _ = latest_errors(table.rows())
    rows = []
    for (tensor, bits, granularity, mode), pt in kept.items():
        pc = kept.get((tensor, bits, "per_channel", mode))
        if granularity != "per_tensor" or pc is None:
            continue
        if pc.mse > 0:
            ratio = pt.mse / pc.mse
        else:
            ratio = math.inf if pt.mse > 0 else 1.0
        rows.append({
            "tensor": tensor,
            "bits": bits,
            "mode": mode,
            "mse_per_tensor": pt.mse,
            "mse_per_channel": pc.mse,
            "mse_ratio": ratio,
            "sqnr_per_tensor_db": pt.sqnr_db,
            "sqnr_per_channel_db": pc.sqnr_db,
            "gain_db": _difference(pc.sqnr_db, pt.sqnr_db),
        })
    if rows:
        better = sum(1 for r in rows if r["mse_per_channel"] < r["mse_per_tensor"])
        best = max(rows, key=lambda r: r["gain_db"])
        notes = [f"per channel lowers the MSE in {better} of {len(rows)} comparisons",
                 f"largest gain: {best['tensor']} ({best['bits']}-bit {best['mode']}), "
                 f"{best['gain_db']:.2f} dB"]
    else:
        notes = ["no tensor was analysed both per tensor and per channel "
                 "with the same bits and mode"]
    return Summary("Per-tensor vs per-channel", rows, columns=GRANULARITY_COLUMNS,
                   notes=notes + ["mse_ratio = per-tensor MSE / per-channel MSE"])


#: The summarizers the plugin offers.
SUMMARIZERS = [
    Summarizer("quant.errors", SCHEMA_NAME, summarize_errors,
               description="per tensor: SQNR against theory, max error against its bound"),
    Summarizer("quant.granularity", SCHEMA_NAME, summarize_granularity,
               description="per-tensor against per-channel error of the same tensor"),
]
