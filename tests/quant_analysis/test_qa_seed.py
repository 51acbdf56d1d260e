"""The seed's exact helper semantics: named-tuple results and QuantParams without zero points.

Users port code and tests of the original system, which unpack
``mse_4bit, mse_8bit, improvement = compare_bit_widths(values)`` and
``mse_original, mse_clipped, impact = analyze_outlier_impact(values, percentile)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tracker_quant_analysis import (
    QuantParams,
    analyze_outlier_impact,
    bit_width_errors,
    calibrate_per_tensor,
    compare_bit_widths,
    quantization_mse,
    theoretical_max_error,
)

values = hnp.arrays(np.float64, st.integers(1, 200),
                    elements=st.floats(-100, 100, allow_nan=False, allow_infinity=False))


def expected_ratio(a: float, b: float) -> float:
    if b > 0:
        return a / b
    return math.inf if a > 0 else 1.0


def test_compare_bit_widths_unpacks_and_names_its_fields():
    x = np.sin(np.arange(100) * 0.1)
    mse_4bit, mse_8bit, improvement = compare_bit_widths(x)
    result = compare_bit_widths(x)
    assert result._fields == ("mse_4bit", "mse_8bit", "improvement")
    assert (result.mse_4bit, result.mse_8bit, result.improvement) == (mse_4bit, mse_8bit,
                                                                      improvement)
    assert mse_8bit <= mse_4bit and improvement == mse_4bit / mse_8bit and improvement >= 1.0


@settings(max_examples=80, deadline=None)
@given(values)
def test_improvement_is_mse4_over_mse8(x):
    result = compare_bit_widths(x)
    stats = bit_width_errors(x, (4, 8))
    assert result.mse_4bit == stats[4].mse and result.mse_8bit == stats[8].mse
    assert result.mse_4bit == quantization_mse(x, calibrate_per_tensor(x, 4))
    assert result.improvement == expected_ratio(result.mse_4bit, result.mse_8bit)


@pytest.mark.parametrize(("x", "improvement"), [
    (np.zeros(5), 1.0),                  # both exact: 1.0
    (np.array([1.0, -1.0, 0.0]), 1.0),   # on the 4-bit and the 8-bit grid
    (np.array([127.0, 1.0]), math.inf),  # on the 8-bit grid only: mse8 = 0 < mse4
])
def test_improvement_when_an_mse_is_zero(x, improvement):
    result = compare_bit_widths(x)
    assert result.mse_8bit == 0.0 and result.improvement == improvement


def test_analyze_outlier_impact_unpacks_and_names_its_fields():
    x = np.concatenate([np.sin(np.arange(100) * 0.01), [100.0, -100.0]])
    mse_original, mse_clipped, impact = analyze_outlier_impact(x, 99.0)
    result = analyze_outlier_impact(x, 99.0)
    assert result._fields == ("mse_original", "mse_clipped", "impact")
    assert tuple(result) == (mse_original, mse_clipped, impact)
    # rank floor(0.99 * 102) = 100 of the sorted magnitudes is 100: nothing is clipped.
    assert mse_clipped == mse_original and impact == 1.0
    mse_original, mse_clipped, impact = analyze_outlier_impact(x, 90.0)
    assert mse_clipped < mse_original and impact == mse_original / mse_clipped > 1.0


@settings(max_examples=80, deadline=None)
@given(values, st.floats(0.5, 100))
def test_outlier_impact_clips_at_the_rank_of_the_percentile(x, percentile):
    result = analyze_outlier_impact(x, percentile)
    ranked = np.sort(np.abs(x))
    threshold = ranked[min(int(percentile / 100 * x.size), x.size - 1)]
    clipped = np.clip(x, -threshold, threshold)
    assert result.mse_original == quantization_mse(x, calibrate_per_tensor(x, 8))
    assert result.mse_clipped == quantization_mse(clipped, calibrate_per_tensor(clipped, 8))
    assert result.impact == expected_ratio(result.mse_original, result.mse_clipped)


def test_outlier_impact_of_nothing_and_bad_percentiles():
    assert tuple(analyze_outlier_impact(np.array([]), 99.0)) == (0.0, 0.0, 1.0)
    for bad in (0, -1, 100.5, math.nan):
        with pytest.raises(ValueError, match=r"percentile: expected a number in \(0, 100\]"):
            analyze_outlier_impact(np.ones(3), bad)


def test_quant_params_accept_no_zero_points_in_symmetric_mode():
    params = QuantParams(scales=[0.1, 0.2], zero_points=[], granularity="per_channel",
                         mode="symmetric", bits=8)
    assert params.zero_points.tolist() == [0, 0]
    assert theoretical_max_error(params) == pytest.approx(0.1)
    assert QuantParams(scales=[0.5]).zero_points.tolist() == [0]
    with pytest.raises(ValueError, match="zero_points: expected one per scale"):
        QuantParams(scales=[0.5], zero_points=[], mode="asymmetric")
