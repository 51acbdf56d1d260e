"""Property tests of the rule grammar: what a condition says is what it checks."""

from __future__ import annotations

import math
import operator

from hypothesis import given
from hypothesis import strategies as st

from tracker.alerts.rules import parse_condition, parse_duration

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_./-]{0,20}", fullmatch=True)
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
OPS = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}


@given(NAMES, st.sampled_from(sorted(OPS)), FINITE, st.floats(allow_nan=True, allow_infinity=True),
       st.sampled_from(["", " ", "  "]))
def test_a_threshold_checks_what_it_says(name: str, op: str, x: float, v: float, space: str) -> None:
    cond = parse_condition(f"{name}{space}{op}{space}{x!r}")
    assert (cond.kind, cond.metric, cond.op, cond.value) == ("threshold", name, op, x)
    assert cond.holds(v) == (not math.isnan(v) and OPS[op](v, x))
    assert not cond.holds(True) and not cond.holds("1")   # only numbers are values


@given(NAMES, st.floats(allow_nan=True, allow_infinity=True))
def test_is_nan_holds_only_for_nan(name: str, v: float) -> None:
    cond = parse_condition(f"{name} is nan")
    assert cond.metric == name and cond.holds(v) == math.isnan(v)


@given(st.integers(0, 10**6), st.sampled_from([("s", 1), ("m", 60), ("h", 3600)]))
def test_durations_round_trip(n: int, unit: tuple[str, int]) -> None:
    assert parse_duration(f"{n}{unit[0]}") == n * unit[1]
    assert parse_condition(f"no record for {n}{unit[0]}").seconds == n * unit[1]
