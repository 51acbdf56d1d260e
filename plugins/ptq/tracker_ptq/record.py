"""The ``ptq.layer`` record: one quantised layer, its error and its size."""

from typing import Any

import attrs
import numpy as np
from tracker import Schema
from tracker import validators as v

from .quantize import SCHEME_PER_TENSOR, QuantizedWeights

SCHEMA_NAME = "ptq.layer"


def _error() -> Any:
    """A field holding an error: a number >= 0, never NaN."""
    return attrs.field(validator=v.non_negative)


def _size() -> Any:
    """A field holding a size in bytes: an int > 0."""
    return attrs.field(validator=v.positive)


@attrs.frozen(kw_only=True)
class LayerRecord:
    """One layer after post-training quantisation (schema ``ptq.layer``).

    :ivar name: the layer's name.
    :ivar shape: ``[out, in]``; weights of more dimensions count as ``[out, rest]``.
    :ivar scale: the quantisation scale (per channel: the largest row scale).
    :ivar w_min: smallest original weight.
    :ivar w_max: largest original weight.
    :ivar max_abs_err: largest ``|dequantised - original|`` of a weight.
    :ivar mse: mean squared error of the weights.
    :ivar bytes_fp32: bytes of the weights in float32 (four per weight).
    :ivar bytes_int8: bytes of the int8 weights (one per weight); scales and bias
        are metadata, so ``bytes_fp32 / bytes_int8`` is 4 for any layer.
    :ivar scheme: how it was quantised, e.g. ``"symmetric_per_channel_int8"``.
    """

    name: str = attrs.field(validator=v.non_empty)
    shape: list[int] = attrs.field(validator=[v.length(2), v.each(v.positive)])
    scale: float = attrs.field(validator=[v.finite, v.positive])
    w_min: float = attrs.field(validator=v.finite)
    w_max: float = attrs.field(validator=v.finite)
    max_abs_err: float = _error()
    mse: float = _error()
    bytes_fp32: int = _size()
    bytes_int8: int = _size()
    scheme: str = attrs.field(default=SCHEME_PER_TENSOR, validator=v.non_empty)

    def __attrs_post_init__(self) -> None:
        if self.w_min > self.w_max:
            raise ValueError(f"w_min: expected at most w_max ({self.w_max!r}), "
                             f"given {self.w_min!r}")

    @property
    def error_bound(self) -> float:
        """``scale / 2``: the largest error rounding alone can make."""
        return self.scale / 2

    @property
    def compression_ratio(self) -> float:
        """``bytes_fp32 / bytes_int8`` (4.0 for records made by :func:`layer_record`)."""
        return self.bytes_fp32 / self.bytes_int8


#: The plugin's one schema.
SCHEMAS = [Schema(SCHEMA_NAME, LayerRecord, version=1,
                  description="one layer after post-training INT8 quantisation: scale, error, bytes")]


def layer_record(qw: QuantizedWeights, original: np.ndarray) -> LayerRecord:
    """A ``ptq.layer`` record of ``qw``, its error measured against the original weights.

    The error is measured in float64, so it is the quantisation's alone.

    :param qw: the quantised layer.
    :param original: the weights ``qw`` was made from.
    :raises ValueError: when the shapes differ or the weights are empty.
    """
    w = np.asarray(original, dtype=np.float64)
    if w.shape != qw.shape:
        raise ValueError(f"original: expected shape {qw.shape}, given {w.shape}")
    if w.size == 0:
        raise ValueError(f"original: expected at least one weight, given shape {w.shape}")
    err = np.abs(qw.dequantize(np.float64) - w)
    return LayerRecord(
        name=qw.name,
        shape=_two_dims(w.shape),
        scale=qw.scale,
        w_min=float(w.min()),
        w_max=float(w.max()),
        max_abs_err=float(err.max()),
        mse=float(np.mean(err * err)),
        bytes_fp32=qw.original_size_bytes,
        bytes_int8=qw.size_bytes,
        scheme=qw.scheme,
    )


def _two_dims(shape: tuple[int, ...]) -> list[int]:
    if len(shape) == 0:
        return [1, 1]
    if len(shape) == 1:
        return [1, int(shape[0])]
    return [int(shape[0]), int(np.prod(shape[1:]))]
