"""Calibration, quantisation and analysis helpers on hand-computed examples."""

import math

import numpy as np
import pytest
from tracker_quant_analysis import (
    Granularity,
    Mode,
    QuantParams,
    analyze_error,
    analyze_outlier_impact,
    bit_width_errors,
    calibrate,
    calibrate_per_channel,
    calibrate_per_tensor,
    clipping_study,
    dequantize_with_params,
    error_within_bounds,
    int_range,
    outlier_rate,
    quantization_mse,
    quantize_with_params,
    scale_sensitivity,
    theoretical_max_error,
    theoretical_sqnr,
)


def test_plain_strings_and_enums_are_interchangeable():
    x = np.array([-1.0, 0.5, 2.0])
    a = calibrate_per_tensor(x, 8, "asymmetric")
    b = calibrate_per_tensor(x, 8, Mode.ASYMMETRIC)
    assert a.mode is Mode.ASYMMETRIC and a.granularity is Granularity.PER_TENSOR
    np.testing.assert_array_equal(a.scales, b.scales)
    c = calibrate(x.reshape(3, 1), 8, "symmetric", "per_channel", num_channels=3)
    assert c.granularity is Granularity.PER_CHANNEL and c.num_channels == 3
    p = QuantParams(0.1, 0, "per_tensor", "symmetric", 4)
    assert p.mode == "symmetric" and p.granularity == "per_tensor"


@pytest.mark.parametrize(("call", "message"), [
    (lambda: calibrate_per_tensor(np.ones(3), 8, "sym"), "mode: expected one of 'symmetric'"),
    (lambda: calibrate(np.ones(3), 8, "symmetric", "per_row"), "granularity: expected one of"),
    (lambda: calibrate(np.ones(3), 8, "symmetric", "per_channel"), "num_channels"),
    (lambda: calibrate_per_tensor(np.ones(3), 1), "bits: expected an int from 2 to 16"),
    (lambda: calibrate_per_tensor(np.ones(3), 17), "bits: expected an int from 2 to 16"),
    (lambda: calibrate_per_tensor(np.ones(3), 8.0), "bits"),
    (lambda: calibrate_per_tensor(np.array([1.0, np.nan])), "finite"),
    (lambda: calibrate_per_channel(np.ones(7), 2), "do not split into 2"),
    (lambda: calibrate_per_channel(np.ones(4), 0), "num_channels: expected an int >= 1"),
    (lambda: QuantParams([0.1, 0.2], [0, 0], "per_tensor"), "one scale per tensor"),
    (lambda: QuantParams([0.1], [3], "per_tensor", "symmetric"), "0 in symmetric mode"),
    (lambda: QuantParams([0.1], [300], "per_tensor", "asymmetric", 8), r"\[0, 255\]"),
    (lambda: QuantParams([0.0], [0]), "finite values > 0"),
    (lambda: QuantParams([0.1], [0.5]), "integers"),
    (lambda: theoretical_sqnr(0), "bits"),
    (lambda: outlier_rate(np.ones(3), 0), "outlier_threshold"),
    (lambda: scale_sensitivity(np.ones(3), calibrate_per_tensor(np.ones(3)), 1.5), "delta"),
    (lambda: analyze_outlier_impact(np.ones(3), 0), "percentile"),
])
def test_bad_arguments_are_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_integer_ranges():
    assert int_range(8, "symmetric") == (-127, 127)
    assert int_range(8, "asymmetric") == (0, 255)
    assert int_range(2, "symmetric") == (-1, 1)
    assert int_range(16, "asymmetric") == (0, 65535)


def test_symmetric_calibration_and_codes():
    x = np.array([-2.54, 0.0, 1.0, 2.0])
    p = calibrate_per_tensor(x, 8, "symmetric")
    assert p.scales[0] == pytest.approx(2.54 / 127)
    q = quantize_with_params(x, p)
    assert q.dtype == np.int8
    assert list(q) == [-127, 0, round(1.0 / (2.54 / 127)), round(2.0 / (2.54 / 127))]
    assert quantize_with_params(x, calibrate_per_tensor(x, 12)).dtype == np.int16


def test_asymmetric_calibration_uses_the_whole_code_range():
    x = np.array([0.5, 1.0, 3.0])  # range widened to include 0: [0, 3]
    p = calibrate_per_tensor(x, 8, "asymmetric")
    assert p.scales[0] == pytest.approx(3 / 255)
    assert p.zero_points[0] == 0
    q = quantize_with_params(x, p)
    assert q.dtype == np.uint8 and q[-1] == 255
    y = np.array([-1.0, 3.0])
    p = calibrate_per_tensor(y, 8, "asymmetric")
    assert p.scales[0] == pytest.approx(4 / 255)
    assert p.zero_points[0] == round(1 / (4 / 255))
    np.testing.assert_allclose(dequantize_with_params(quantize_with_params(y, p), p), y,
                               atol=p.scales[0] / 2)


