"""Built-in ``image``, ``histogram``, ``text``, ``audio``, ``video``, ``object3d`` and ``html`` schemas, summarized.

``image`` records name a PNG blob in the store; ``histogram`` records hold
the edges and counts of the finite values, with NaN and infinities counted
apart; ``text`` records hold a string logged beside the metrics (``run.log({"phase": "warmup"})``).
``audio``, ``video``, ``object3d`` and ``html`` records name the blob of a
clip, a video, a 3D scene or an HTML page (``tracker.Audio``, ``tracker.Video``,
``tracker.Object3D``, ``tracker.Html``) with what a player needs to know of it;
the stored formats are described in :mod:`tracker.capture.audio`,
:mod:`tracker.capture.video`, :mod:`tracker.capture.object3d` and :mod:`tracker.capture.html`.
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


#: The formats each media schema stores (the blob's bytes are checked to be one of them when logged).
AUDIO_FORMATS = ("wav", "mp3", "ogg", "flac")
VIDEO_FORMATS = ("mp4", "webm", "gif")
OBJECT3D_FORMATS = ("points", "obj", "glb", "gltf", "ply", "stl")
_positive_number = attrs.validators.gt(0)


@attrs.frozen(kw_only=True)
class AudioRecord:
    """An audio clip stored as a blob: WAV (encoded from an array) or an mp3/ogg/flac/wav file as it was."""

    name: str
    sha256: str = attrs.field(validator=_sha256)
    format: str = attrs.field(validator=attrs.validators.in_(AUDIO_FORMATS))
    sample_rate: int = attrs.field(validator=_positive)
    channels: int = attrs.field(validator=_positive)
    duration_s: float = attrs.field(validator=_nonneg)
    caption: str = ""


@attrs.frozen(kw_only=True)
class VideoRecord:
    """A video stored as a blob: mp4 (H.264), webm (VP9) or gif; size in pixels of the stored frames."""

    name: str
    sha256: str = attrs.field(validator=_sha256)
    format: str = attrs.field(validator=attrs.validators.in_(VIDEO_FORMATS))
    fps: float = attrs.field(validator=_positive_number)
    frames: int = attrs.field(validator=_positive)
    width: int = attrs.field(validator=_positive)
    height: int = attrs.field(validator=_positive)
    duration_s: float = attrs.field(validator=_nonneg)
    caption: str = ""


@attrs.frozen(kw_only=True)
class Object3DRecord:
    """A 3D scene stored as a blob: a point cloud (``points``: the tracker's binary layout) or a mesh file.

    ``points`` counts the points (the vertices of a mesh); ``boxes`` the 3D boxes drawn with a point cloud.
    """

    name: str
    sha256: str = attrs.field(validator=_sha256)
    format: str = attrs.field(validator=attrs.validators.in_(OBJECT3D_FORMATS))
    points: int = attrs.field(validator=_nonneg)
    has_colors: bool = False
    boxes: int = attrs.field(default=0, validator=_nonneg)
    caption: str = ""


@attrs.frozen(kw_only=True)
class HtmlRecord:
    """An HTML page stored as a UTF-8 blob of ``size`` bytes (shown sandboxed, never in the dashboard's origin)."""

    name: str
    sha256: str = attrs.field(validator=_sha256)
    size: int = attrs.field(validator=_nonneg)
    caption: str = ""


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("image", ImageRecord, description="an image stored as a PNG blob"),
            Schema("histogram", HistogramRecord, description="edges and counts of a tensor's values"),
            Schema("text", TextRecord, description="a string logged with run.log beside the metrics"),
            Schema("audio", AudioRecord, description="an audio clip stored as a blob (wav, mp3, ogg, flac)"),
            Schema("video", VideoRecord, description="a video stored as a blob (mp4, webm, gif)"),
            Schema("object3d", Object3DRecord, description="a point cloud or 3D mesh stored as a blob"),
            Schema("html", HtmlRecord, description="an HTML page stored as a blob")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("image.names", "image", summarize_images, "per image name: count, steps, last size"),
            Summarizer("histogram.names", "histogram", summarize_histograms,
                       "per histogram name: count, steps, range, NaN and inf totals"),
            Summarizer("text.names", "text", summarize_texts, "per text name: count, steps, last value"),
            Summarizer("audio.names", "audio", summarize_audio,
                       "per audio name: clips, steps, total duration, formats"),
            Summarizer("video.names", "video", summarize_videos,
                       "per video name: videos, steps, total duration, formats, last size"),
            Summarizer("object3d.names", "object3d", summarize_objects3d,
                       "per 3D name: scenes, steps, formats, most points, boxes"),
            Summarizer("html.names", "html", summarize_html, "per HTML name: pages, steps, total size")]


def _formats(table: Table, idx: list[int]) -> str:
    return ", ".join(sorted({table["format"][i] for i in idx}))


def _steps(table: Table, idx: list[int]) -> dict[str, int]:
    steps = table["step"]
    return {"first_step": int(steps[idx[0]]), "last_step": int(steps[idx[-1]])}


def summarize_audio(table: Table) -> Summary:
    """Per audio name: clips logged, first and last step, total duration in seconds, formats, sample rates."""
    rows = []
    for name, idx in _by_name(table).items():
        rows.append({"name": name, "clips": len(idx), **_steps(table, idx),
                     "duration_s": round(sum(float(table["duration_s"][i]) for i in idx), 3),
                     "formats": _formats(table, idx),
                     "sample_rates": ", ".join(str(r) for r in sorted({int(table["sample_rate"][i]) for i in idx}))})
    return Summary("Audio", rows)


def summarize_videos(table: Table) -> Summary:
    """Per video name: videos logged, first and last step, total duration in seconds, formats, the last one's size."""
    rows = []
    for name, idx in _by_name(table).items():
        last = idx[-1]
        rows.append({"name": name, "videos": len(idx), **_steps(table, idx),
                     "duration_s": round(sum(float(table["duration_s"][i]) for i in idx), 3),
                     "frames": int(sum(int(table["frames"][i]) for i in idx)), "formats": _formats(table, idx),
                     "last_size": f"{int(table['width'][last])}x{int(table['height'][last])}"})
    return Summary("Videos", rows)


def summarize_objects3d(table: Table) -> Summary:
    """Per 3D name: scenes logged, first and last step, formats, the most points of one, total boxes."""
    rows = []
    for name, idx in _by_name(table).items():
        rows.append({"name": name, "scenes": len(idx), **_steps(table, idx), "formats": _formats(table, idx),
                     "max_points": int(max(int(table["points"][i]) for i in idx)),
                     "boxes": int(sum(int(table["boxes"][i]) for i in idx))})
    return Summary("3D objects", rows)


def summarize_html(table: Table) -> Summary:
    """Per HTML name: pages logged, first and last step, total size in bytes."""
    rows = []
    for name, idx in _by_name(table).items():
        rows.append({"name": name, "pages": len(idx), **_steps(table, idx),
                     "bytes": int(sum(int(table["size"][i]) for i in idx))})
    return Summary("HTML", rows)


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
