"""Downsampling and cursors (tracker.ui.series): properties over random series."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracker import MISSING
from tracker.ui.series import CursorError, decode_cursor, downsample, encode_cursor, present, series_json

values = st.one_of(st.floats(-1e6, 1e6), st.just(math.nan), st.just(math.inf), st.just(-math.inf))


@settings(max_examples=100, deadline=None)
@given(ys=st.lists(values, min_size=0, max_size=400), max_points=st.integers(1, 120))
def test_downsample_keeps_bounds_and_extremes(ys, max_points):
    y = np.array(ys, dtype=np.float64)
    x = np.arange(y.size, dtype=np.float64) * 2
    xs, mid, lo, hi = downsample(x, y, max_points)
    assert len(xs) == len(mid) == len(lo) == len(hi) == min(len(ys), max_points)
    finite = y[np.isfinite(y)]
    if len(ys) <= max_points:
        assert np.array_equal(xs, x)
        assert np.array_equal(mid, np.where(np.isfinite(y), y, np.nan), equal_nan=True)
    ok = ~np.isnan(mid)
    assert np.all(lo[ok] <= mid[ok]) and np.all(mid[ok] <= hi[ok])
    assert np.array_equal(np.isnan(lo), np.isnan(mid)) and np.array_equal(np.isnan(hi), np.isnan(mid))
    if finite.size:
        assert np.nanmin(lo) == finite.min() and np.nanmax(hi) == finite.max()
    else:
        assert np.isnan(mid).all()
    # each point's x is its bucket's first x, in order
    assert np.all(np.diff(xs) > 0)
    assert set(xs.tolist()) <= set(x.tolist())
    if len(ys) > max_points >= 3:
        # the first and the last record are points of their own, as logged
        first, last = (v if math.isfinite(v) else math.nan for v in (ys[0], ys[-1]))
        assert (xs[0], xs[-1]) == (x[0], x[-1])
        assert np.array_equal([mid[0], lo[0], hi[0]], [first] * 3, equal_nan=True)
        assert np.array_equal([mid[-1], lo[-1], hi[-1]], [last] * 3, equal_nan=True)


def test_a_spike_survives_and_buckets_are_consecutive():
    y = np.ones(10_000)
    y[6_789] = 1e9
    y[-1] = 0.5
    xs, mid, lo, hi = downsample(np.arange(10_000), y, 100)
    # step 0 alone, steps 1..9998 in 98 even buckets, step 9999 alone (where the run ended)
    assert xs.tolist() == [0, *(1 + k * 9998 // 98 for k in range(98)), 9999]
    i = int(np.searchsorted(xs, 6_789, side="right")) - 1
    assert hi.max() == 1e9 and hi[i] == 1e9 and lo[i] == 1.0
    size = xs[i + 1] - xs[i]
    assert mid[i] == pytest.approx((size - 1 + 1e9) / size)
    assert (xs[-1], mid[-1], lo[-1], hi[-1]) == (9999, 0.5, 0.5, 0.5)


def test_series_json_nulls_for_gaps_and_ints_for_steps():
    out = series_json(np.array([0, 1, 2]), np.array([1.0, math.nan, math.inf]), 10, steps=True)
    assert out == {"x": [0, 1, 2], "y": [1.0, None, None], "y_min": [1.0, None, None], "y_max": [1.0, None, None]}
    assert all(type(v) is int for v in out["x"])


def test_present_tells_missing_from_a_logged_nan():
    col = np.array([1.0, MISSING, math.nan])
    assert present(col).tolist() == [True, False, True]


@given(st.dictionaries(st.from_regex(r"[A-Za-z0-9_.-]{1,40}\.jsonl", fullmatch=True), st.integers(0, 2**53)))
def test_cursor_round_trip(offsets):
    assert decode_cursor(encode_cursor(offsets)) == offsets


@pytest.mark.parametrize("bad", ["", "2.abc", "1.", "1.%%%", "1.YWJj", "1.YTp4", "x" * 200_000])
def test_bad_cursors(bad):
    if bad == "1.":
        assert decode_cursor(bad) == {}
        return
    with pytest.raises(CursorError):
        decode_cursor(bad)
