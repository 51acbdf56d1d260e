"""Typed records: strict validation, every problem named, round trips."""

from __future__ import annotations

import math
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracker
from tests.conftest import strict_lines
from tracker.core.schema import CompiledSchema, make_converter


def _positive(inst: object, attribute: attrs.Attribute, value: float) -> None:
    if not value > 0:
        raise ValueError(f"expected a positive number, given {value!r}")


@attrs.frozen(kw_only=True)
class Point:
    name: str
    x: float
    y: float = attrs.field(validator=_positive)
    n: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    ok: bool = False
    tags: list[str] = attrs.field(factory=list)
    series: list[float] | None = None

    def __attrs_post_init__(self) -> None:
        if self.series is not None and len(self.series) != self.n:
            raise ValueError(f"series: expected n = {self.n} values, given {len(self.series)}")


class PointPlugin:
    @tracker.hookimpl
    def tracker_schemas(self) -> list[tracker.Schema]:
        return [tracker.Schema("test.point", Point, description="a point")]

    @tracker.hookimpl
    def tracker_summarizers(self) -> list[tracker.Summarizer]:
        def mean_x(table: tracker.Table) -> tracker.Summary:
            return tracker.Summary("x", [{"mean_x": float(table["x"].mean()), "rows": len(table)}])

        return [tracker.Summarizer("test.point.mean", "test.point", mean_x)]


@pytest.fixture
def run(tmp_store: Path, make_tracker_host):  # noqa: ANN001, ANN201
    make_tracker_host(PointPlugin(), names=["points"])
    with tracker.start_run() as r:
        yield r


def test_mapping_kwargs_and_instance_are_stored(run: tracker.Run) -> None:
    run.log_record("test.point", {"name": "a", "x": 1, "y": 2.0}, step=1)
    run.log_record("test.point", step=2, name="b", x=1.5, y=np.float64(3.0), n=np.int64(2), series=np.array([1.0, 2.0]))
    run.log_record("test.point", Point(name="c", x=2.0, y=1.0))
    run.log_record(Point(name="d", x=0.0, y=1.0), step=9)
    recs = list(tracker.open_store().run(run.id).records("test.point"))
    assert [r.step for r in recs] == [1, 2, 3, 9]
    assert recs[0].data == {"name": "a", "x": 1.0, "y": 2.0, "n": 0, "ok": False, "tags": [], "series": None}
    assert recs[1].data["series"] == [1.0, 2.0] and recs[1].data["n"] == 2
    table = tracker.open_store().run(run.id).table("test.point")
    assert table["x"].dtype == np.float64 and table["x"].tolist() == [1.0, 1.5, 2.0, 0.0]
    assert table["n"].dtype == np.int64 and table["name"] == ["a", "b", "c", "d"]
    assert list(table.rows())[2] == Point(name="c", x=2.0, y=1.0)


@pytest.mark.parametrize(("record", "field", "words"), [
    ({"name": "a", "x": "1.0", "y": 1.0}, "x", "expected a float, given str '1.0'"),
    ({"name": 3, "x": 1.0, "y": 1.0}, "name", "expected a str, given int 3"),
    ({"name": "a", "x": 1.0, "y": 1.0, "n": 2.0}, "n", "expected an int, given float 2.0"),
    ({"name": "a", "x": 1.0, "y": 1.0, "ok": 1}, "ok", "expected a bool, given int 1"),
    ({"name": "a", "x": True, "y": 1.0}, "x", "expected a float, given bool True"),
    ({"name": "a", "y": 1.0}, "x", "required field"),
    ({"name": "a", "x": 1.0, "y": 1.0, "z": 1}, "z", "unknown field 'z'"),
    ({"name": "a", "x": 1.0, "y": -1.0}, "y", "positive number, given -1.0"),
    ({"name": "a", "x": 1.0, "y": 1.0, "n": -3}, "n", "must be >= 0"),
    ({"name": "a", "x": 1.0, "y": 1.0, "n": 3, "series": [1.0]}, "series", "expected n = 3 values, given 1"),
    ({"name": "a", "x": 1.0, "y": 1.0, "tags": ["a", 2]}, "tags", "item 1: expected a str, given int 2"),
])
def test_bad_records_name_schema_field_expected_and_given(run: tracker.Run, record: dict, field: str,
                                                          words: str) -> None:
    before = len(strict_lines(run.path))
    with pytest.raises(tracker.SchemaError) as err:
        run.log_record("test.point", record)
    assert err.value.schema == "test.point"
    assert field in [p[0] for p in err.value.problems]
    assert words in str(err.value)
    assert "test.point" in str(err.value)
    assert len(strict_lines(run.path)) == before  # nothing of it written
    run.log_record("test.point", name="ok", x=1.0, y=1.0)  # and the run goes on


