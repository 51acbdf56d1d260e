"""Symmetric INT8 quantisation of one layer's weights, per tensor or per output row.

A weight ``w`` is stored as ``q = clip(round(w / scale), -127, 127)`` in an
``int8`` array, and read back as ``q * scale``. Per tensor there is one scale,
``max|w| / 127``; per channel there is one per output row (axis 0). Scales are
floored at :data:`MIN_SCALE` so that an all-zero tensor gets a usable scale,
and kept as float32, as they would be in a deployed model. The bias, if any,
stays in float32: it is tiny next to the weights and quantising it buys
nothing.
"""

from __future__ import annotations

import attrs
import numpy as np

#: Scheme name of one scale for the whole tensor (the ``ptq.layer`` default).
SCHEME_PER_TENSOR = "symmetric_per_tensor_int8"
#: Scheme name of one scale per output row.
SCHEME_PER_CHANNEL = "symmetric_per_channel_int8"
SCHEMES = (SCHEME_PER_TENSOR, SCHEME_PER_CHANNEL)

#: Largest magnitude of a quantised value; -128 is left unused so the range is symmetric.
QMAX = 127
#: Smallest scale used, so that an all-zero tensor still has a valid scale.
MIN_SCALE = 1e-8
_FP32_BYTES = 4
_FP16_MAX = float(np.finfo(np.float16).max)
_FP32_MAX = float(np.finfo(np.float32).max)
_FP32_TINY = float(np.finfo(np.float32).tiny)


