"""Properties of the quantisation error helpers, checked with hypothesis."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tracker_quant_analysis import (
    analyze_error,
    bit_width_errors,
    calibrate_per_channel,
    calibrate_per_tensor,
    clipping_study,
    error_within_bounds,
    fake_quantize,
    outlier_rate,
    quantize_with_params,
    scale_sensitivity,
    theoretical_max_error,
)

FAST = settings(max_examples=60, deadline=None)

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
tensors = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=10),
                     elements=finite)
modes = st.sampled_from(["symmetric", "asymmetric"])
bit_widths = st.integers(2, 16)


@FAST
@given(tensors)
def test_per_tensor_symmetric_int8_error_within_half_a_scale(x):
    params = calibrate_per_tensor(x, 8, "symmetric")
    err = np.abs(fake_quantize(x, params) - x)
    assert err.max() <= params.scales[0] / 2 * (1 + 1e-9)
    assert error_within_bounds(x, params)


@FAST
@given(tensors, bit_widths, modes)
def test_every_calibrated_configuration_is_within_its_bound(x, bits, mode):
    per_tensor = calibrate_per_tensor(x, bits, mode)
    per_channel = calibrate_per_channel(x, x.shape[0], bits, mode)
    for params in (per_tensor, per_channel):
        stats = analyze_error(x, params)
        assert stats.max_error <= theoretical_max_error(params) * (1 + 1e-9)
        assert stats.clipped_rate == 0
        q = quantize_with_params(x, params)
        qmin, qmax = params.qrange
        assert q.shape == x.shape and q.min() >= qmin and q.max() <= qmax


@FAST
@given(tensors, modes)
def test_eight_bits_have_a_smaller_bound_and_stay_within_the_four_bit_one(x, mode):
    four, eight = calibrate_per_tensor(x, 4, mode), calibrate_per_tensor(x, 8, mode)
    assert theoretical_max_error(eight) <= theoretical_max_error(four)
    stats = bit_width_errors(x, mode=mode)
    assert stats[8].max_error <= theoretical_max_error(four) * (1 + 1e-9)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(64, 400), st.floats(1e-3, 1e3), modes,
       st.sampled_from(["normal", "uniform", "laplace"]))
def test_eight_bits_never_worse_than_four_on_real_valued_data(seed, n, magnitude, mode, dist):
    rng = np.random.default_rng(seed)
    x = getattr(rng, dist)(size=n) * magnitude
    stats = bit_width_errors(x, bits=(4, 8), mode=mode)
    assert stats[8].mse <= stats[4].mse
    assert stats[8].sqnr_db >= stats[4].sqnr_db


def test_a_tensor_on_the_coarse_grid_is_exact_at_four_bits():
    # Why the MSE property above needs real-valued data: multiples of max/7 are
    # exactly on the 4-bit grid but not on the 8-bit one (max/127).
    stats = bit_width_errors(np.array([7.0, 1.0, -3.0]))
    assert stats[4].mse == 0
    assert stats[8].mse > 0


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(32, 64),
       st.lists(st.integers(-4, 0), min_size=2, max_size=5, unique=True), st.integers(2, 8),
       modes)
def test_per_channel_never_worse_than_per_tensor_on_channel_scaled_data(
        seed, per_channel, exponents, bits, mode):
    # Channel-scaled: each channel has its own power-of-ten magnitude.
    rng = np.random.default_rng(seed)
    channels = len(exponents)
    scales = 10.0 ** np.array(exponents)[:, None]
    x = rng.normal(size=(channels, per_channel)) * scales
    pt = analyze_error(x, calibrate_per_tensor(x, bits, mode))
    pc = analyze_error(x, calibrate_per_channel(x, channels, bits, mode))
    assert pc.mse <= pt.mse
    assert pc.max_error <= theoretical_max_error(calibrate_per_tensor(x, bits, mode)) * (1 + 1e-9)


@FAST
@given(tensors, st.floats(0.01, 10))
def test_outlier_rate_is_a_fraction(x, threshold):
    rate = outlier_rate(x, threshold)
    assert 0 <= rate <= 1
    assert 0 <= analyze_error(x, calibrate_per_tensor(x), threshold).outlier_rate <= 1


@FAST
@given(tensors, bit_widths, modes, st.floats(1e-4, 0.5))
def test_scale_sensitivity_is_finite(x, bits, mode, delta):
    for params in (calibrate_per_tensor(x, bits, mode),
                   calibrate_per_channel(x, x.shape[0], bits, mode)):
        sens = scale_sensitivity(x, params, delta)
        assert all(math.isfinite(v) for v in (sens.base_mse, sens.mse_down, sens.mse_up,
                                               sens.sensitivity))
        assert sens.base_mse >= 0


@FAST
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=8),
                  elements=st.sampled_from([0.0, -0.0])), bit_widths, modes)
def test_zeros_quantise_exactly(x, bits, mode):
    for params in (calibrate_per_tensor(x, bits, mode),
                   calibrate_per_channel(x, x.shape[0], bits, mode)):
        assert np.all(fake_quantize(x, params) == 0)
        stats = analyze_error(x, params)
        assert stats.mse == 0 and stats.max_error == 0 and stats.sqnr_db == math.inf


@FAST
@given(tensors, bit_widths, modes)
def test_zero_entries_stay_exactly_zero(x, bits, mode):
    x = x.copy()
    x.flat[::3] = 0
    for params in (calibrate_per_tensor(x, bits, mode),
                   calibrate_per_channel(x, x.shape[0], bits, mode)):
        assert np.all(fake_quantize(x, params).flat[::3] == 0)


@FAST
@given(tensors, st.floats(50, 100), modes)
def test_clipping_study_is_consistent(x, percentile, mode):
    impact = clipping_study(x, percentile, 8, mode)
    assert impact.clip_low <= impact.clip_high
    assert 0 <= impact.clipped_rate <= 1
    assert impact.scale_clipped <= impact.scale_full * (1 + 1e-12)
    assert impact.mse_full >= 0 and impact.mse_clipped >= 0
