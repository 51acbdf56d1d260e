"""Summaries of a run's ``ptq.layer`` records: per layer, and totals per scheme.

A layer logged more than once under the same scheme counts once, with its
latest record: re-quantising a layer replaces it, it does not add bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

from tracker import Summarizer, Summary, Table

from .record import SCHEMA_NAME, LayerRecord

#: Relative slack on ``scale / 2`` before a layer is flagged, so that float
#: rounding of an error that sits exactly on the bound does not raise a flag.
FLAG_RTOL = 1e-6

LAYER_COLUMNS = ["layer", "scheme", "shape", "scale", "max_abs_err", "bound", "over_bound",
                 "mse", "bytes_fp32", "bytes_int8", "ratio"]
TOTAL_COLUMNS = ["scheme", "layers", "bytes_fp32", "bytes_int8", "compression_ratio",
                 "worst_layer", "worst_max_abs_err", "over_bound"]


def over_bound(rec: LayerRecord) -> bool:
    """Whether a layer's largest error exceeds ``scale / 2`` (clipping or a bad scale)."""
    return rec.max_abs_err > rec.scale / 2 * (1 + FLAG_RTOL)


def latest_layers(records: Iterable[LayerRecord]) -> tuple[list[LayerRecord], int]:
    """The latest record of each ``(name, scheme)``, in order of first appearance.

    :returns: the records kept and how many earlier ones they replaced.
    """
    kept: dict[tuple[str, str], LayerRecord] = {}
    total = 0
    for rec in records:
        kept[(rec.name, rec.scheme)] = rec
        total += 1
    return list(kept.values()), total - len(kept)


def summarize_layers(table: Table) -> Summary:
    """One row per layer: shape, scale, error against ``scale / 2``, bytes; totals in notes."""
    layers, replaced = latest_layers(table.rows())
    rows = [{
        "layer": r.name,
        "scheme": r.scheme,
        "shape": "x".join(str(d) for d in r.shape),
        "scale": r.scale,
        "max_abs_err": r.max_abs_err,
        "bound": r.scale / 2,
        "over_bound": over_bound(r),
        "mse": r.mse,
        "bytes_fp32": r.bytes_fp32,
        "bytes_int8": r.bytes_int8,
        "ratio": r.bytes_fp32 / r.bytes_int8,
    } for r in layers]
    notes = []
    for total in _totals(layers):
        layers_text = f"{total['layers']} layer" + ("s" if total["layers"] != 1 else "")
        notes.append(f"total {total['scheme']}: {layers_text}, "
                     f"{total['bytes_fp32']} fp32 bytes -> {total['bytes_int8']} int8 bytes, "
                     f"compression {total['compression_ratio']:.3f}x")
    if layers:
        worst = max(layers, key=lambda r: r.max_abs_err)
        notes.append(f"largest error: {worst.name} ({worst.scheme}), max_abs_err "
                     f"{worst.max_abs_err:.6g} (scale/2 = {worst.scale / 2:.6g})")
    flagged = [r for r in layers if over_bound(r)]
    if flagged:
        notes.append("over scale/2 (clipped or mis-scaled): "
                     + ", ".join(f"{r.name} ({r.scheme})" for r in flagged))
    else:
        notes.append("every layer within scale/2")
    if replaced:
        notes.append(f"{replaced} earlier record(s) of re-logged layers replaced by the latest")
    return Summary("PTQ layers", rows, columns=LAYER_COLUMNS, notes=notes)


def summarize_totals(table: Table) -> Summary:
    """One row per scheme: layers, total bytes, overall compression, worst and flagged layers."""
    layers, _ = latest_layers(table.rows())
    return Summary("PTQ totals", _totals(layers), columns=TOTAL_COLUMNS,
                   notes=["compression_ratio = total fp32 weight bytes / total int8 weight bytes; "
                          "scales and biases are metadata, not counted"])


def _totals(layers: list[LayerRecord]) -> list[dict]:
    by_scheme: dict[str, list[LayerRecord]] = {}
    for rec in layers:
        by_scheme.setdefault(rec.scheme, []).append(rec)
    out = []
    for scheme, recs in by_scheme.items():
        fp32 = sum(r.bytes_fp32 for r in recs)
        int8 = sum(r.bytes_int8 for r in recs)
        worst = max(recs, key=lambda r: r.max_abs_err)
        out.append({
            "scheme": scheme,
            "layers": len(recs),
            "bytes_fp32": fp32,
            "bytes_int8": int8,
            "compression_ratio": fp32 / int8,
            "worst_layer": worst.name,
            "worst_max_abs_err": worst.max_abs_err,
            # "none" rather than an empty cell, which reads as a value missing (issue 35)
            "over_bound": ", ".join(r.name for r in recs if over_bound(r)) or "none",
        })
    return out


#: The summarizers the plugin offers.
SUMMARIZERS = [
    Summarizer("ptq.layers", SCHEMA_NAME, summarize_layers,
               description="per layer: shape, scale, max error against scale/2, bytes"),
    Summarizer("ptq.totals", SCHEMA_NAME, summarize_totals,
               description="per scheme: total bytes, compression ratio, worst and flagged layers"),
]
