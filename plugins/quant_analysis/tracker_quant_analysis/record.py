"""The ``quant.error`` record: the quantisation error of one tensor in one configuration."""

from typing import Any

import attrs
import numpy as np
from tracker import Schema
from tracker import validators as v

from .analysis import OUTLIER_THRESHOLD, analyze_error, theoretical_max_error
from .params import MAX_BITS, MIN_BITS, Granularity, Mode, QuantParams

SCHEMA_NAME = "quant.error"
GRANULARITIES = tuple(g.value for g in Granularity)
MODES = tuple(m.value for m in Mode)


def _error() -> Any:
    """A field holding an error: a number >= 0, never NaN."""
    return attrs.field(validator=v.non_negative)


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

    tensor: str = attrs.field(validator=v.non_empty)
    bits: int = attrs.field(validator=v.in_range(MIN_BITS, MAX_BITS))
    granularity: str = attrs.field(validator=v.one_of(*GRANULARITIES))
    mode: str = attrs.field(validator=v.one_of(*MODES))
    mse: float = _error()
    mae: float = _error()
    max_error: float = _error()
    sqnr_db: float = attrs.field(validator=v.not_nan)
    outlier_rate: float = attrs.field(validator=v.fraction)
    num_samples: int = attrs.field(validator=v.non_negative)
    theoretical_max_error: float = _error()


#: The plugin's one schema.
SCHEMAS = [Schema(SCHEMA_NAME, ErrorRecord, version=1,
                  description="quantisation error of one tensor: MSE, max error, SQNR, outliers")]


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
        mse=stats.mse, mae=stats.mae, max_error=stats.max_error, sqnr_db=stats.sqnr_db,
        outlier_rate=stats.outlier_rate, num_samples=stats.num_samples,
        theoretical_max_error=theoretical_max_error(params),
    )
