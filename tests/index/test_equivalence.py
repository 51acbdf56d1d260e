"""Every answer is the same with and without the derived index, however it came to be."""

from __future__ import annotations

import math
from pathlib import Path

import hypothesis.strategies as hs
from hypothesis import HealthCheck, given, settings

import tracker
from tests.index.support import answers, assert_same_answers, drop_index


def test_same_answers_on_first_read_on_later_reads_and_after_deleting_the_index(rich_store: Path):
    first = assert_same_answers(rich_store)  # builds the index
    assert (rich_store / "index" / "catalog.idx").is_file()
    assert list((rich_store / "index" / "segments").iterdir())
    assert {r["id"][1] for r in first["runs"]} == {"values", "fails", "resumed", "crashed", "running"}
    statuses = {r["id"][1]: r["status"][1] for r in first["runs"]}
    assert statuses == {"values": "finished", "fails": "failed", "resumed": "finished", "crashed": "crashed",
                        "running": "running"}
    assert answers(rich_store) == first  # from the index as written
    drop_index(rich_store)
    assert answers(rich_store) == first  # rebuilt from nothing


def test_the_figures_of_the_catalog_follow_the_contract(rich_store: Path):
    st = tracker.open_store(rich_store)
    entry = {e.info.id: e for e in st.catalog()}["values"]
    loss = entry.metrics["loss"]
    # count: records holding the metric, NaN included; min/max over non-NaN values; first/last in log order.
    assert loss["count"] == 52
    assert math.isnan(loss["first"]) and loss["first_step"] == 0
    assert loss["last"] == 0.25 and loss["last_step"] == 2
    assert loss["min"] == 1.0 / 49 and loss["min_step"] == 48  # step 49 logged NaN
    assert loss["max"] == 0.5 and loss["max_step"] == 1
    assert entry.metrics["grad"]["max"] == math.inf and entry.metrics["grad"]["min"] == -math.inf
    assert entry.metrics["flag"]["first"] is True and entry.metrics["count"]["last"] == 49
    assert entry.schemas == {"metrics": 53, "quant.error": 1, "ptq.layer": 1}
    assert entry.info.name == "renamed" and entry.info.tags == ["a", "b"] and math.isnan(entry.info.config["lr"])
    resumed = {e.info.id: e for e in st.catalog()}["resumed"].metrics["loss"]
    assert resumed["count"] == 40 and resumed["last"] == -19.0 and resumed["min"] == -19.0
    assert resumed["first"] == 10.0


def test_an_edit_after_the_catalog_was_written_shows_at_once(rich_store: Path):
    st = tracker.open_store(rich_store)
    assert {i.id: i.name for i in st.runs()}["resumed"] == "resumed"
    st.rename("resumed", "again")
    assert {i.id: i.name for i in tracker.open_store(rich_store).runs()}["resumed"] == "again"
    assert_same_answers(rich_store)


metric_value = hs.one_of(hs.floats(allow_nan=True, allow_infinity=True), hs.integers(-(2**53), 2**53),
                         hs.booleans())
metric_rows = hs.lists(hs.dictionaries(hs.sampled_from(["a", "b", "c", "loss"]), metric_value, max_size=4),
                       min_size=1, max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=metric_rows, steps=hs.lists(hs.integers(-5, 40), min_size=30, max_size=30))
def test_any_metric_values_round_trip_exactly_through_the_index(tmp_path_factory, rows, steps):
    store = tmp_path_factory.mktemp("prop")
    with tracker.start_run(store=store, run_id="r", system_metrics=False) as run:
        for row, step in zip(rows, steps, strict=False):
            run.log(row, step=step)
    indexed = assert_same_answers(store)
    got = indexed["r"]["records"]
    assert len(got) == len(rows)
