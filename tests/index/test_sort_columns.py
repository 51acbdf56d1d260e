"""Sort columns (:mod:`tracker.read.sortcols`): a new sort's pages are those of the whole sort of the listing.

The dashboard answers a sort never asked before from columns (numpy arrays, one ``lexsort``); the order must
be exactly :func:`tracker.read.listing.sort_entries`'s, the order the PostgreSQL store is tested against:
numbers first, then text by code point, other, missing last, ties by run id in the sort's direction.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracker.core.records import RunInfo
from tracker.read.listing import RunFilter, page_entries, parse_sort, sort_entries
from tracker.read.sortcols import Columns


class Entry:
    """A catalog entry as the listing reads it: an info and per-metric figures."""

    def __init__(self, info: RunInfo, metrics: dict[str, dict[str, Any]]) -> None:
        self.info, self.metrics = info, metrics


values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 0.5, math.nan, math.inf]),
    st.text(max_size=3), st.sampled_from(["a", "B", "é", "a\x00", "", "\U0001f600"]),
    st.lists(st.integers(0, 2), max_size=2), st.fixed_dictionaries({"x": st.integers(0, 1)}))
numbers = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.0, 2, math.nan, -math.inf]), st.floats())


@st.composite
def entries(draw: Any) -> list[Entry]:
    n = draw(st.integers(0, 30))
    ids = draw(st.lists(st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True), min_size=n, max_size=n, unique=True))
    out = []
    for rid in ids:
        config: dict[str, Any] = {}
        for key in ("lr", "opt.name", "a.b"):
            v = draw(values)
            if v is not None:
                config[key] = v
        if draw(st.booleans()):
            config["a"] = {"b": draw(values)}  # a dotted key and a nested one: the whole key first
        metrics = {}
        for name in ("loss", "acc"):
            if draw(st.booleans()):
                metrics[name] = {stat: draw(numbers) for stat in ("last", "min", "max") if draw(st.booleans())}
        status = draw(st.sampled_from(["running", "finished", "failed"]))
        created = draw(st.one_of(st.none(), st.sampled_from([1.0, 2.0, 2.0]), st.floats(0, 10)))
        info = RunInfo(id=rid, name=draw(st.one_of(st.none(), st.text(max_size=2), st.sampled_from(["a", "a\x00"]))),
                       project=draw(st.sampled_from([None, "p", "q"])), status=status, created_at=created,
                       ended_at=draw(st.one_of(st.none(), st.floats(0, 20))), config=config,
                       group=draw(st.sampled_from([None, "g", "G"])), records=draw(st.integers(0, 3)),
                       tags=draw(st.lists(st.sampled_from(["t1", "t2"]), max_size=2, unique=True)),
                       job_type=draw(st.sampled_from([None, "train"])),
                       notes=draw(st.sampled_from([None, "a note", "Straße"])),
                       last_step=draw(st.one_of(st.none(), st.integers(-1, 2))),
                       last_metrics={m: 0 for m in metrics})
        out.append(Entry(info, metrics))
    return out


SORTS = ["created_at", "-created_at", "name", "-name", "duration", "-duration", "id", "-id", "status", "group",
         "-records", "last_step", "config.lr", "-config.lr", "config.opt.name", "-config.a.b", "config.missing",
         "metric.loss.min", "-metric.loss.min", "metric.acc.last", "-metric.acc.max", "metric.none.last"]


def ids(rows: Any) -> list[str]:
    return [e.info.id for e in rows]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(es=entries(), sort=st.sampled_from(SORTS), limit=st.integers(1, 7), prepared=st.booleans(),
       flt=st.builds(RunFilter.of, project=st.sampled_from([None, "p", "x"]),
                     status=st.sampled_from([None, "failed"]), tag=st.sampled_from([None, "t1", ["t1", "t2"]]),
                     q=st.sampled_from([None, "G", "a", "T2", "a\x00", "Note", "ss"]),
                     group=st.sampled_from([None, "g"]),
                     job_type=st.sampled_from([None, "train"])),
       offset=st.one_of(st.none(), st.integers(0, 12)))
def test_a_new_sort_s_pages_are_those_of_the_whole_sort(es, sort, limit, prepared, flt, offset) -> None:
    key = parse_sort(sort)
    cols = Columns(es)
    if prepared:
        cols.prepare()  # the columns made ahead, as the dashboard's reading thread does
    got = tuple(cols.order(key, None if flt == RunFilter() else cols.kept(flt)))
    kept = [e for e in es if flt.keeps(e.info)]
    want = sort_entries(kept, key)
    assert ids(got[0]) == ids(want[0])
    assert list(got[1]) == want[1]
    # The pages (first, by offset, then walked by cursor) are the same.
    a = page_entries((), key, limit, None, offset, ordered=got)
    b = page_entries(kept, key, limit, None, offset)
    assert (ids(a[0]), a[1], a[2]) == (ids(b[0]), b[1], b[2])
    while a[2] is not None:
        cursor = a[2]
        a = page_entries((), key, limit, cursor, None, ordered=got)
        b = page_entries(kept, key, limit, cursor, None)
        assert (ids(a[0]), a[1], a[2]) == (ids(b[0]), b[1], b[2])


def test_the_figures_of_the_most_logged_metrics_are_read_ahead_within_a_budget() -> None:
    es = [Entry(RunInfo(id=f"r{i}", last_metrics={"loss": 1, **({"rare": 1} if i < 2 else {})}),
                {"loss": {"min": float(i % 3)}, **({"rare": {"min": 1.0}} if i < 2 else {})}) for i in range(20)]
    cols = Columns(es)
    per_metric = 3 * 20 * 9
    assert cols.prepare_metrics(budget=per_metric) == ["loss"]
    assert ("metric", "loss", "min") in cols.keys() and ("metric", "rare", "min") not in cols.keys()
    got = tuple(cols.order(parse_sort("metric.rare.min")))  # one not read ahead: made when asked
    assert ids(got[0])[:2] == ["r0", "r1"] and ("metric", "rare", "min") in cols.keys()


def test_a_prepared_sort_reads_no_run_s_figures_again() -> None:
    """Made ahead, a metric's column answers every sort of it and of the other metrics read in the same pass:
    no run's figures are parsed again (counted)."""
    parsed = []

    class Catalogued(Entry):
        def peek_metrics(self) -> dict[str, dict[str, Any]]:
            parsed.append(self.info.id)
            return self.metrics

    es = [Catalogued(RunInfo(id=f"r{i:02d}", config={"lr": i % 4}, last_metrics={"loss": 1, "acc": 1}),
                     {"loss": {"min": float(i % 5), "last": 1.0}, "acc": {"max": i / 3}}) for i in range(30)]
    sorts = ("metric.loss.min", "-metric.acc.max", "metric.loss.last", "config.lr", "-name")
    want = {sort: ids(sort_entries(es, parse_sort(sort))[0]) for sort in sorts}
    parsed.clear()
    cols = Columns(es)
    cols.prepare()
    assert len(parsed) == 30  # one pass over every run's figures, for both metrics
    for sort in sorts:
        assert ids(tuple(cols.order(parse_sort(sort)))[0]) == want[sort]
    assert len(parsed) == 30
