"""Groups over the team database: the fields synced (and migrated from layout 2), the same aggregates as the folder."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import psycopg
import pytest

import tracker
from tracker.team.postgres import LAYOUT, TeamStore, sync

from .support import to_layout_5


def quiet_sync(store: Path, url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(tracker.open_store(store), url)


@pytest.fixture
def grouped(tmp_path: Path) -> Path:
    store = tmp_path / "s"
    for g in ("a", "b"):
        for seed in range(3):
            with tracker.start_run(project="p", store=store, config={"seed": seed, "lr": 0.1 if g == "a" else 0.2},
                                   group=g, job_type="train") as run:
                for s in range(0, 50 - seed * 5):
                    run.log({"loss": 1 / (s + 1) + seed, "acc": s}, step=s * 2)
    with tracker.start_run(project="p", store=store, tags=["group:b", "job_type:eval"]) as run:
        run.log({"loss": 7.0}, step=3)
    return store


def test_fields_and_aggregates_are_the_folders(grouped: Path, pg_url: str) -> None:
    quiet_sync(grouped, pg_url)
    local, team = tracker.open_store(grouped), TeamStore(pg_url)
    assert sorted((i.id, i.group, i.job_type) for i in team.runs()) == \
        sorted((i.id, i.group, i.job_type) for i in local.runs())
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT run_group, job_type, count(*) FROM tracker_runs GROUP BY 1, 2 ORDER BY 1, 2")
        assert rows.fetchall() == [("a", "train", 3), ("b", "eval", 1), ("b", "train", 3)]
    for by in ("group", "config.lr", "job_type"):
        want, got = local.aggregate("loss", by=by, max_points=20), team.aggregate("loss", by=by, max_points=20)
        assert list(want) == list(got)
        for k in want:
            assert sorted(want[k]["runs"]) == sorted(got[k]["runs"])
            for field in ("step", "count", "mean", "std", "lo", "hi", "min", "max"):
                np.testing.assert_array_equal(want[k][field], got[k][field])
    with pytest.raises(tracker.TrackerError, match="metric 'nope': none of the 7 runs logged it"):
        team.aggregate("nope")


def test_layout_2_is_migrated_with_the_groups_of_0_4_tags(grouped: Path, pg_url: str) -> None:
    quiet_sync(grouped, pg_url)
    to_layout_5(pg_url)  # (layout 6's columns are made of run_group and job_type)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the database as layout 2 left it
        conn.execute("ALTER TABLE tracker_runs DROP COLUMN run_group, DROP COLUMN job_type")
        conn.execute("DELETE FROM tracker_layout WHERE layout > 2")
        # and a run whose info was synced by 0.4 (no group field: only its tag)
        conn.execute("UPDATE tracker_runs SET info = (info::jsonb - 'group' - 'job_type')::json "
                     "WHERE info->>'job_type' = 'eval'")
    with pytest.raises(tracker.TrackerError, match=f"layout 2, older than layout {LAYOUT}"):
        TeamStore(pg_url)
    quiet_sync(grouped, pg_url)  # migrates (and syncs nothing new)
    with psycopg.connect(pg_url) as conn:
        got = conn.execute("SELECT run_group, job_type, count(*) FROM tracker_runs GROUP BY 1, 2 ORDER BY 1, 2")
        assert got.fetchall() == [("a", "train", 3), ("b", "eval", 1), ("b", "train", 3)]
    old = [i for i in TeamStore(pg_url).runs() if i.job_type == "eval"]
    assert [(i.group, i.job_type) for i in old] == [("b", "eval")]


def test_a_report_of_the_team_store_is_the_folders(grouped: Path, pg_url: str) -> None:
    from tracker.ui.report import report_data

    quiet_sync(grouped, pg_url)
    local, team = tracker.open_store(grouped), TeamStore(pg_url)
    for by in (None, "group"):
        want = report_data(local, local.runs(), by=by, metrics=["loss"], environment=False)
        got = report_data(team, team.runs(), by=by, metrics=["loss"], environment=False)
        import orjson

        want, got = (orjson.loads(orjson.dumps({k: v for k, v in doc.items() if k != "generated_at"}))
                     for doc in (want, got))
        assert [r["id"] for r in got["runs"]] == [r["id"] for r in want["runs"]]
        assert got == want


def test_runs_filtered_by_group_and_job_type_on_a_folder_and_on_postgresql(grouped: Path, pg_url: str) -> None:
    quiet_sync(grouped, pg_url)
    local, team = tracker.open_store(grouped), TeamStore(pg_url)
    every = local.runs()
    for store in (local, team):
        for kw in ({"group": "a"}, {"group": "b"}, {"job_type": "eval"}, {"group": "b", "job_type": "train"},
                   {"group": "none-such"}, {"group": "a", "project": "p", "status": "finished"}):
            want = [i.id for i in every if all(getattr(i, k) == v for k, v in kw.items())]
            assert [i.id for i in store.runs(**kw)] == want, (store, kw)
            assert [e.info.id for e in store.catalog(**kw)] == want, (store, kw)
        assert len(store.runs(group="a")) == 3 and len(store.runs(group="b")) == 4  # the 0.4 tag counts too
        assert [i.job_type for i in store.runs(job_type="eval")] == ["eval"]
