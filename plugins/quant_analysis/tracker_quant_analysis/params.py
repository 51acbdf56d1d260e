"""Quantisation parameters and their calibration from data.

Integer ranges: symmetric ``b``-bit values use ``[-(2**(b-1) - 1), 2**(b-1) - 1]``
(the most negative code is left out so the range is symmetric, zero point 0);
asymmetric values use ``[0, 2**b - 1]`` with a zero point. Calibration takes
the range from the data, widened to include 0 so that 0 is always exactly
representable. Per channel, channel ``c`` is the ``c``-th of ``num_channels``
equal blocks of the values in C order, i.e. row ``c`` when the first axis is
the channel axis.
"""

from __future__ import annotations

import enum

import attrs
import numpy as np

#: Smallest scale used: an all-zero tensor still gets a usable scale, and a
#: scale stays representable in float32.
MIN_SCALE = float(np.finfo(np.float32).tiny)
MIN_BITS, MAX_BITS = 2, 16


class Mode(str, enum.Enum):
    """Symmetric (zero point 0) or asymmetric (a zero point per scale)."""

    SYMMETRIC = "symmetric"
    ASYMMETRIC = "asymmetric"


class Granularity(str, enum.Enum):
    """One scale for the whole tensor, or one per channel."""

    PER_TENSOR = "per_tensor"
    PER_CHANNEL = "per_channel"


def as_mode(value: Mode | str) -> Mode:
    """A :class:`Mode` from itself or its plain string (``"symmetric"``, ``"asymmetric"``)."""
    return _as_enum(Mode, value, "mode")


def as_granularity(value: Granularity | str) -> Granularity:
    """A :class:`Granularity` from itself or its plain string (``"per_tensor"``, ``"per_channel"``)."""
    return _as_enum(Granularity, value, "granularity")


def _as_enum(cls: type[enum.Enum], value: object, what: str):
    try:
        return cls(value)
    except ValueError:
        choices = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"{what}: expected one of {choices}, given {value!r}") from None


def check_bits(bits: int) -> int:
    """``bits`` if it is an int from 2 to 16.

    :raises ValueError: otherwise.
    """
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) \
            or not MIN_BITS <= bits <= MAX_BITS:
        raise ValueError(f"bits: expected an int from {MIN_BITS} to {MAX_BITS}, given {bits!r}")
    return int(bits)


def int_range(bits: int, mode: Mode | str) -> tuple[int, int]:
    """``(qmin, qmax)`` of ``bits``-bit codes in ``mode``."""
    bits = check_bits(bits)
    if as_mode(mode) is Mode.SYMMETRIC:
        return -(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1


def _float_array(value: object) -> np.ndarray:
    return np.atleast_1d(np.asarray(value, dtype=np.float64)).copy()


def _int_array(value: object) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(value))
    if arr.size == 0:  # ``[]`` reads as float64; no zero point is no type to check
        return np.zeros(arr.shape, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"zero_points: expected integers, given dtype {arr.dtype}")
    return arr.astype(np.int64)


@attrs.frozen(eq=False)
class QuantParams:
    """How a tensor is quantised: ``q = clip(round(x / scale) + zero_point, qmin, qmax)``.

    :ivar scales: float64 scales, one per tensor or one per channel.
    :ivar zero_points: int64 zero points, as many as scales (0 when symmetric).
        Symmetric mode has none: an empty list (the default) means zero for
        every scale, as in the original.
    :ivar granularity: :class:`Granularity` (a plain string is converted).
    :ivar mode: :class:`Mode` (a plain string is converted).
    :ivar bits: code width, 2 to 16.
    """

    scales: np.ndarray = attrs.field(converter=_float_array)
    zero_points: np.ndarray = attrs.field(factory=list, converter=_int_array)
    granularity: Granularity = attrs.field(default=Granularity.PER_TENSOR, converter=as_granularity)
    mode: Mode = attrs.field(default=Mode.SYMMETRIC, converter=as_mode)
    bits: int = attrs.field(default=8, converter=check_bits)

    def __attrs_post_init__(self) -> None:
        if self.zero_points.size == 0 and self.mode is Mode.SYMMETRIC:
            object.__setattr__(self, "zero_points", np.zeros(self.scales.shape, dtype=np.int64))
        if self.scales.ndim != 1:
            raise ValueError(f"scales: expected a flat list, given shape {self.scales.shape}")
        if self.scales.shape != self.zero_points.shape:
            raise ValueError(f"zero_points: expected one per scale ({self.scales.size}; only "
                             f"symmetric mode may leave them out), given shape "
                             f"{self.zero_points.shape}")
        if self.granularity is Granularity.PER_TENSOR and self.scales.size != 1:
            raise ValueError(f"scales: expected one scale per tensor, given {self.scales.size}")
        if self.scales.size == 0:
            raise ValueError("scales: expected at least one channel, given none")
        if not (np.all(np.isfinite(self.scales)) and np.all(self.scales > 0)):
            raise ValueError(f"scales: expected finite values > 0, given {self.scales!r}")
        qmin, qmax = self.qrange
        if np.any(self.zero_points < qmin) or np.any(self.zero_points > qmax):
            raise ValueError(f"zero_points: expected values in [{qmin}, {qmax}], "
                             f"given {self.zero_points!r}")
        if self.mode is Mode.SYMMETRIC and np.any(self.zero_points != 0):
            raise ValueError(f"zero_points: expected 0 in symmetric mode, given {self.zero_points!r}")

    @property
    def qrange(self) -> tuple[int, int]:
        """``(qmin, qmax)``: the integer codes in use."""
        return int_range(self.bits, self.mode)

    @property
    def num_channels(self) -> int:
        """1 per tensor, else the number of channels."""
        return int(self.scales.size)

    def with_scales(self, scales: np.ndarray) -> QuantParams:
        """The same parameters with other scales; asymmetric zero points move so that
        the low end of the range stays where it was."""
        scales = _float_array(scales)
        zero_points = self.zero_points
        if self.mode is Mode.ASYMMETRIC:
            qmin, qmax = self.qrange
            moved = qmin + np.rint((self.zero_points - qmin) * (self.scales / scales))
            zero_points = np.clip(moved, qmin, qmax).astype(np.int64)
        return attrs.evolve(self, scales=scales, zero_points=zero_points)