def test_every_problem_is_reported_at_once(run: tracker.Run) -> None:
    with pytest.raises(tracker.SchemaError) as err:
        run.log_record("test.point", {"name": 1, "x": "no", "q": 0})
    fields = sorted(p[0] for p in err.value.problems)
    assert fields == ["name", "q", "x", "y"]
    with pytest.raises(tracker.SchemaError) as err:
        run.log_record("test.point", {"name": "a", "x": 1.0, "y": -2.0, "n": -1})
    assert sorted(p[0] for p in err.value.problems) == ["n", "y"]


def test_unknown_schema_lists_known_ones(run: tracker.Run) -> None:
    with pytest.raises(tracker.SchemaError, match="unknown schema 'nope.x'") as err:
        run.log_record("nope.x", {"a": 1})
    assert "test.point" in str(err.value) and "metrics" in str(err.value)


def test_summarizer_runs_on_table(run: tracker.Run) -> None:
    for x in (1.0, 2.0, 6.0):
        run.log_record("test.point", name="p", x=x, y=1.0)
    (summary,) = tracker.open_store().run(run.id).summarize("test.point")
    assert summary.rows == [{"mean_x": 3.0, "rows": 3}]
    assert summary.summarizer == "test.point.mean" and summary.schema == "test.point"


def test_nonfinite_in_typed_fields_round_trip(run: tracker.Run) -> None:
    run.log_record("test.point", name="NaN", x=math.nan, y=math.inf, n=2, series=[-math.inf, 1.0])
    (rec,) = tracker.open_store().run(run.id).records("test.point")
    assert rec.data["name"] == "NaN"  # a string field keeps the string
    assert math.isnan(rec.data["x"]) and rec.data["y"] == math.inf
    assert rec.data["series"] == [-math.inf, 1.0]
    strict_lines(run.path)


def test_surrogates_are_refused(run: tracker.Run) -> None:
    with pytest.raises(tracker.SchemaError, match="UTF-8"):
        run.log_record("test.point", name="bad\ud800", x=1.0, y=1.0)
    with pytest.raises(tracker.SchemaError):
        run.log({"bad\udfff": 1.0})


metric_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.booleans(),
)
metric_names = st.text(min_size=1, max_size=20).filter(lambda s: s not in ("step", "time")).filter(
    lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(metric_names, metric_values, min_size=1, max_size=6))
def test_metrics_round_trip_property(tmp_path_factory: pytest.TempPathFactory, values: dict) -> None:
    store = tmp_path_factory.mktemp("prop")
    with tracker.start_run(store=store) as run:
        run.log(values)
    (rec,) = tracker.open_store(store).run(run.id).records()
    assert rec.data.keys() == values.keys()
    for k, v in values.items():
        got = rec.data[k]
        assert type(got) is type(v)
        if isinstance(v, float) and math.isnan(v):
            assert math.isnan(got)
        else:
            assert got == v and (not isinstance(v, float) or math.copysign(1, got) == math.copysign(1, v))


@settings(max_examples=60, deadline=None)
@given(name=st.text(max_size=30).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)),
       x=st.floats(), n=st.integers(0, 2**53), ok=st.booleans())
def test_compiled_schema_validate_structure_round_trip(name: str, x: float, n: int, ok: bool) -> None:
    compiled = CompiledSchema(tracker.Schema("test.point", Point), make_converter())
    data = compiled.validate({"name": name, "x": x, "y": 1.0, "n": n, "ok": ok})
    inst = compiled.structure(compiled.decode(dict(data)))
    assert inst.name == name and inst.n == n and inst.ok is ok
    assert (math.isnan(inst.x) and math.isnan(x)) or inst.x == x
