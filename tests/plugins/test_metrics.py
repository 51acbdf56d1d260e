"""The built-in metrics plugin: its summaries against numbers computed here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tracker


def test_scalars_summary_numbers(tmp_store: Path) -> None:
    losses = [0.9, 0.5, math.nan, 0.2, 0.4]
    with tracker.start_run() as run:
        for i, loss in enumerate(losses):
            run.log({"loss": loss, **({"acc": 0.1 * i} if i % 2 == 0 else {})}, step=i * 10)
    sums = {s.summarizer: s for s in tracker.open_store().run(run.id).summarize()}
    rows = {r["metric"]: r for r in sums["metrics.scalars"].rows}
    loss = rows["loss"]
    finite = [x for x in losses if not math.isnan(x)]
    assert loss["count"] == 5 and loss["nan"] == 1
    assert loss["first"] == 0.9 and loss["last"] == 0.4
    assert loss["min"] == 0.2 and loss["min_step"] == 30
    assert loss["max"] == 0.9 and loss["max_step"] == 0
    assert math.isclose(loss["mean"], float(np.mean(finite)))
    acc = rows["acc"]
    assert acc["count"] == 3 and acc["nan"] == 0  # absent from two records: not NaN data
    assert acc["max"] == 0.1 * 4 and acc["max_step"] == 40
    (run_row,) = sums["metrics.run"].rows
    assert run_row["records"] == 5 and run_row["first_step"] == 0 and run_row["last_step"] == 40
    assert run_row["distinct_steps"] == 5 and run_row["wall_time_s"] >= 0


def test_bools_and_exact_ints(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        run.log({"flag": True, "count": 2**53})
        run.log({"flag": False, "count": 7})
    (rec, _) = tracker.open_store().run(run.id).records()
    assert rec.data == {"flag": True, "count": 2**53}
    rows = {r["metric"]: r for r in tracker.open_store().run(run.id).summarize()[0].rows}
    assert rows["flag"]["mean"] == 0.5 and rows["count"]["first"] == float(2**53)


def test_rows_yield_metrics_instances_with_logged_nan(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        run.log({"a": math.nan})
        run.log({"b": 1.0})
    table = tracker.open_store().run(run.id).table("metrics")
    rows = list(table.rows())
    assert math.isnan(rows[0].values["a"]) and rows[1].values == {"b": 1.0}
    assert table.present("a").tolist() == [True, False]


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.integers(-(2**53), 2**53), max_size=60), ordered=st.booleans())
def test_distinct_steps_equals_a_sort(steps, ordered):
    import numpy as np

    from tracker.builtin.metrics import distinct

    arr = np.array(sorted(steps) if ordered else steps, dtype=np.int64)
    assert distinct(arr) == np.unique(arr).size
