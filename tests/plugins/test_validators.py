"""tracker.validators: the common field validators offered to plugin authors."""

from __future__ import annotations

import math

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracker
from tracker import validators as v


@attrs.frozen(kw_only=True)
class Sample:
    name: str = attrs.field(validator=v.non_empty)
    count: int = attrs.field(default=0, validator=v.non_negative)
    bits: int = attrs.field(default=8, validator=v.in_range(2, 16))
    share: float = attrs.field(default=0.5, validator=v.fraction)
    loss: float = attrs.field(default=0.0, validator=v.at_least(0, nan_ok=True))
    scale: float = attrs.field(default=1.0, validator=[v.finite, v.positive])
    sqnr: float = attrs.field(default=0.0, validator=v.not_nan)
    mode: str = attrs.field(default="a", validator=v.one_of("a", "b"))
    n_fft: int = attrs.field(default=8, validator=v.power_of_two)
    shape: list[int] = attrs.field(factory=lambda: [1, 1],
                                   validator=[v.length(2), v.each(v.positive)])


@pytest.mark.parametrize(("changes", "message"), [
    ({"name": ""}, "expected a non-empty string, given ''"),
    ({"count": -1}, "expected an int >= 0, given -1"),
    ({"bits": 17}, "expected an int in [2, 16], given 17"),
    ({"share": 1.5}, "expected a number in [0, 1], given 1.5"),
    ({"share": math.nan}, "expected a number in [0, 1], given nan"),
    ({"loss": -0.5}, "expected a number >= 0 (or NaN), given -0.5"),
    ({"scale": math.inf}, "expected a finite number, given inf"),
    ({"scale": 0.0}, "expected a number > 0, given 0.0"),
    ({"sqnr": math.nan}, "expected a number other than NaN (infinities allowed), given nan"),
    ({"mode": "c"}, "expected one of 'a', 'b', given 'c'"),
    ({"n_fft": 12}, "expected a power of two >= 2, given 12"),
    ({"n_fft": 1}, "expected a power of two >= 2, given 1"),
    ({"shape": [1, 2, 3]}, "expected 2 items, given 3: [1, 2, 3]"),
    ({"shape": [4, 0]}, "item 1: expected an int > 0, given 0"),
])
def test_messages_say_expected_and_given(changes: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        Sample(**{"name": "x", **changes})
    assert str(err.value) == message


def test_good_values_and_allowed_specials_pass() -> None:
    Sample(name="x", loss=math.nan, sqnr=math.inf, share=0, count=0, n_fft=2, shape=[3, 4])
    Sample(name="x", sqnr=-math.inf, bits=2, mode="b")


def test_schema_error_names_schema_field_expected_and_given(make_tracker_host, tracker_store) -> None:
    class Plugin:
        @tracker.hookimpl
        def tracker_schemas(self) -> list[tracker.Schema]:
            return [tracker.Schema("t.sample", Sample)]

    make_tracker_host(Plugin(), names=["t"])
    with tracker.start_run() as run, pytest.raises(tracker.SchemaError) as err:
        run.log_record("t.sample", name="x", count=-2, mode="z")
    text = str(err.value)
    assert "schema 't.sample'" in text
    assert "count: expected an int >= 0, given -2" in text
    assert "mode: expected one of 'a', 'b', given 'z'" in text


@given(st.floats(allow_nan=True), st.floats(-10, 10), st.floats(-10, 10))
def test_in_range_agrees_with_the_comparison(x: float, a: float, b: float) -> None:
    low, high = min(a, b), max(a, b)
    check = v.in_range(low, high)
    if low <= x <= high:
        check(None, None, x)
    else:
        with pytest.raises(ValueError, match="^expected a number in"):
            check(None, None, x)


@given(st.integers(-5, 2**20))
def test_power_of_two_agrees_with_bit_count(n: int) -> None:
    if n >= 2 and bin(n).count("1") == 1:
        v.power_of_two(None, None, n)
    else:
        with pytest.raises(ValueError, match="power of two"):
            v.power_of_two(None, None, n)


def test_builders_refuse_no_choices() -> None:
    with pytest.raises(ValueError, match="one_of: expected at least one choice"):
        v.one_of()
    with pytest.raises(ValueError, match="each: expected at least one validator"):
        v.each()


def test_public_and_exported() -> None:
    assert "validators" in tracker.__all__
    assert all(callable(getattr(v, name)) for name in v.__all__ if name != "Validator")
