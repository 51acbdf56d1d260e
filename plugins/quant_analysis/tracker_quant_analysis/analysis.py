"""Error statistics of a quantised tensor, and the studies built on them."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeVar

import attrs
import numpy as np

from .params import (
    Granularity,
    Mode,
    QuantParams,
    as_granularity,
    as_mode,
    calibrate_per_channel,
    calibrate_per_tensor,
    check_bits,
    finite_values,
)
from .quantize import fake_quantize, quantization_mse

_F = TypeVar("_F", bound=Callable)


def _overflow_is_inf(fn: _F) -> _F:
    """Squares of errors beyond ~1e154 overflow: report them as Inf without a warning."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with np.errstate(over="ignore", under="ignore"):
            return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


#: Default outlier threshold: values further than this many standard deviations from the mean.
OUTLIER_THRESHOLD = 3.0


@attrs.frozen
class ErrorStats:
    """How far quantised values are from the originals.

    :ivar mse: mean squared error.
    :ivar mae: mean absolute error.
    :ivar max_error: largest absolute error.
    :ivar sqnr_db: signal-to-quantisation-noise ratio, ``10 log10(mean x² / mse)``;
        +Inf when there is no noise (an all-zero or exactly representable tensor).
    :ivar outlier_rate: fraction of values further than ``outlier_threshold``
        standard deviations from the mean.
    :ivar num_samples: number of values (0 for an empty tensor, whose errors are 0).
    :ivar clipped_rate: fraction of values outside the representable range.
    """

    mse: float
    mae: float
    max_error: float
    sqnr_db: float
    outlier_rate: float
    num_samples: int
    clipped_rate: float = 0.0


def sqnr_db(signal_power: float, noise_power: float) -> float:
    """``10 log10(signal / noise)``; +Inf without noise, -Inf for noise without signal."""
    if noise_power == 0:
        return math.inf
    if signal_power == 0:
        return -math.inf
    return 10.0 * math.log10(signal_power / noise_power)


def _rms(v: np.ndarray) -> float:
    """Root mean square, scaled by the peak so that neither overflow nor underflow bites."""
    peak = float(np.max(np.abs(v))) if v.size else 0.0
    if peak == 0:
        return 0.0
    scaled = v / peak
    return peak * math.sqrt(float(np.mean(scaled * scaled)))


def _sqnr_of(x: np.ndarray, err: np.ndarray) -> float:
    """SQNR of values and their errors, from their RMS (exact for any magnitude)."""
    signal, noise = _rms(x), _rms(err)
    if noise == 0:
        return math.inf
    if signal == 0:
        return -math.inf
    return 20.0 * (math.log10(signal) - math.log10(noise))


@_overflow_is_inf
def outlier_rate(values: np.ndarray, threshold: float = OUTLIER_THRESHOLD) -> float:
    """Fraction of values with ``|x - mean| > threshold * std`` (0.0 when empty or constant)."""
    x = finite_values(values).ravel()
    if not threshold > 0:
        raise ValueError(f"outlier_threshold: expected a number > 0, given {threshold!r}")
    if x.size == 0:
        return 0.0
    # Centre on the mean, and compare against the std of the centred values,
    # so that the result does not depend on overflowing squares.
    centred = x - x.mean()
    std = float(np.std(centred))
    if std == 0:
        return 0.0
    return float(np.count_nonzero(np.abs(centred) > threshold * std) / x.size)


@_overflow_is_inf
def analyze_error(values: np.ndarray, params: QuantParams,
                  outlier_threshold: float = OUTLIER_THRESHOLD) -> ErrorStats:
    """Error statistics of ``values`` quantised with ``params``.

    :param outlier_threshold: in standard deviations from the mean.
    """
    x = finite_values(values)
    rate = outlier_rate(x, outlier_threshold)
    if x.size == 0:
        return ErrorStats(0.0, 0.0, 0.0, math.inf, rate, 0, 0.0)
    deq = fake_quantize(x, params)
    err = np.abs(deq - x)
    mse = float(np.mean(err * err))
    clipped = err > theoretical_max_error(params) * (1 + 1e-9)
    return ErrorStats(
        mse=mse,
        mae=float(np.mean(err)),
        max_error=float(err.max()),
        sqnr_db=_sqnr_of(x, err),
        outlier_rate=rate,
        num_samples=int(x.size),
        clipped_rate=float(np.count_nonzero(clipped) / x.size),
    )


def theoretical_max_error(params: QuantParams) -> float:
    """The largest error rounding can make: the largest scale / 2 (clipping aside)."""
    return float(np.max(params.scales)) / 2


def theoretical_sqnr(bits: int) -> float:
    """SQNR of an ideal ``bits``-bit quantiser on a full-scale sine: 6.02 bits + 1.76 dB."""
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or bits < 1:
        raise ValueError(f"bits: expected an int >= 1, given {bits!r}")
    return 6.02 * int(bits) + 1.76