def calibrate_per_tensor(values: np.ndarray, bits: int = 8,
                         mode: Mode | str = Mode.SYMMETRIC) -> QuantParams:
    """One scale (and zero point) covering every value.

    :raises ValueError: for NaN or infinite values, or bits outside 2..16.
    """
    x = finite_values(values).reshape(1, -1)
    scales, zps = _calibrate_rows(x, check_bits(bits), as_mode(mode))
    return QuantParams(scales, zps, Granularity.PER_TENSOR, mode, bits)


def calibrate_per_channel(values: np.ndarray, num_channels: int, bits: int = 8,
                          mode: Mode | str = Mode.SYMMETRIC) -> QuantParams:
    """One scale (and zero point) per channel.

    :param num_channels: the values are split in C order into this many equal
        blocks (the rows when the first axis has ``num_channels`` entries).
    :raises ValueError: when the values do not split into ``num_channels`` blocks.
    """
    x = finite_values(values)
    x = reshape_channels(x, num_channels)
    scales, zps = _calibrate_rows(x, check_bits(bits), as_mode(mode))
    return QuantParams(scales, zps, Granularity.PER_CHANNEL, mode, bits)


def reshape_channels(x: np.ndarray, num_channels: int) -> np.ndarray:
    """``x`` as a ``(num_channels, -1)`` array.

    :raises ValueError: when the size is not a multiple of ``num_channels``.
    """
    if isinstance(num_channels, bool) or not isinstance(num_channels, (int, np.integer)) \
            or num_channels < 1:
        raise ValueError(f"num_channels: expected an int >= 1, given {num_channels!r}")
    if x.size % num_channels:
        raise ValueError(f"num_channels: {x.size} values do not split into {num_channels} "
                         f"equal channels (shape {x.shape})")
    return x.reshape(int(num_channels), -1)


def finite_values(values: np.ndarray) -> np.ndarray:
    """The values as a float64 array.

    :raises ValueError: for non-numeric, NaN or infinite values.
    """
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiub":
        raise ValueError(f"values: expected a numeric array, given dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError("values: expected finite numbers, given NaN or Inf")
    return arr


def _calibrate_rows(x: np.ndarray, bits: int, mode: Mode) -> tuple[np.ndarray, np.ndarray]:
    qmin, qmax = int_range(bits, mode)
    rows = x.shape[0]
    if x.shape[1] == 0:
        lo = hi = np.zeros(rows)
    else:
        lo, hi = np.minimum(x.min(axis=1), 0.0), np.maximum(x.max(axis=1), 0.0)
    if mode is Mode.SYMMETRIC:
        scales = np.maximum(np.maximum(-lo, hi) / qmax, MIN_SCALE)
        return scales, np.zeros(rows, dtype=np.int64)
    # Divide before subtracting: hi - lo overflows for values near the float64 limit.
    scales = np.maximum(hi / (qmax - qmin) - lo / (qmax - qmin), MIN_SCALE)
    zps = np.clip(np.rint(qmin - lo / scales), qmin, qmax).astype(np.int64)
    return scales, zps
