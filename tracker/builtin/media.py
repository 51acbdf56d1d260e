"""Built-in ``image``, ``histogram`` and ``text`` schemas and their summaries.

``image`` records name a PNG blob in the store; ``histogram`` records hold
the edges and counts of the finite values, with NaN and infinities counted
apart; ``text`` records hold a string logged beside the metrics (``run.log({"phase": "warmup"})``).
"""

from __future__ import annotations

import attrs

from tracker import Schema, Summarizer, Summary, Table, hookimpl

_positive = attrs.validators.ge(1)
_nonneg = attrs.validators.ge(0)


def _sha256(_inst: object, attribute: attrs.Attribute, value: str) -> None:
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ValueError(f"{attribute.name} must be 64 lowercase hex digits")


@attrs.frozen(kw_only=True)
class ImageRecord:
    """An image stored as a PNG blob: its name, hash, size in pixels, Pillow mode and caption."""

    name: str
    sha256: str = attrs.field(validator=_sha256)
    width: int = attrs.field(validator=_positive)
    height: int = attrs.field(validator=_positive)
    mode: str
    caption: str = ""


def _edges_match(inst: HistogramRecord, _attribute: attrs.Attribute, counts: list[int]) -> None:
    if len(inst.edges) != len(counts) + 1:
        raise ValueError(f"counts must have one entry fewer than edges ({len(inst.edges)}), given {len(counts)}")
    if any(c < 0 for c in counts):
        raise ValueError("counts must be >= 0")


@attrs.frozen(kw_only=True)
class HistogramRecord:
    """A histogram of the finite values; ``count``, ``min`` and ``max`` are over the finite values."""

    name: str
    edges: list[float]
    counts: list[int] = attrs.field(validator=_edges_match)
    count: int = attrs.field(validator=_nonneg)
    nan_count: int = attrs.field(default=0, validator=_nonneg)
    inf_count: int = attrs.field(default=0, validator=_nonneg)
    min: float | None = None
    max: float | None = None


@attrs.frozen(kw_only=True)
class TextRecord:
    """A string logged with ``run.log`` beside the metrics: its key and its value, at the log call's step."""

    name: str
    value: str


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("image", ImageRecord, description="an image stored as a PNG blob"),
            Schema("histogram", HistogramRecord, description="edges and counts of a tensor's values"),
            Schema("text", TextRecord, description="a string logged with run.log beside the metrics")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("image.names", "image", summarize_images, "per image name: count, steps, last size"),
            Summarizer("histogram.names", "histogram", summarize_histograms,
                       "per histogram name: count, steps, range, NaN and inf totals"),
            Summarizer("text.names", "text", summarize_texts, "per text name: count, steps, last value")]


def summarize_texts(table: Table) -> Summary:
    """Per text name: values logged, first and last step, the last value."""
    steps = table["step"]
    rows = []
    for name, idx in _by_name(table).items():
        rows.append({"name": name, "values": len(idx), "first_step": int(steps[idx[0]]),
                     "last_step": int(steps[idx[-1]]), "last": table["value"][idx[-1]]})
    return Summary("Text values", rows)


def _by_name(table: Table) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, name in enumerate(table["name"]):
        out.setdefault(name, []).append(i)
    return out


def summarize_images(table: Table) -> Summary:
    """Per image name: images logged, first and last step, the last one's size and mode."""
    steps = table["step"]
    rows = []
    for name, idx in _by_name(table).items():
        last = idx[-1]
        rows.append({"name": name, "images": len(idx), "first_step": int(steps[idx[0]]),
                     "last_step": int(steps[last]),
                     "last_size": f"{int(table['width'][last])}x{int(table['height'][last])}",
                     "mode": table["mode"][last]})
    return Summary("Images", rows)


def summarize_histograms(table: Table) -> Summary:
    """Per histogram name: histograms logged, steps, overall min and max, NaN and inf totals."""
    steps = table["step"]
    rows = []
    for name, idx in _by_name(table).items():
        mins = [table["min"][i] for i in idx if table["min"][i] is not None]
        maxs = [table["max"][i] for i in idx if table["max"][i] is not None]
        rows.append({"name": name, "histograms": len(idx), "first_step": int(steps[idx[0]]),
                     "last_step": int(steps[idx[-1]]), "min": min(mins) if mins else None,
                     "max": max(maxs) if maxs else None,
                     "values": int(sum(int(table["count"][i]) for i in idx)),
                     "nan": int(sum(int(table["nan_count"][i]) for i in idx)),
                     "inf": int(sum(int(table["inf_count"][i]) for i in idx))})
    return Summary("Histograms", rows)


@hookimpl
def tracker_panels() -> list:
    from tracker import Panel

    return [Panel("histogram.heatmaps", "histogram", histogram_heatmaps, title="Histograms over steps")]


#: Rows of a histogram heatmap: every histogram of a name is re-binned onto these many common bins.
HEATMAP_BINS = 48


def histogram_heatmaps(table: Table, run: object) -> list:
    """One heatmap per histogram name: x = step, y = value bins, colour = count.

    Histograms of one name may have different edges (each spans its own
    values); their counts are spread onto common bins over the union of
    their ranges, each old bin's count going to the new bins it overlaps in
    proportion to the overlap.
    """
    import numpy as np

    from tracker import Heatmap

    figures = []
    steps = table["step"]
    for name, idx in _by_name(table).items():
        edges = [np.asarray(table["edges"][i], dtype=np.float64) for i in idx]
        lo = min(float(e[0]) for e in edges)
        hi = max(float(e[-1]) for e in edges)
        if not hi > lo:
            hi = lo + 1.0
        # Weighted ends, not lo + k * (hi - lo) / n: the span of [-1e308, 1e308] overflows to inf.
        t = np.linspace(0.0, 1.0, HEATMAP_BINS + 1)
        common = lo * (1.0 - t) + hi * t
        common[0], common[-1] = lo, hi
        z = np.zeros((HEATMAP_BINS, len(idx)))
        for col, (i, e) in enumerate(zip(idx, edges, strict=True)):
            counts = np.asarray(table["counts"][i], dtype=np.float64)
            z[:, col] = _rebin(e, counts, common)
        centers = common[:-1] / 2 + common[1:] / 2
        figures.append(Heatmap(f"{name}", z, x=[int(steps[i]) for i in idx],
                               y=[float(f"{c:.4g}") for c in centers], x_label="step", y_label="value",
                               origin="lower", value_label="count", wide=True))
    return figures


def _rebin(edges, counts, common):  # noqa: ANN001, ANN202 - numpy arrays
    """Counts on ``edges`` spread onto ``common`` edges by overlap (a count stays a count)."""
    import numpy as np

    # Cumulative count at every edge, interpolated linearly inside bins, read at the common edges.
    cum = np.concatenate([[0.0], np.cumsum(counts)])
    at = np.interp(common, edges, cum, left=0.0, right=cum[-1])
    return np.diff(at)