@_overflow_is_inf
def error_within_bounds(values: np.ndarray, params: QuantParams, rtol: float = 1e-9) -> bool:
    """Whether every error is at most :func:`theoretical_max_error` (false once values clip)."""
    x = finite_values(values)
    if x.size == 0:
        return True
    err = np.abs(fake_quantize(x, params) - x)
    return bool(err.max() <= theoretical_max_error(params) * (1 + rtol))


@attrs.frozen
class ScaleSensitivity:
    """How the MSE moves when every scale is multiplied by ``1 - delta`` and ``1 + delta``.

    :ivar base_mse: MSE with the given scales.
    :ivar mse_down: MSE with scales times ``1 - delta``.
    :ivar mse_up: MSE with scales times ``1 + delta``.
    :ivar sensitivity: ``(mse_up - mse_down) / (2 delta)``, the slope of the MSE
        against the relative scale; near 0 for a well-chosen scale. Finite
        whenever the MSEs are (values up to about 1e150 in magnitude), NaN
        when both overflow.
    :ivar delta: the relative change used.
    """

    base_mse: float
    mse_down: float
    mse_up: float
    sensitivity: float
    delta: float


def _mse(x: np.ndarray, params: QuantParams) -> float:
    if x.size == 0:
        return 0.0
    err = fake_quantize(x, params) - x
    return float(np.mean(err * err))


