"""Quantisation error analysis for ``tracker``: numpy helpers and the ``quant.error`` schema.

::

    from tracker_quant_analysis import calibrate_per_channel, error_record

    params = calibrate_per_channel(weights, num_channels=weights.shape[0], bits=8)
    run.log_record("quant.error", error_record("fc1.weight", weights, params))

Modes and granularities take the enums or their plain strings
(``"symmetric"``, ``"asymmetric"``, ``"per_tensor"``, ``"per_channel"``). The
helpers need only numpy and attrs; the ``tracker`` plugin itself lives in
:mod:`tracker_quant_analysis.plugin`.
"""

from .analysis import (
    OUTLIER_THRESHOLD,
    BitWidthComparison,
    ClippingStudy,
    ErrorStats,
    OutlierImpact,
    ScaleSensitivity,
    analyze_error,
    analyze_outlier_impact,
    bit_width_errors,
    calibrate,
    clipping_study,
    compare_bit_widths,
    error_within_bounds,
    outlier_rate,
    scale_sensitivity,
    sqnr_db,
    theoretical_max_error,
    theoretical_sqnr,
)
from .params import (
    MIN_SCALE,
    Granularity,
    Mode,
    QuantParams,
    as_granularity,
    as_mode,
    calibrate_per_channel,
    calibrate_per_tensor,
    int_range,
)
from .quantize import (
    dequantize_with_params,
    fake_quantize,
    quantization_mse,
    quantize_with_params,
)
from .record import SCHEMA_NAME, ErrorRecord, error_record

__all__ = [
    "MIN_SCALE",
    "OUTLIER_THRESHOLD",
    "SCHEMA_NAME",
    "BitWidthComparison",
    "ClippingStudy",
    "ErrorRecord",
    "ErrorStats",
    "Granularity",
    "Mode",
    "OutlierImpact",
    "QuantParams",
    "ScaleSensitivity",
    "analyze_error",
    "analyze_outlier_impact",
    "as_granularity",
    "as_mode",
    "bit_width_errors",
    "calibrate",
    "calibrate_per_channel",
    "calibrate_per_tensor",
    "clipping_study",
    "compare_bit_widths",
    "dequantize_with_params",
    "error_record",
    "error_within_bounds",
    "fake_quantize",
    "int_range",
    "outlier_rate",
    "quantization_mse",
    "quantize_with_params",
    "scale_sensitivity",
    "sqnr_db",
    "theoretical_max_error",
    "theoretical_sqnr",
]