def test_per_channel_uses_rows():
    x = np.array([[1.0, -0.5], [100.0, 20.0], [0.0, 0.0]])
    p = calibrate_per_channel(x, 3, 8, "symmetric")
    np.testing.assert_allclose(p.scales[:2], [1 / 127, 100 / 127])
    assert theoretical_max_error(p) == pytest.approx(100 / 254)
    assert quantization_mse(x, p) < quantization_mse(x, calibrate_per_tensor(x))


def test_analyze_error_matches_direct_computation():
    rng = np.random.default_rng(7)
    x = rng.normal(size=500)
    x[0] = 9.0  # an outlier
    p = calibrate_per_tensor(x, 4, "symmetric")
    stats = analyze_error(x, p, outlier_threshold=3.0)
    s = np.max(np.abs(x)) / 7
    deq = np.clip(np.round(x / s), -7, 7) * s
    err = deq - x
    assert stats.num_samples == 500
    assert stats.mse == pytest.approx(np.mean(err**2))
    assert stats.mae == pytest.approx(np.mean(np.abs(err)))
    assert stats.max_error == pytest.approx(np.max(np.abs(err)))
    assert stats.sqnr_db == pytest.approx(10 * np.log10(np.mean(x**2) / np.mean(err**2)))
    expected_rate = np.mean(np.abs(x - x.mean()) > 3 * x.std())
    assert stats.outlier_rate == pytest.approx(expected_rate)
    assert stats.outlier_rate > 0


def test_empty_and_clipped_inputs():
    stats = analyze_error(np.array([]), calibrate_per_tensor(np.array([])))
    assert stats.num_samples == 0 and stats.mse == 0 and stats.sqnr_db == math.inf
    p = calibrate_per_tensor(np.array([1.0]))
    x = np.array([0.5, 4.0])
    assert not error_within_bounds(x, p)
    assert analyze_error(x, p).clipped_rate == 0.5
    assert analyze_error(x, p).max_error == pytest.approx(3.0)


def test_theory():
    assert theoretical_sqnr(8) == pytest.approx(49.92)
    assert theoretical_sqnr(4) == pytest.approx(25.84)
    # A full-scale uniform signal reaches 6.02 dB per bit (1.76 dB less than a sine's offset).
    x = np.linspace(-1, 1, 200001)
    stats = analyze_error(x, calibrate_per_tensor(x, 8))
    assert stats.sqnr_db == pytest.approx(10 * math.log10(254**2), abs=0.05)


def test_scale_sensitivity_is_smallest_near_a_good_scale():
    x = np.random.default_rng(2).uniform(-1, 1, size=5000)
    good = calibrate_per_tensor(x, 4)
    small = good.with_scales(good.scales * 0.3)  # clips heavily: growing the scale helps
    assert scale_sensitivity(x, small).sensitivity < 0
    assert abs(scale_sensitivity(x, good).sensitivity) < abs(scale_sensitivity(x, small).sensitivity)
    sens = scale_sensitivity(x, good, delta=0.05)
    assert sens.base_mse == pytest.approx(quantization_mse(x, good))
    assert sens.mse_up == pytest.approx(quantization_mse(x, good.with_scales(good.scales * 1.05)))
    assert sens.sensitivity == pytest.approx((sens.mse_up - sens.mse_down) / 0.1)


def test_with_scales_keeps_the_low_end_of_an_asymmetric_range():
    p = calibrate_per_tensor(np.array([-1.0, 3.0]), 8, "asymmetric")
    wider = p.with_scales(p.scales * 2)
    low = (0 - p.zero_points[0]) * p.scales[0]
    assert (0 - wider.zero_points[0]) * wider.scales[0] == pytest.approx(low, abs=wider.scales[0])


def test_bit_width_errors_per_channel():
    x = np.random.default_rng(5).normal(size=(4, 50)) * np.array([[1], [0.1], [0.01], [10]])
    out = bit_width_errors(x, bits=(2, 4, 8), granularity="per_channel", num_channels=4)
    assert list(out) == [2, 4, 8]
    assert out[2].mse > out[4].mse > out[8].mse


def test_clipping_study_on_a_single_large_outlier():
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.normal(size=9999), [40.0]])
    impact = clipping_study(x, 99.9, bits=4)
    assert impact.clipped_rate == pytest.approx(10 / 10000)
    assert impact.scale_full == pytest.approx(40 / 7)
    assert impact.scale_clipped == pytest.approx(np.percentile(np.abs(x), 99.9) / 7)
    # At 4 bits the full-range scale rounds almost everything to 0; clipping wins.
    assert impact.clipping_helps
    assert impact.sqnr_clipped_db > impact.sqnr_full_db


def test_extreme_magnitudes_keep_the_sqnr_finite_and_exact():
    x = np.array([1e200, -1e200, 3.0])
    stats = analyze_error(x, calibrate_per_tensor(x, 8))
    assert stats.mse == pytest.approx(3.0)  # only 3.0 is off the grid, and rounds to 0
    expected = 20 * math.log10(1e200 * math.sqrt(2 / 3) / math.sqrt(3.0))
    assert stats.sqnr_db == pytest.approx(expected)
    tiny = np.array([1e-200, -2.5e-201])
    assert math.isfinite(analyze_error(tiny, calibrate_per_tensor(tiny, 4)).sqnr_db)
