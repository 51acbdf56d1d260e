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


METRIC = st.sampled_from(["loss", "seq", "v", "w", "val/loss", 'odd"name'])
VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**15, 10**15), st.booleans())


@given(METRIC, st.lists(st.tuples(VALUES, st.booleans()), max_size=30), st.sampled_from(sorted(OPS) + ["nan"]),
       FINITE)
def test_the_watchers_byte_scan_finds_what_parsing_finds(metric: str, rows: list, op: str, x: float) -> None:
    """The watcher finds a metric's values by their bytes; parsing every line finds the same first hit."""
    from tracker.alerts.rules import Condition, Rule
    from tracker.alerts.watch import _RunState, _scan
    from tracker.core.format import decode_nonfinite, encode_line, encode_nonfinite, event, parse_line

    lines = []
    for i, (value, other) in enumerate(rows):
        # Every other record holds the same name in another schema's fields, which must not count.
        schema, data = (("phase.step", {metric: value, "loss": value}) if other
                        else ("metrics", {"acc": 1.0, metric: value}))
        lines.append(encode_line(event("record", schema, i, 1.7e9 + i, "vm-1-abcdef", i + 2, encode_nonfinite(data))))
    chunk = b"".join(lines)
    cond = parse_condition(f"{metric} is nan" if op == "nan" else f"{metric} {op} {x!r}") if '"' not in metric \
        else None
    if cond is None:  # a name the grammar cannot write (it has a quote): the scan is still exact
        cond = Condition(text="t", kind="nan", metric=metric) if op == "nan" else \
            Condition(text="t", kind="threshold", metric=metric, op=op, value=x)
    rule = Rule(index=1, condition=cond)
    st_ = _RunState(status="running")
    _scan(chunk, st_, [rule])
    expected = None
    for line in lines:
        ev = parse_line(line[:-1])
        if ev["schema"] != "metrics":
            continue
        value = decode_nonfinite(ev["data"][metric])
        if not isinstance(value, bool) and cond.holds(value):
            expected = ev["step"]
            break
    got = st_.hits.get(rule.key)
    assert (got[1] if got else None) == expected
