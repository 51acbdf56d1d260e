"""Quantising and dequantising values with given :class:`QuantParams`."""

from __future__ import annotations

import numpy as np

from .params import Granularity, Mode, QuantParams, finite_values, reshape_channels


def _code_dtype(params: QuantParams) -> type:
    signed = params.mode is Mode.SYMMETRIC
    if params.bits <= 8:
        return np.int8 if signed else np.uint8
    return np.int16 if signed else np.uint16


def _rows(x: np.ndarray, params: QuantParams) -> np.ndarray:
    """``x`` as rows matching the scales: one row per tensor, or one per channel."""
    if params.granularity is Granularity.PER_CHANNEL:
        return reshape_channels(x, params.num_channels)
    return x.reshape(1, -1)


def quantize_with_params(values: np.ndarray, params: QuantParams) -> np.ndarray:
    """Integer codes ``clip(round(x / scale) + zero_point, qmin, qmax)``, in the values' shape.

    Codes are int8/uint8 up to 8 bits and int16/uint16 above (signed when symmetric).
    """
    x = finite_values(values)
    qmin, qmax = params.qrange
    rows = _rows(x, params)
    q = np.rint(rows / params.scales[:, None]) + params.zero_points[:, None]
    return np.clip(q, qmin, qmax).astype(_code_dtype(params)).reshape(x.shape)


def dequantize_with_params(codes: np.ndarray, params: QuantParams) -> np.ndarray:
    """Values ``(q - zero_point) * scale`` as float64, in the codes' shape."""
    q = np.asarray(codes)
    if q.dtype.kind not in "iu":
        raise ValueError(f"codes: expected an integer array, given dtype {q.dtype}")
    rows = _rows(q.astype(np.int64), params)
    return ((rows - params.zero_points[:, None]) * params.scales[:, None]).reshape(q.shape)


def fake_quantize(values: np.ndarray, params: QuantParams) -> np.ndarray:
    """The values quantised and read back: what a quantised model computes with."""
    return dequantize_with_params(quantize_with_params(values, params), params)


def quantization_mse(values: np.ndarray, params: QuantParams) -> float:
    """Mean squared error of the values once quantised and read back (0.0 when empty)."""
    x = finite_values(values)
    if x.size == 0:
        return 0.0
    with np.errstate(over="ignore", under="ignore"):  # Inf for errors beyond ~1e154
        err = fake_quantize(x, params) - x
        return float(np.mean(err * err))
