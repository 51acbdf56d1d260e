"""layer_record() and the validators of the ptq.layer class."""

import attrs
import numpy as np
import pytest
from tracker_ptq import SCHEME_PER_CHANNEL, LayerRecord, layer_record, quantize

GOOD = dict(name="fc1", shape=[4, 3], scale=0.01, w_min=-1.0, w_max=1.27, max_abs_err=0.005,
            mse=1e-5, bytes_fp32=48, bytes_int8=16)


def test_layer_record_measures_against_the_original():
    rng = np.random.default_rng(3)
    w, b = rng.normal(size=(6, 5)), rng.normal(size=6)
    qw = quantize("fc", w, b)
    rec = layer_record(qw, w)
    err = np.abs(qw.q.astype(np.float64) * float(qw.scales[0]) - w)
    assert rec.name == "fc" and rec.shape == [6, 5]
    assert rec.scale == float(qw.scales[0])
    assert rec.w_min == w.min() and rec.w_max == w.max()
    assert rec.max_abs_err == pytest.approx(err.max(), rel=1e-12)
    assert rec.mse == pytest.approx(np.mean(err**2), rel=1e-12)
    assert rec.bytes_fp32 == 4 * 30 and rec.bytes_int8 == 30
    assert rec.scheme == "symmetric_per_tensor_int8"
    assert rec.compression_ratio == 4.0
    assert rec.max_abs_err <= rec.error_bound


def test_layer_record_of_per_channel_and_conv_weights():
    w = np.random.default_rng(4).normal(size=(3, 2, 2, 2))
    rec = layer_record(quantize("conv", w, per_channel=True), w)
    assert rec.shape == [3, 8]
    assert rec.scheme == SCHEME_PER_CHANNEL
    assert rec.scale == pytest.approx(np.abs(w).reshape(3, -1).max(axis=1).max() / 127, rel=1e-6)
    assert layer_record(quantize("v", np.ones(5)), np.ones(5)).shape == [1, 5]


def test_layer_record_refuses_a_different_original():
    qw = quantize("fc", np.ones((2, 2)))
    with pytest.raises(ValueError, match="expected shape"):
        layer_record(qw, np.ones((2, 3)))


def test_good_values_construct():
    rec = LayerRecord(**GOOD)
    assert rec.scheme == "symmetric_per_tensor_int8"
    assert attrs.asdict(rec)["shape"] == [4, 3]


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("shape", [4], "expected 2 items, given 1"),
    ("shape", [4, 0], "item 1: expected an int > 0, given 0"),
    ("shape", [4, 3, 2], "expected 2 items, given 3"),
    ("scale", 0.0, "expected a number > 0, given 0.0"),
    ("scale", -1.0, "expected a number > 0, given -1.0"),
    ("scale", float("inf"), "expected a finite number, given inf"),
    ("w_min", float("nan"), "expected a finite number, given nan"),
    ("max_abs_err", -0.1, "expected a number >= 0, given -0.1"),
    ("mse", float("nan"), "expected a number >= 0, given nan"),
    ("bytes_fp32", 0, "expected an int > 0, given 0"),
    ("bytes_int8", -5, "expected an int > 0, given -5"),
    ("name", "", "expected a non-empty string, given ''"),
])
def test_validators_refuse_bad_values(field, value, expected):
    with pytest.raises(ValueError, match=expected) as info:
        LayerRecord(**{**GOOD, field: value})
    assert "given" in str(info.value)


def test_w_min_above_w_max_names_the_field():
    with pytest.raises(ValueError, match=r"^w_min: expected at most w_max"):
        LayerRecord(**{**GOOD, "w_min": 2.0})
