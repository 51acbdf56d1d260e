"""error_record() and the validators of the quant.error class."""

import math

import attrs
import numpy as np
import pytest
from tracker_quant_analysis import (
    ErrorRecord,
    analyze_error,
    calibrate_per_channel,
    error_record,
    theoretical_max_error,
)

GOOD = dict(tensor="fc1.weight", bits=8, granularity="per_tensor", mode="symmetric", mse=1e-5,
            mae=2e-3, max_error=4e-3, sqnr_db=40.0, outlier_rate=0.01, num_samples=100,
            theoretical_max_error=4e-3)


def test_error_record_copies_the_analysis():
    x = np.random.default_rng(0).normal(size=(4, 25))
    params = calibrate_per_channel(x, 4, 6, "asymmetric")
    rec = error_record("w", x, params, outlier_threshold=2.0)
    stats = analyze_error(x, params, outlier_threshold=2.0)
    assert (rec.tensor, rec.bits, rec.granularity, rec.mode) == ("w", 6, "per_channel",
                                                                 "asymmetric")
    assert (rec.mse, rec.mae, rec.max_error, rec.sqnr_db) == (stats.mse, stats.mae,
                                                              stats.max_error, stats.sqnr_db)
    assert rec.outlier_rate == stats.outlier_rate and rec.num_samples == 100
    assert rec.theoretical_max_error == theoretical_max_error(params)
    assert isinstance(rec.granularity, str) and type(rec.mode) is str


def test_good_values_construct_including_infinite_sqnr():
    assert attrs.asdict(ErrorRecord(**GOOD))["bits"] == 8
    assert ErrorRecord(**{**GOOD, "sqnr_db": math.inf, "mse": 0.0}).sqnr_db == math.inf
    assert ErrorRecord(**{**GOOD, "num_samples": 0, "outlier_rate": 0.0}).num_samples == 0


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("bits", 1, r"expected an int in \[2, 16\], given 1"),
    ("bits", 17, r"expected an int in \[2, 16\], given 17"),
    ("granularity", "per_row", "one of 'per_tensor', 'per_channel'"),
    ("mode", "Symmetric", "one of 'symmetric', 'asymmetric'"),
    ("sqnr_db", math.nan, r"other than NaN \(infinities allowed\)"),
    ("outlier_rate", 1.5, r"expected a number in \[0, 1\]"),
    ("outlier_rate", -0.1, r"expected a number in \[0, 1\]"),
    ("mse", -1.0, "expected a number >= 0"),
    ("max_error", math.nan, "expected a number >= 0"),
    ("num_samples", -1, "int >= 0"),
    ("theoretical_max_error", -1e-3, "expected a number >= 0"),
    ("tensor", "", "non-empty"),
])
def test_validators_refuse_bad_values(field, value, expected):
    with pytest.raises(ValueError, match=expected) as info:
        ErrorRecord(**{**GOOD, field: value})
    assert "given" in str(info.value)
