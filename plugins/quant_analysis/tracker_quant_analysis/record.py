"""The ``quant.error`` record: the quantisation error of one tensor in one configuration."""

import math

import attrs
import numpy as np

from .analysis import OUTLIER_THRESHOLD, analyze_error, theoretical_max_error
from .params import MAX_BITS, MIN_BITS, Granularity, Mode, QuantParams

SCHEMA_NAME = "quant.error"
GRANULARITIES = tuple(g.value for g in Granularity)
MODES = tuple(m.value for m in Mode)


def _non_empty(_inst: object, _attr: attrs.Attribute, value: str) -> None:
    if not value:
        raise ValueError("expected a non-empty string, given ''")


def _bits(_inst: object, _attr: attrs.Attribute, value: int) -> None:
    if not MIN_BITS <= value <= MAX_BITS:
        raise ValueError(f"expected an int from {MIN_BITS} to {MAX_BITS}, given {value!r}")


def _choice(choices: tuple[str, ...]):
    def check(_inst: object, _attr: attrs.Attribute, value: str) -> None:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(map(repr, choices))}, given {value!r}")
    return check


def _non_negative(_inst: object, _attr: attrs.Attribute, value: float) -> None:
    if not value >= 0:  # also refuses NaN
        raise ValueError(f"expected a float >= 0, given {value!r}")


def _not_nan(_inst: object, _attr: attrs.Attribute, value: float) -> None:
    if math.isnan(value):
        raise ValueError("expected a number in dB (+Inf allowed for zero noise), given nan")


def _rate(_inst: object, _attr: attrs.Attribute, value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"expected a fraction in [0, 1], given {value!r}")


def _count(_inst: object, _attr: attrs.Attribute, value: int) -> None:
    if value < 0:
        raise ValueError(f"expected an int >= 0, given {value!r}")


@attrs.frozen(kw_only=True)
class ErrorRecord:
    """The quantisation error of one tensor (schema ``quant.error``).

    :ivar tensor: the tensor's name.
    :ivar bits: code width, 2 to 16.
    :ivar granularity: ``"per_tensor"`` or ``"per_channel"``.
    :ivar mode: ``"symmetric"`` or ``"asymmetric"``.
    :ivar mse: mean squared error.
    :ivar mae: mean absolute error.
    :ivar max_error: largest absolute error.
    :ivar sqnr_db: measured SQNR in dB; +Inf when there is no noise, never NaN.
    :ivar outlier_rate: fraction of values more than ``outlier_threshold`` standard
        deviations (3 by default) from the mean, in [0, 1].
    :ivar num_samples: number of values analysed.
    :ivar theoretical_max_error: the largest scale / 2.
    """

    tensor: str = attrs.field(validator=_non_empty)
    bits: int = attrs.field(validator=_bits)
    granularity: str = attrs.field(validator=_choice(GRANULARITIES))
    mode: str = attrs.field(validator=_choice(MODES))
    mse: float = attrs.field(validator=_non_negative)
    mae: float = attrs.field(validator=_non_negative)
    max_error: float = attrs.field(validator=_non_negative)
    sqnr_db: float = attrs.field(validator=_not_nan)
    outlier_rate: float = attrs.field(validator=_rate)
    num_samples: int = attrs.field(validator=_count)
    theoretical_max_error: float = attrs.field(validator=_non_negative)


def error_record(tensor: str, values: np.ndarray, params: QuantParams,
                 outlier_threshold: float = OUTLIER_THRESHOLD) -> ErrorRecord:
    """A ``quant.error`` record of ``values`` quantised with ``params``.

    :param tensor: the tensor's name.
    :param outlier_threshold: in standard deviations from the mean.
    """
    stats = analyze_error(values, params, outlier_threshold)
    return ErrorRecord(
        tensor=tensor,
        bits=params.bits,
        granularity=params.granularity.value,
        mode=params.mode.value,
        mse=stats.mse,
        mae=stats.mae,
        max_error=stats.max_error,
        sqnr_db=stats.sqnr_db,
        outlier_rate=stats.outlier_rate,
        num_samples=stats.num_samples,
        theoretical_max_error=theoretical_max_error(params),
    )