@_overflow_is_inf
def scale_sensitivity(values: np.ndarray, params: QuantParams,
                      delta: float = 0.01) -> ScaleSensitivity:
    """Slope of the MSE against a small relative change of every scale.

    :param delta: relative change, in (0, 1).
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta: expected a number in (0, 1), given {delta!r}")
    x = finite_values(values)
    base = _mse(x, params)
    down = _mse(x, params.with_scales(params.scales * (1 - delta)))
    up = _mse(x, params.with_scales(params.scales * (1 + delta)))
    return ScaleSensitivity(base, down, up, (up - down) / (2 * delta), float(delta))


def calibrate(values: np.ndarray, bits: int, mode: Mode | str,
              granularity: Granularity | str, num_channels: int | None = None) -> QuantParams:
    """Calibrate per tensor or per channel by name (``num_channels`` needed per channel)."""
    if as_granularity(granularity) is Granularity.PER_CHANNEL:
        if num_channels is None:
            raise ValueError("num_channels: expected an int for per-channel calibration, "
                             "given None")
        return calibrate_per_channel(values, num_channels, bits, mode)
    return calibrate_per_tensor(values, bits, mode)


def bit_width_errors(values: np.ndarray, bits: Iterable[int] = (4, 8),
                     mode: Mode | str = Mode.SYMMETRIC,
                     granularity: Granularity | str = Granularity.PER_TENSOR,
                     num_channels: int | None = None,
                     outlier_threshold: float = OUTLIER_THRESHOLD) -> dict[int, ErrorStats]:
    """Error statistics of the same values calibrated at each bit width (4 and 8 by default).

    More bits always give a smaller error bound. On real-valued data the MSE
    drops by about 6 dB per bit; a tensor that happens to sit exactly on the
    coarse grid (say only multiples of max/7) is, of course, exact at 4 bits.
    """
    x = finite_values(values)
    return {check_bits(b): analyze_error(x, calibrate(x, b, mode, granularity, num_channels),
                                         outlier_threshold)
            for b in bits}


def _ratio(a: float, b: float) -> float:
    """``a / b``, as the original defines it: 1.0 when both are equal (both 0), +Inf when only b is 0."""
    if a == b:
        return 1.0
    return a / b if b else math.inf


class BitWidthComparison(NamedTuple):
    """The MSE of the same values at 4 and at 8 bits (``a, b, c = compare_bit_widths(x)`` works).

    :ivar mse_4bit: MSE with a 4-bit scale calibrated on the values.
    :ivar mse_8bit: MSE with an 8-bit scale calibrated on the values.
    :ivar improvement: ``mse_4bit / mse_8bit``; +Inf when only ``mse_8bit`` is 0,
        1.0 when both are.
    """

    mse_4bit: float
    mse_8bit: float
    improvement: float


@_overflow_is_inf
def compare_bit_widths(values: np.ndarray, mode: Mode | str = Mode.SYMMETRIC,
                       granularity: Granularity | str = Granularity.PER_TENSOR,
                       num_channels: int | None = None) -> BitWidthComparison:
    """How much 8 bits improve on 4: ``(mse_4bit, mse_8bit, improvement)``.

    Each width gets its own scale calibrated on the values (symmetric, per
    tensor by default, as in the original); :func:`bit_width_errors` gives the
    full :class:`ErrorStats` of any widths.
    """
    stats = bit_width_errors(values, (4, 8), mode, granularity, num_channels)
    mse4, mse8 = stats[4].mse, stats[8].mse
    return BitWidthComparison(mse4, mse8, _ratio(mse4, mse8))


class OutlierImpact(NamedTuple):
    """What clipping the outliers changes (``a, b, c = analyze_outlier_impact(x, 99)`` works).

    :ivar mse_original: 8-bit MSE of the values with a scale calibrated on all of them.
    :ivar mse_clipped: 8-bit MSE of the clipped values with a scale calibrated on
        them (the clipping itself is not counted, as in the original; see
        :func:`clipping_study` for the error against the original values).
    :ivar impact: ``mse_original / mse_clipped``; +Inf when only ``mse_clipped``
        is 0, 1.0 when both are.
    """

    mse_original: float
    mse_clipped: float
    impact: float


@_overflow_is_inf
def analyze_outlier_impact(values: np.ndarray, percentile: float = 99.9, *,
                           bits: int = 8) -> OutlierImpact:
    """How much a few outliers cost: ``(mse_original, mse_clipped, impact)``.

    The clipping threshold is the magnitude at rank ``floor(percentile / 100 * n)``
    of the sorted magnitudes (the largest one at 100), as in the original; the
    values are clipped to ``[-threshold, threshold]`` and both sets are
    quantised symmetrically per tensor. An empty tensor gives ``(0.0, 0.0, 1.0)``.

    :param percentile: in (0, 100].
    :param bits: code width, 8 in the original.
    """
    if isinstance(percentile, bool) or not isinstance(percentile, (int, float, np.number)) \
            or not 0 < percentile <= 100:
        raise ValueError(f"percentile: expected a number in (0, 100], given {percentile!r}")
    x = finite_values(values).ravel()
    if x.size == 0:
        return OutlierImpact(0.0, 0.0, 1.0)
    magnitudes = np.sort(np.abs(x))
    threshold = float(magnitudes[min(int(percentile / 100 * x.size), x.size - 1)])
    clipped = np.clip(x, -threshold, threshold)
    mse_original = quantization_mse(x, calibrate_per_tensor(x, bits))
    mse_clipped = quantization_mse(clipped, calibrate_per_tensor(clipped, bits))
    return OutlierImpact(mse_original, mse_clipped, _ratio(mse_original, mse_clipped))


@attrs.frozen
class ClippingStudy:
    """Full-range calibration against clipping the range at a percentile.

    :ivar percentile: the percentile of the clipping range.
    :ivar clip_low: low end of the clipped range.
    :ivar clip_high: high end of the clipped range.
    :ivar clipped_rate: fraction of values outside the clipped range.
    :ivar scale_full: scale calibrated on the full range.
    :ivar scale_clipped: scale calibrated on the clipped range.
    :ivar mse_full: MSE with the full-range scale.
    :ivar mse_clipped: MSE with the clipped scale against the original values,
        clipping error included.
    :ivar sqnr_full_db: SQNR with the full-range scale.
    :ivar sqnr_clipped_db: SQNR with the clipped scale.
    """

    percentile: float
    clip_low: float
    clip_high: float
    clipped_rate: float
    scale_full: float
    scale_clipped: float
    mse_full: float
    mse_clipped: float
    sqnr_full_db: float
    sqnr_clipped_db: float

    @property
    def clipping_helps(self) -> bool:
        """Whether clipping the outliers lowers the MSE."""
        return self.mse_clipped < self.mse_full


@_overflow_is_inf
def clipping_study(values: np.ndarray, percentile: float = 99.9, bits: int = 8,
                   mode: Mode | str = Mode.SYMMETRIC) -> ClippingStudy:
    """Whether clipping pays: calibrate on the full range, then on the range clipped
    at ``percentile``, and measure both against the original values.

    Symmetric mode clips ``|x|`` at its percentile; asymmetric mode clips ``x`` to
    its ``100 - percentile`` and ``percentile`` percentiles (numpy's linear
    interpolation).

    :param percentile: in (0, 100].
    """
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile: expected a number in (0, 100], given {percentile!r}")
    x = finite_values(values).ravel()
    mode = as_mode(mode)
    if x.size == 0:
        lo = hi = 0.0
    elif mode is Mode.SYMMETRIC:
        hi = float(np.percentile(np.abs(x), percentile))
        lo = -hi
    else:
        lo, hi = (float(v) for v in np.percentile(x, [100 - percentile, percentile]))
    full = calibrate_per_tensor(x, bits, mode)
    clipped = calibrate_per_tensor(np.clip(x, lo, hi), bits, mode)
    err_full, err_clipped = fake_quantize(x, full) - x, fake_quantize(x, clipped) - x
    mse_full = float(np.mean(err_full**2)) if x.size else 0.0
    mse_clipped = float(np.mean(err_clipped**2)) if x.size else 0.0
    outside = np.count_nonzero((x < lo) | (x > hi)) / x.size if x.size else 0.0
    return ClippingStudy(
        percentile=float(percentile), clip_low=lo, clip_high=hi, clipped_rate=float(outside),
        scale_full=float(full.scales[0]), scale_clipped=float(clipped.scales[0]),
        mse_full=mse_full, mse_clipped=mse_clipped,
        sqnr_full_db=_sqnr_of(x, err_full), sqnr_clipped_db=_sqnr_of(x, err_clipped),
    )
