"""Property tests of define_metric's axis (``x=defined``) and of array-likes as JSON values."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tracker import MISSING
from tracker.core.values import check_json
from tracker.ui.logged import axis_column

# A column as the reader gives it: logged values (NaN included) and MISSING where a record lacks the metric.
cells = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


@given(st.lists(cells, max_size=60))
def test_axis_column_is_the_last_logged_value_at_or_before_each_record(values: list[float | None]) -> None:
    column = np.array([MISSING if v is None else v for v in values], dtype=np.float64)
    got = axis_column(column)
    last = math.nan
    for i, v in enumerate(values):
        if v is not None:
            last = v
        assert got[i] == last or (math.isnan(got[i]) and math.isnan(last)), (i, values)
        # MISSING never leaks out as a value (it is a NaN with a payload of its own)
        assert got[i].view(np.uint64) != np.float64(MISSING).view(np.uint64) or v is not None


@given(hnp.arrays(dtype=st.sampled_from([np.float64, np.float32, np.int32, np.bool_]),
                  shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)))
def test_arrays_are_json_as_their_nested_lists(a: np.ndarray) -> None:
    got = check_json(a)
    assert type(got) is list and len(got) == a.shape[0]
    np.testing.assert_array_equal(np.array(got, dtype=a.dtype), a)  # NaN equal to NaN, every value kept
