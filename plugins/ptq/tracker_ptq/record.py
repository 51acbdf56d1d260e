"""The ``ptq.layer`` record: one quantised layer, its error and its size."""

import math

import attrs
import numpy as np

from .quantize import SCHEME_PER_TENSOR, QuantizedWeights

SCHEMA_NAME = "ptq.layer"


def _shape(_inst: object, _attr: attrs.Attribute, value: list[int]) -> None:
    if len(value) != 2 or any(v <= 0 for v in value):
        raise ValueError(f"expected two positive ints [out, in], given {value!r}")


def _positive_finite(_inst: object, _attr: attrs.Attribute, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"expected a finite float > 0, given {value!r}")


def _finite(_inst: object, _attr: attrs.Attribute, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"expected a finite float, given {value!r}")


def _non_negative(_inst: object, _attr: attrs.Attribute, value: float) -> None:
    if not value >= 0:  # also refuses NaN
        raise ValueError(f"expected a float >= 0, given {value!r}")


def _positive_int(_inst: object, _attr: attrs.Attribute, value: int) -> None:
    if value <= 0:
        raise ValueError(f"expected an int > 0, given {value!r}")


def _non_empty(_inst: object, _attr: attrs.Attribute, value: str) -> None:
    if not value:
        raise ValueError("expected a non-empty string, given ''")


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
    :ivar bytes_fp32: bytes of weights and bias in float32.
    :ivar bytes_int8: bytes once quantised (int8 weights, float32 scales and bias).
    :ivar scheme: how it was quantised, e.g. ``"symmetric_per_channel_int8"``.
    """

    name: str = attrs.field(validator=_non_empty)
    shape: list[int] = attrs.field(validator=_shape)
    scale: float = attrs.field(validator=_positive_finite)
    w_min: float = attrs.field(validator=_finite)
    w_max: float = attrs.field(validator=_finite)
    max_abs_err: float = attrs.field(validator=_non_negative)
    mse: float = attrs.field(validator=_non_negative)
    bytes_fp32: int = attrs.field(validator=_positive_int)
    bytes_int8: int = attrs.field(validator=_positive_int)
    scheme: str = attrs.field(default=SCHEME_PER_TENSOR, validator=_non_empty)

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
        """``bytes_fp32 / bytes_int8``."""
        return self.bytes_fp32 / self.bytes_int8


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
