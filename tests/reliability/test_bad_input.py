"""Bad input, fuzzed: every ``log`` / ``log_record`` call stores exactly what it was given or writes nothing.

Each example goes to a fresh run. The test keeps its own model of what the
contract accepts (DESIGN.md: finite floats, NaN, infinities, bools, ints within
±2**53, numpy numbers and 0-d arrays as the matching Python numbers, str keys);
an accepted call must read back equal (NaN equal to NaN, -0.0 keeping its sign,
bool, int and float kept apart), a refused one must raise SchemaError or
TypeError and leave the segment exactly as it was.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import math
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracker
from tests.reliability.support import local_host, same

MAX_INT = 2**53
REFUSED = object()
EXAMPLES = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                            HealthCheck.too_slow])

# --- what the contract says ------------------------------------------------------------------------


def unwrap(v: Any) -> Any:
    """A numpy number (scalar or 0-d array) as its Python number; REFUSED for other numpy values."""
    if isinstance(v, (np.generic, np.ndarray)):
        if v.ndim != 0 or v.dtype.kind not in "biuf":
            return REFUSED
        u = v.item()
        return u if type(u) in (bool, int, float) else REFUSED
    return v


def metric_value(v: Any) -> Any:
    u = unwrap(v)
    if type(u) in (bool, float) or (type(u) is int and -MAX_INT <= u <= MAX_INT):
        return u
    return REFUSED


def good_str(s: Any) -> bool:
    if type(s) is not str:
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def metric_key(k: Any) -> bool:
    return good_str(k) and k != "" and k not in ("step", "time")


def expected_step(step: Any) -> Any:
    if step is None:
        return None
    u = unwrap(step)
    if type(u) is int and -MAX_INT <= u <= MAX_INT:
        return u
    return REFUSED


def expected_metrics(values: Any) -> Any:
    if not isinstance(values, Mapping):
        return REFUSED
    out = {}
    for k, v in values.items():
        u = metric_value(v)
        if not metric_key(k) or u is REFUSED:
            return REFUSED
        out[k] = u
    return out


def as_float(v: Any) -> Any:
    u = unwrap(v)
    if type(u) is float:
        return u
    if type(u) is int and -MAX_INT <= u <= MAX_INT:
        return float(u)
    return REFUSED


def as_int(v: Any) -> Any:
    u = unwrap(v)
    return u if type(u) is int and -MAX_INT <= u <= MAX_INT else REFUSED


def as_bool(v: Any) -> Any:
    u = unwrap(v)
    return u if type(u) is bool else REFUSED


def as_float_list(v: Any) -> Any:
    if isinstance(v, np.ndarray) and v.ndim >= 1:
        v = v.tolist()
    if type(v) not in (list, tuple):
        return REFUSED
    out = [as_float(x) for x in v]
    return REFUSED if any(x is REFUSED for x in out) else out


def as_json(v: Any) -> Any:
    """Any JSON value: tuples become lists, numpy values their Python values."""
    if isinstance(v, (np.generic, np.ndarray)):
        if v.dtype.kind not in "biufUO":  # numbers, strings, objects (each checked); not datetimes
            return REFUSED
        v = v.tolist()
    if v is None or type(v) in (bool, float):
        return v
    if type(v) is int:
        return v if -MAX_INT <= v <= MAX_INT else REFUSED
    if type(v) is str:
        return v if good_str(v) else REFUSED
    if type(v) in (list, tuple):
        out = [as_json(x) for x in v]
        return REFUSED if any(x is REFUSED for x in out) else out
    if isinstance(v, Mapping):
        out = {}
        for k, x in v.items():
            y = as_json(x)
            if not good_str(k) or y is REFUSED:
                return REFUSED
            out[k] = y
        return out
    return REFUSED


@attrs.frozen
class Probe:
    """The fuzzed schema: one field of each kind of type."""

    label: str
    value: float
    count: int
    flag: bool = False
    series: list[float] = attrs.Factory(list)
    extra: dict[str, Any] = attrs.Factory(dict)
    maybe: float | None = None


def holds_special(v: Any) -> bool:
    """Whether a str that the store uses for a non-finite float appears among the values."""
    if type(v) is str:
        return v in ("NaN", "Infinity", "-Infinity")
    if type(v) is list:
        return any(holds_special(x) for x in v)
    return type(v) is dict and any(holds_special(x) for x in v.values())


def as_extra(v: Any) -> Any:
    # A field where floats and strs both stand refuses the strs that mean NaN and infinities.
    out = as_json(v) if isinstance(v, Mapping) else REFUSED
    return REFUSED if holds_special(out) else out


FIELDS = {"label": good_str, "value": as_float, "count": as_int, "flag": as_bool, "series": as_float_list,
          "extra": as_extra,
          "maybe": lambda v: None if v is None else as_float(v)}
DEFAULTS = {"flag": False, "series": [], "extra": {}, "maybe": None}


def expected_record(record: Any) -> Any:
    if isinstance(record, Probe):
        record = attrs.asdict(record, recurse=False)
    if not isinstance(record, Mapping) or not set(record) <= set(FIELDS):
        return REFUSED
    out = {}
    for name, check in FIELDS.items():
        if name not in record:
            if name not in DEFAULTS:
                return REFUSED
            out[name] = DEFAULTS[name]
            continue
        if name == "label":
            v = record[name] if good_str(record[name]) else REFUSED
        else:
            v = check(record[name])
        if v is REFUSED:
            return REFUSED
        out[name] = v
    return out


@attrs.define
class ProbePlugin:
    @tracker.hookimpl
    def tracker_schemas(self) -> list[tracker.Schema]:
        return [tracker.Schema("probe.record", Probe)]


# --- strategies ---------------------------------------------------------------------------------------

surrogates = st.characters(codec=None, categories=["Cs"])
texts = st.one_of(
    st.text(max_size=12),
    st.text(st.characters(codec=None), max_size=12),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=3), surrogates, st.text(max_size=3)),
    st.sampled_from(["", "step", "time", "NaN", "Infinity", "-Infinity", "null", "..", "a/b", "\x00", "é" * 3]),
    st.integers(50_000, 120_000).map(lambda n: "ü" * n),
)
big_ints = st.one_of(st.integers(), st.sampled_from([2**53, 2**53 + 1, -(2**53), -(2**53) - 1, 2**63, 2**63 - 1,
                                                     -(2**63), 2**64, 10**40]))
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([-0.0, 0.0, math.nan, -math.nan, math.inf, -math.inf, 5e-324, 1.7e308]))
np_dtypes = ["float64", "float32", "float16", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "bool"]


@st.composite
def numpy_numbers(draw: st.DrawFn) -> Any:
    dtype = np.dtype(draw(st.sampled_from(np_dtypes)))
    if dtype.kind == "f":
        with np.errstate(over="ignore"):  # a float64 beyond float16's range becomes an infinity
            x = np.array(draw(floats)).astype(dtype)
    elif dtype.kind == "b":
        x = np.array(draw(st.booleans()))
    else:
        info = np.iinfo(dtype)
        x = np.array(draw(st.integers(int(info.min), int(info.max))), dtype=dtype)
    return x[()] if draw(st.booleans()) else x  # a numpy scalar, or a 0-d array


odd_values = st.sampled_from([
    b"bytes", bytearray(b"x"), object(), None, 1 + 2j, decimal.Decimal("1.5"), fractions.Fraction(1, 3),
    datetime.datetime(2024, 1, 1), np.datetime64("2024-01-01T00:00:00.000000001"), np.timedelta64(5, "ns"),
    np.str_("text"), np.array([1.0, 2.0]), np.array([[1.0]]), np.array(1.0, dtype=object), np.complex64(1),
    np.longdouble(1.5), {1, 2}, frozenset(), range(3), Ellipsis, float, np.float64,
])
scalars = st.one_of(floats, big_ints, st.booleans(), numpy_numbers(), texts, odd_values)
json_like = st.recursive(
    st.one_of(st.none(), st.booleans(), floats, big_ints, texts, numpy_numbers()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(texts, inner, max_size=3),
                            st.dictionaries(st.one_of(st.integers(), st.none(), st.binary(max_size=2)), inner,
                                            min_size=1, max_size=2)),
    max_leaves=10)
keys = st.one_of(texts, st.integers(), st.none(), st.binary(max_size=3), st.tuples(st.integers()), floats,
                 st.just(np.str_("k")))
steps = st.one_of(st.none(), big_ints, st.booleans(), floats, numpy_numbers(), st.just("3"),
                  st.just(np.timedelta64(3, "ns")))


def metric_maps() -> st.SearchStrategy[Any]:
    plain = st.dictionaries(st.text(max_size=8).filter(metric_key), st.one_of(floats, st.booleans(),
                                                                             st.integers(-MAX_INT, MAX_INT)),
                            max_size=5)
    wild = st.dictionaries(keys, scalars, max_size=4)
    return st.one_of(plain, wild, plain.map(MappingProxyType),
                     st.one_of(st.lists(floats, max_size=2), st.none(), texts, big_ints))


def probe_records() -> st.SearchStrategy[Any]:
    field_values = {
        "label": st.one_of(texts, scalars), "value": scalars, "count": scalars, "flag": scalars,
        "series": st.one_of(st.lists(st.one_of(floats, st.integers(-MAX_INT, MAX_INT)), max_size=4),
                            st.lists(scalars, max_size=3), st.lists(floats, max_size=4).map(tuple),
                            st.lists(floats, max_size=4).map(np.array), scalars, json_like),
        "extra": st.one_of(st.dictionaries(texts, json_like, max_size=3), json_like),
        "maybe": st.one_of(st.none(), scalars),
    }
    specials = st.sampled_from(["NaN", "Infinity", "-Infinity", "nan", "inf"])
    good = st.fixed_dictionaries({"label": st.one_of(st.text(max_size=5), specials), "value": floats,
                                  "count": st.integers(0, 9)},
                                 optional={"flag": st.booleans(), "series": st.lists(floats, max_size=4),
                                           "extra": st.dictionaries(texts, json_like, max_size=3), "maybe": floats})
    mixed = st.fixed_dictionaries({}, optional=field_values)
    unknown = st.dictionaries(keys, scalars, min_size=1, max_size=2)
    return st.one_of(good, mixed, st.builds(lambda a, b: {**a, **b}, good, unknown),
                     good.map(lambda d: Probe(**d)), mixed.filter(lambda d: {"label", "value", "count"} <= set(d)).map(
                         lambda d: Probe(**d)), st.one_of(st.none(), texts, st.lists(scalars, max_size=2)))


# --- the tests --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def probe_host(tmp_path_factory: pytest.TempPathFactory) -> Any:
    host = local_host(ProbePlugin(), names=["probe"])
    old = tracker.set_host(host)
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))  # runs record their folder's git commit: work outside any repo
    yield host
    os.chdir(cwd)
    tracker.set_host(old)


def attempt(store: Path, call: Any) -> tuple[BaseException | None, tracker.Record | None, bytes, bytes]:
    """Run ``call(run)`` on a fresh run; returns the error, the record written, and the segment before/after.

    The view of the run is left in ``attempt.view``.
    """
    run = tracker.start_run(store=store)
    (seg,) = run.path.glob("*.jsonl")
    before = seg.read_bytes()
    error = None
    try:
        call(run)
    except (tracker.SchemaError, TypeError) as exc:
        error = exc
    after = seg.read_bytes()
    run.finish()
    attempt.view = tracker.RunView(store, run.id)
    records = list(attempt.view.records())
    assert len(records) <= 1
    return error, records[0] if records else None, before, after


def check_outcome(want: Any, error: BaseException | None, record: tracker.Record | None, before: bytes,
                  after: bytes, step: Any) -> None:
    if want is REFUSED:
        assert error is not None, f"accepted a value the contract refuses: {record}"
        assert after == before, "a refused call wrote to the segment"
        assert record is None
        if isinstance(error, tracker.SchemaError):
            assert error.problems and all("expected" in m and "given" in m for _, m in error.problems)
        return
    assert error is None, f"refused a valid value: {error!r}"
    assert after.count(b"\n") == before.count(b"\n") + 1
    assert record is not None and same(record.data, want), (record.data, want)
    if step is not None:
        assert record.step == step
    else:
        assert record.step == 0


@EXAMPLES
@given(values=metric_maps(), step=steps)
def test_log_stores_exactly_or_writes_nothing(values: Any, step: Any, tmp_path: Path, probe_host: Any) -> None:
    want = expected_metrics(values)
    want_step = expected_step(step)
    if want_step is REFUSED:
        want = REFUSED
    error, record, before, after = attempt(tmp_path / "store", lambda run: run.log(values, step=step))
    check_outcome(want, error, record, before, after, want_step)
    if record is not None:
        # The columnar reader gives the same numbers (bools as 1.0 and 0.0).
        got = attempt.view.metrics()
        for k, v in want.items():
            assert same(float(got[k][0]), float(v))


@EXAMPLES
@given(record=probe_records(), step=st.one_of(st.none(), st.integers(0, 10)), how=st.sampled_from(["map", "kw"]))
def test_log_record_stores_exactly_or_writes_nothing(record: Any, step: Any, how: str, tmp_path: Path,
                                                     probe_host: Any) -> None:
    want = expected_record(record)

    def call(run: tracker.Run) -> None:
        if isinstance(record, Probe):
            run.log_record(record, step=step)
        elif how == "kw" and isinstance(record, dict) and all(type(k) is str for k in record):
            run.log_record("probe.record", step=step, **record)
        else:
            run.log_record("probe.record", record, step=step)

    error, stored, before, after = attempt(tmp_path / "store", call)
    check_outcome(want, error, stored, before, after, step)
    if stored is not None:
        # And the schema's class can be rebuilt from what was stored.
        (inst,) = attempt.view.table("probe.record").rows()
        assert isinstance(inst, Probe)


@EXAMPLES
@given(name=st.one_of(texts, keys, st.sampled_from(["probe", "probe.record.x", "../probe.record", "metrics.x"])))
def test_unknown_schema_names_are_refused_and_nothing_written(name: Any, tmp_path: Path, probe_host: Any) -> None:
    error, stored, before, after = attempt(tmp_path / "store", lambda run: run.log_record(name, {"a": 1.0}))
    check_outcome(REFUSED, error, stored, before, after, None)