@attrs.frozen(eq=False)
class QuantizedWeights:
    """One layer's weights in INT8, with their scale(s) and float32 bias.

    :ivar name: the layer's name.
    :ivar q: the quantised weights, an ``int8`` array of the weights' shape.
    :ivar scales: float32 scales, shape ``(1,)`` per tensor or ``(rows,)`` per channel.
    :ivar bias: the bias as float32, or ``None``.
    :ivar scheme: :data:`SCHEME_PER_TENSOR` or :data:`SCHEME_PER_CHANNEL`.
    """

    name: str
    q: np.ndarray
    scales: np.ndarray
    bias: np.ndarray | None = None
    scheme: str = SCHEME_PER_TENSOR

    def __attrs_post_init__(self) -> None:
        if self.q.dtype != np.int8:
            raise ValueError(f"q: expected an int8 array, given {self.q.dtype}")
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme: expected one of {SCHEMES}, given {self.scheme!r}")
        rows = 1 if self.scheme == SCHEME_PER_TENSOR else _rows(self.q.shape)
        if self.scales.dtype != np.float32 or self.scales.shape != (rows,):
            raise ValueError(f"scales: expected float32 of shape ({rows},), "
                             f"given {self.scales.dtype} of shape {self.scales.shape}")
        if not (np.all(np.isfinite(self.scales)) and np.all(self.scales > 0)):
            raise ValueError("scales: expected finite values > 0, "
                             f"given min {float(np.min(self.scales))}")
        if self.bias is not None and self.bias.dtype != np.float32:
            raise ValueError(f"bias: expected a float32 array, given {self.bias.dtype}")

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the weights."""
        return tuple(self.q.shape)

    @property
    def per_channel(self) -> bool:
        """Whether there is one scale per output row."""
        return self.scheme == SCHEME_PER_CHANNEL

    @property
    def scale(self) -> float:
        """The scale per tensor; per channel, the largest row scale (it bounds the error)."""
        return float(np.max(self.scales))

    def dequantize(self, dtype: type = np.float32) -> np.ndarray:
        """The weights read back as ``q * scale``.

        :param dtype: the float type of the result; float64 shows the error of
            the quantisation alone, float32 what a float32 model computes with.
        """
        q = self.q.astype(dtype)
        if self.per_channel:
            scales = self.scales.astype(dtype).reshape((-1,) + (1,) * (q.ndim - 1))
            return q * scales
        return q * self.scales.astype(dtype)[0]

    @property
    def size_bytes(self) -> int:
        """Bytes of the int8 weights: one per weight.

        Scales and bias are metadata, as in the original: they are counted
        apart, in :attr:`overhead_bytes`.
        """
        return int(self.q.size)

    @property
    def original_size_bytes(self) -> int:
        """Bytes of the same weights in float32: four per weight."""
        return int(_FP32_BYTES * self.q.size)

    @property
    def compression_ratio(self) -> float:
        """``original_size_bytes / size_bytes``: exactly 4.0 for any int8 tensor (NaN when empty)."""
        return self.original_size_bytes / self.size_bytes if self.size_bytes else float("nan")

    @property
    def overhead_bytes(self) -> int:
        """Bytes kept next to the weights in float32: four per scale and bias entry."""
        bias = 0 if self.bias is None else self.bias.size
        return int(_FP32_BYTES * (self.scales.size + bias))


def quantize(name: str, weights: np.ndarray, bias: np.ndarray | None = None,
             scale: float | np.ndarray | None = None, *,
             per_channel: bool = False) -> QuantizedWeights:
    """Quantise one layer's weights to symmetric INT8.

    :param name: the layer's name.
    :param weights: a float array of any shape; per channel it needs at least
        two dimensions, rows (axis 0) being the output channels.
    :param bias: an optional float array, kept as float32.
    :param scale: a fixed scale instead of ``max|w| / 127`` (per channel, one
        per row or one for all rows); values beyond ``127 * scale`` are clipped.
    :param per_channel: one scale per output row instead of one per tensor.
    :raises ValueError: for non-finite weights, a scale that is not a
        positive finite number, or per-channel weights with fewer than 2 dimensions.
    """
    w = _as_float_array(weights, "weights")
    if per_channel and w.ndim < 2:
        raise ValueError("per-channel quantisation needs weights with at least 2 dimensions "
                         f"(one scale per output row), given shape {w.shape}")
    rows = _rows(w.shape) if per_channel else 1
    if rows == 0:
        raise ValueError(f"weights: expected at least one output row, given shape {w.shape}")
    if scale is None:
        flat = np.abs(w).reshape(rows, -1)
        peak = flat.max(axis=1) if flat.shape[1] else np.zeros(rows)
        scales = np.maximum(peak / QMAX, MIN_SCALE)
    else:
        given = np.asarray(scale, dtype=np.float64).reshape(-1)
        if given.size not in (1, rows):
            raise ValueError(f"scale: expected 1 or {rows} values, given {given.size}")
        scales = np.broadcast_to(given, (rows,))
        if not (np.all(np.isfinite(scales)) and np.all(scales > 0)):
            raise ValueError(f"scale: expected positive finite values, given {scale!r}")
    if np.any(scales > _FP32_MAX) or np.any(scales < _FP32_TINY):
        raise ValueError("scale: does not fit float32 (weights too large or scale too small), "
                         f"given {scale if scale is not None else float(np.max(np.abs(w)))!r}")
    scales32 = scales.astype(np.float32)
    if per_channel:
        s = scales32.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1))
    else:
        s = float(scales32[0])
    q = np.clip(np.rint(w / s), -QMAX, QMAX).astype(np.int8)
    b = None
    if bias is not None:
        b64 = _as_float_array(bias, "bias")
        if b64.size and float(np.max(np.abs(b64))) > _FP32_MAX:
            raise ValueError("bias: expected values within the float32 range, "
                             f"given {float(np.max(np.abs(b64))):g}")
        b = b64.astype(np.float32)
    return QuantizedWeights(name=name, q=q, scales=scales32, bias=b,
                            scheme=SCHEME_PER_CHANNEL if per_channel else SCHEME_PER_TENSOR)


def to_fp16(values: np.ndarray) -> np.ndarray:
    """Convert to float16, refusing values beyond its range instead of turning them to Inf.

    :raises ValueError: when a finite value's magnitude exceeds 65504.
    """
    v = np.asarray(values)
    finite = v[np.isfinite(v)]
    if finite.size and float(np.max(np.abs(finite))) > _FP16_MAX:
        raise ValueError(f"values: expected magnitudes up to {_FP16_MAX:g} (float16 range), "
                         f"given {float(np.max(np.abs(finite))):g}")
    return v.astype(np.float16)


def from_fp16(values: np.ndarray) -> np.ndarray:
    """Convert float16 values back to float32 (exact: every float16 is a float32)."""
    v = np.asarray(values)
    if v.dtype != np.float16:
        raise ValueError(f"values: expected a float16 array, given {v.dtype}")
    return v.astype(np.float32)


def _rows(shape: tuple[int, ...]) -> int:
    return int(shape[0]) if len(shape) else 1


def _as_float_array(values: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"{what}: expected a numeric array, given dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: expected finite values, given NaN or Inf")
    return arr
