"""One number format (tracker/cli/numbers.py): what its rules promise, for any number."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from tracker.cli.numbers import THIN, aligned, number

# (below 1e307: the largest doubles round up past the largest double when written with 4 digits)
finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e307, max_value=1e307)


def test_the_examples_of_the_issue() -> None:
    assert [number(v) for v in (0.002945, 2.467e-9, 3e-4, 0.135, 22528, 4.0, -0.001, 1.0625)] == [
        "0.002945", "2.467e-9", "3e-4", "0.135", f"22{THIN}528", "4", "-0.001", "1.063"]
    assert [number(v) for v in (math.nan, math.inf, -math.inf, True, None)] == ["NaN", "inf", "-inf", "yes", "-"]


@given(finite)
def test_a_number_reads_back_within_its_significant_digits(v: float) -> None:
    text = number(v)
    back = float(text.replace(THIN, ""))
    if v == int(v) and abs(v) < 1e15:
        assert back == v  # whole values whole
    elif abs(v) >= 1e4 and abs(v) < 1e9:
        assert abs(back - v) <= 0.5  # rounded to a whole number
    else:
        assert math.isclose(back, v, rel_tol=5e-4)


@given(finite)
def test_no_trailing_zeros_and_exponents_without_padding(v: float) -> None:
    text = number(v)
    mant = text.split("e")[0]
    if "." in mant:
        assert not mant.endswith("0") and not mant.endswith(".")
    if "e" in text:
        assert re.fullmatch(r"-?[1-9](\.[0-9]*[1-9])?e-?[1-9][0-9]*", text), text
        assert abs(v) < 1e-3 or abs(v) >= 1e9


@given(st.lists(finite, min_size=1, max_size=20))
def test_aligned_keeps_the_digits_and_lines_up_decimal_points(values: list[float]) -> None:
    texts = [number(v) for v in values]
    out = aligned(texts)
    assert [t.rstrip() for t in out] == texts
    fixed = [t for t, src in zip(out, texts, strict=True) if "e" not in src]
    if any("." in t for t in fixed):
        # right-aligned, the decimal point (or where it would be) is the same distance from the end
        ends = {len(t) - (t.index(".") if "." in t else len(t.rstrip())) for t in fixed}
        assert len(ends) == 1, out
