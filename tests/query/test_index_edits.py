"""The derived data and run edits / removals: query answers follow `tracker rename/tag/rm` at once."""

from __future__ import annotations

from pathlib import Path

import orjson

import tracker

from .support import run_tracker


def _query(store: Path, sql: str, *extra: str) -> list[dict]:
    res = run_tracker("--store", str(store), "query", sql, "--format", "json", *extra)
    assert res.returncode == 0, res.stderr
    return orjson.loads(res.stdout)


def _finished_runs(store: Path) -> None:
    for rid in ("first", "second"):
        with tracker.start_run("p", rid, store=store, run_id=rid, tags=["old"]) as run:
            run.log({"loss": 1.0}, step=0)


def test_edits_after_indexing_show_in_query(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _finished_runs(store)
    res = run_tracker("--store", str(store), "index")
    assert res.returncode == 0, res.stderr
    sql = "SELECT id, name, tags FROM runs ORDER BY id"
    assert _query(store, sql) == [{"id": "first", "name": "first", "tags": ["old"]},
                                  {"id": "second", "name": "second", "tags": ["old"]}]
    for args in (("rename", "first", "renamed"), ("tag", "first", "--add", "best")):
        res = run_tracker("--store", str(store), *args)
        assert res.returncode == 0, res.stderr
    want = [{"id": "first", "name": "renamed", "tags": ["old", "best"]},
            {"id": "second", "name": "second", "tags": ["old"]}]
    assert _query(store, sql, "--no-index") == want
    assert _query(store, sql) == want
    rows = _query(store, "SELECT r.name, count(*) AS n FROM metrics m JOIN runs r ON r.id = m.run_id "
                         "GROUP BY r.name ORDER BY r.name")
    assert rows == [{"name": "renamed", "n": 1}, {"name": "second", "n": 1}]
    res = run_tracker("--store", str(store), "index", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert orjson.loads(res.stdout)["built"] == 0  # an edit changes no segment's columns
    assert _query(store, sql) == want


def test_removed_runs_leave_query_answers(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _finished_runs(store)
    assert run_tracker("--store", str(store), "index").returncode == 0
    res = run_tracker("--store", str(store), "rm", "first", "--yes")
    assert res.returncode == 0, res.stderr
    for extra in ((), ("--no-index",)):
        assert _query(store, "SELECT id FROM runs", *extra) == [{"id": "second"}]
        assert _query(store, "SELECT DISTINCT run_id FROM records", *extra) == [{"run_id": "second"}]
        assert _query(store, "SELECT DISTINCT run_id FROM metric_stats", *extra) == [{"run_id": "second"}]
    assert run_tracker("--store", str(store), "index").returncode == 0
    assert not (store / "index" / "segments" / "first").exists()  # the removed run's columns went too
    res = run_tracker("--store", str(store), "restore", "first")
    assert res.returncode == 0, res.stderr
    assert _query(store, "SELECT id FROM runs ORDER BY id") == [{"id": "first"}, {"id": "second"}]
