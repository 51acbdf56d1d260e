"""Calibrator: running ranges, scales and fake quantisation."""

import numpy as np
import pytest
from tracker_ptq import MIN_SCALE, Calibrator


def test_ranges_cover_every_batch():
    cal = Calibrator()
    rng = np.random.default_rng(1)
    batches = [rng.normal(size=(8, 4)) * k for k in (1, 5, 2)]
    for b in batches:
        cal.observe("h1", b)
        cal.observe("h2", np.maximum(b, 0))
    everything = np.concatenate(batches)
    assert cal.range("h1") == (everything.min(), everything.max())
    assert cal.range("h2") == (0.0, everything.max())
    assert cal.names == ["h1", "h2"] and len(cal) == 2 and "h1" in cal
    assert cal.count("h1") == 96
    peak = max(abs(everything.min()), everything.max())
    assert cal.scale("h1") == pytest.approx(peak / 127)
    assert cal.scales()["h2"] == pytest.approx(everything.max() / 127)


def test_fake_quantize_clips_to_the_calibrated_range():
    cal = Calibrator()
    cal.observe("x", np.array([-1.0, 0.5, 1.27]))
    s = 1.27 / 127
    out = cal.fake_quantize("x", np.array([0.014, 5.0, -5.0]))
    np.testing.assert_allclose(out, [1 * s, 127 * s, -127 * s])


def test_empty_batches_and_zero_ranges():
    cal = Calibrator()
    cal.observe("z", np.array([]))
    assert "z" not in cal
    cal.observe("z", np.zeros(3))
    assert cal.scale("z") == MIN_SCALE
    assert np.all(cal.fake_quantize("z", np.zeros(4)) == 0)


def test_errors_and_reset():
    cal = Calibrator()
    with pytest.raises(KeyError, match="never observed"):
        cal.range("nope")
    with pytest.raises(ValueError, match="finite"):
        cal.observe("x", np.array([1.0, np.nan]))
    cal.observe("x", np.ones(2))
    cal.reset()
    assert len(cal) == 0 and cal.ranges() == {}
