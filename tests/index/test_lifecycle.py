"""Derived data follows a run's life: rebuilt after a restore, removed by gc with the run."""

from __future__ import annotations

from pathlib import Path

import tracker
from tests.index.support import assert_same_answers


def test_gc_removes_the_derived_columns_of_runs_removed_for_good(tmp_path: Path):
    store = tmp_path / "s"
    for rid in ("keep", "drop"):
        with tracker.start_run(store=store, run_id=rid, system_metrics=False) as run:
            run.log({"loss": 1.0})
    st = tracker.open_store(store)
    st.runs()
    assert {p.name for p in (store / "index" / "segments").iterdir()} == {"keep", "drop"}
    st.remove("drop", dry_run=False)
    st.restore("drop")
    assert [i.id for i in tracker.open_store(store).runs()] and assert_same_answers(store)
    st.remove("drop")
    st.gc()
    assert {p.name for p in (store / "index" / "segments").iterdir()} == {"keep"}
    assert [i.id for i in tracker.open_store(store).runs()] == ["keep"]
    assert_same_answers(store)


def test_listing_the_trash_writes_no_derived_data_there(tmp_path: Path):
    store = tmp_path / "s"
    with tracker.start_run(store=store, run_id="gone", system_metrics=False) as run:
        run.log({"loss": 1.0})
    st = tracker.open_store(store)
    st.remove("gone")
    assert [i.id for i in st.trashed()] == ["gone"]
    # The trash is emptied folder by folder: derived data kept there would outlive its runs.
    assert not (store / "trash" / "index").exists()
