"""What a TensorBoard event holds, as the tracker's values: scalars, ``histogram`` records, images, audio, hparams.

Shared by the TensorBoard importer and by ``init(sync_tensorboard=True)``.
Works on the ``Event`` protobuf that TensorBoard, ``torch.utils.tensorboard``
and tensorboardX write alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: What a value that is none of the above is counted as, by its oneof field.
_KINDS = {"histo": "histograms", "image": "images", "audio": "audio clips", "tensor": "tensors"}


def summary_values(event: Any, plugins: dict[str, str]) -> Iterator[tuple[str, str, Any]]:
    """``(kind, tag, payload)`` for each value of a summary event.

    ``kind`` is ``"scalar"`` (a float), ``"histogram"`` (the record's fields
    but ``name``), ``"image"`` (the encoded image bytes), ``"audio"`` (the encoded
    clip's bytes: WAV as torch's and TensorFlow's writers encode it), ``"hparams"`` (handled
    by :func:`hparams`: payload ``None``) or ``"skipped"`` (payload: what it is,
    e.g. ``"text"``).

    :param plugins: tag -> plugin name, filled as the events pass (TensorBoard
        writes a tag's metadata with its first value only).
    """
    if event.WhichOneof("what") != "summary":
        return
    for value in event.summary.value:
        kind = value.WhichOneof("value")
        plugin = value.metadata.plugin_data.plugin_name
        if plugin:
            plugins[value.tag] = plugin
        else:
            plugin = plugins.get(value.tag, "")
        if kind == "simple_value":
            yield "scalar", value.tag, float(value.simple_value)
        elif kind == "histo":
            yield "histogram", value.tag, histo_record(value.histo)
        elif kind == "image":
            yield "image", value.tag, bytes(value.image.encoded_image_string)
        elif kind == "audio":
            yield "audio", value.tag, bytes(value.audio.encoded_audio_string)
        elif plugin == "hparams":
            yield "hparams", value.tag, None
        elif kind == "tensor" and plugin in ("scalars", "histograms", "images", "audio"):
            yield from _tensor_value(value, plugin)
        else:
            yield "skipped", value.tag, plugin or _KINDS.get(kind or "", kind or "empty values")


def _tensor_value(value: Any, plugin: str) -> Iterator[tuple[str, str, Any]]:
    """A new-style (tensor) summary of the scalars, histograms or images plugin."""
    from tensorboard.util import tensor_util

    array = tensor_util.make_ndarray(value.tensor)
    if plugin == "scalars" and array.size == 1:
        yield "scalar", value.tag, float(array.reshape(-1)[0])
    elif plugin == "histograms" and array.ndim == 2 and array.shape[1] == 3:
        yield "histogram", value.tag, _buckets_record(array)
    elif plugin == "images" and array.size >= 3:
        # [width, height, png bytes...]: one image per encoded item after the two sizes.
        for item in array.reshape(-1)[2:]:
            yield "image", value.tag, bytes(item)
    elif plugin == "audio" and array.ndim == 2 and array.shape[1] == 2:
        # One row per clip: [encoded audio, label].
        for row in array:
            yield "audio", value.tag, bytes(row[0])
    else:
        yield "skipped", value.tag, f"{plugin} tensors"


def histo_record(histo: Any) -> dict[str, Any]:
    """A ``HistogramProto`` (upper bucket limits and counts) as the ``histogram`` record's fields.

    The first bucket's lower edge is the histogram's ``min``; a last limit
    beyond ``max`` (TensorBoard writes DBL_MAX there) is cut to ``max``.
    """
    limits = [float(x) for x in histo.bucket_limit]
    counts = [max(0, round(float(c))) for c in histo.bucket]
    lo, hi = float(histo.min), float(histo.max)
    if not limits:
        return _empty()
    edges = [min(lo, limits[0])] + limits
    if edges[0] == edges[1]:
        edges[0] = edges[1] - max(abs(edges[1]) * 1e-9, 1e-12)
    if edges[-1] > hi >= edges[-2]:
        edges[-1] = hi if hi > edges[-2] else edges[-2] + max(abs(edges[-2]) * 1e-9, 1e-12)
    count = sum(counts)
    return {"edges": edges, "counts": counts, "count": count, "nan_count": 0, "inf_count": 0,
            "min": lo if count else None, "max": hi if count else None}


def _buckets_record(array: Any) -> dict[str, Any]:
    """A new-style histogram tensor (rows of left edge, right edge, count)."""
    if not len(array):
        return _empty()
    edges = [float(array[0][0])] + [float(r[1]) for r in array]
    counts = [max(0, round(float(r[2]))) for r in array]
    count = sum(counts)
    return {"edges": edges, "counts": counts, "count": count, "nan_count": 0, "inf_count": 0,
            "min": edges[0] if count else None, "max": edges[-1] if count else None}


def _empty() -> dict[str, Any]:
    return {"edges": [0.0, 1.0], "counts": [0], "count": 0, "nan_count": 0, "inf_count": 0, "min": None, "max": None}


def hparams(event: Any) -> dict[str, Any]:
    """The hparams of a session-start summary in ``event``, as config values."""
    if event.WhichOneof("what") != "summary":
        return {}
    from tensorboard.plugins.hparams import plugin_data_pb2

    out: dict[str, Any] = {}
    for value in event.summary.value:
        if value.metadata.plugin_data.plugin_name != "hparams":
            continue
        data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
        if data.WhichOneof("data") != "session_start_info":
            continue
        for key, v in data.session_start_info.hparams.items():
            which = v.WhichOneof("kind")
            if which == "number_value":
                x = v.number_value
                out[key] = int(x) if x.is_integer() and abs(x) <= 2**53 else x
            elif which == "string_value":
                out[key] = v.string_value
            elif which == "bool_value":
                out[key] = v.bool_value
            else:
                out[key] = None
    return out


def decode_image(data: bytes) -> Any:
    """Encoded image bytes (PNG, JPEG) as a PIL image, loaded (needs Pillow)."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return im.copy()
