"""quantize(), QuantizedWeights and FP16 conversion."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tracker_ptq import (
    MIN_SCALE,
    SCHEME_PER_CHANNEL,
    SCHEME_PER_TENSOR,
    from_fp16,
    quantize,
    to_fp16,
)

FAST = settings(max_examples=60, deadline=None)

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=32)
matrices = hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, max_side=12),
                      elements=finite)


@FAST
@given(matrices)
def test_per_tensor_error_within_half_a_scale(w):
    qw = quantize("w", w)
    err = np.abs(qw.dequantize(np.float64) - w.astype(np.float64))
    assert qw.q.dtype == np.int8
    assert np.all(np.abs(qw.q.astype(int)) <= 127)
    assert err.max() <= qw.scale / 2 * (1 + 1e-9)


@FAST
@given(matrices)
def test_per_channel_error_within_half_of_each_row_scale(w):
    qw = quantize("w", w, per_channel=True)
    err = np.abs(qw.dequantize(np.float64) - w.astype(np.float64))
    assert qw.scheme == SCHEME_PER_CHANNEL
    assert qw.scales.shape == (w.shape[0],)
    assert np.all(err.max(axis=1) <= qw.scales.astype(np.float64) / 2 * (1 + 1e-9))


@FAST
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.sampled_from([0.0, -0.0])))
def test_zeros_quantise_exactly(w):
    qw = quantize("zeros", w)
    assert qw.scale == pytest.approx(MIN_SCALE, rel=1e-6)
    assert np.all(qw.q == 0)
    assert np.all(qw.dequantize() == 0)


@FAST
@given(matrices)
def test_zero_entries_stay_exactly_zero(w):
    w = w.copy()
    w[::2] = 0
    for per_channel in (False, True):
        deq = quantize("w", w, per_channel=per_channel).dequantize()
        assert np.all(deq[::2] == 0)


def test_scale_is_max_abs_over_127_and_extremes_are_exact():
    w = np.array([[-2.54, 0.0, 1.27], [0.5, -0.25, 2.0]])
    qw = quantize("w", w)
    assert qw.scale == pytest.approx(2.54 / 127, rel=1e-7)
    assert qw.q[0, 0] == -127
    assert qw.q[0, 2] == round(1.27 / (2.54 / 127))
    assert qw.scheme == SCHEME_PER_TENSOR


def test_given_scale_clips_beyond_127_steps():
    qw = quantize("w", np.array([0.5, 10.0]), scale=0.01)
    assert list(qw.q) == [50, 127]
    assert qw.dequantize(np.float64)[1] == pytest.approx(1.27)


def test_sizes_and_compression_ratio():
    w, b = np.ones((10, 20)), np.ones(10)
    qw = quantize("fc", w, b)
    assert qw.original_size_bytes == 4 * 200
    assert qw.size_bytes == 200
    assert qw.compression_ratio == 4.0
    assert qw.overhead_bytes == 4 * 1 + 4 * 10
    pc = quantize("fc", w, b, per_channel=True)
    assert pc.size_bytes == 200 and pc.compression_ratio == 4.0
    assert pc.overhead_bytes == 4 * 10 + 4 * 10
    assert pc.bias.dtype == np.float32


def test_per_channel_scales_follow_rows():
    w = np.array([[1.0, -0.5], [100.0, 3.0], [0.0, 0.0]])
    qw = quantize("w", w, per_channel=True)
    np.testing.assert_allclose(qw.scales, [1 / 127, 100 / 127, MIN_SCALE], rtol=1e-6)
    assert qw.scale == pytest.approx(100 / 127, rel=1e-6)
    np.testing.assert_allclose(qw.dequantize(np.float64)[0], [1.0, -0.5], atol=1 / 254)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"weights": np.array([1.0, np.nan])}, "finite"),
    ({"weights": np.array([1.0, np.inf])}, "finite"),
    ({"weights": np.array(["a"])}, "numeric"),
    ({"weights": np.ones(4), "per_channel": True}, "at least 2 dimensions"),
    ({"weights": np.ones((3, 2)), "scale": 0.0}, "positive"),
    ({"weights": np.ones((3, 2)), "scale": [1.0, 2.0], "per_channel": True}, "1 or 3 values"),
    ({"weights": np.full(2, 1e300)}, "float32"),
])
def test_bad_input_is_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        quantize("w", **kwargs)


def test_fp16_round_trip_and_range():
    v = np.array([0.1, -2.5, 65504.0, np.inf], dtype=np.float32)
    h = to_fp16(v)
    assert h.dtype == np.float16
    back = from_fp16(h)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back[1:], v[1:])
    assert abs(back[0] - 0.1) <= 0.1 * 2**-11
    with pytest.raises(ValueError, match="float16 range"):
        to_fp16(np.array([70000.0]))
    with pytest.raises(ValueError, match="float16 array"):
        from_fp16(np.ones(2, dtype=np.float32))
