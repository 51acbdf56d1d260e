"""Lines with a valid checksum but the wrong shape (issue 10, item 9).

A line can be sound JSON with a correct CRC and still not be an event of this
format: another tool's bug, a hand edit whose checksum was recomputed. Each
such line here ends an unfinished segment of a writer that is gone, so that
listing the store reads it too. It must be reported as corrupt with file and
line, like any damaged line, and never make a reader fail: not the run's own
readers, not ``tracker runs`` for the whole store, not ``tracker verify``.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import tracker
from tests.reliability.support import child_env, cli, event, event_line, read_run

T0 = 1.7e9

# name -> how the bad line differs from a sound metrics record
BAD_SHAPES: dict[str, Any] = {
    "data_a_list": {"data": [1, 2]},
    "data_a_string": {"data": "loss=0.4"},
    "no_time": {"time": None, "drop": "time"},
    "time_a_string": {"time": "yesterday"},
    "time_a_bool": {"time": True},
    "time_a_list": {"time": [T0]},
    "metric_a_list": {"data": {"loss": [0.1, 0.2]}},
    "metric_a_dict": {"data": {"loss": {"value": 0.1}}},
    "metric_a_word": {"data": {"loss": "low"}},
    "step_a_string": {"step": "3"},
    "step_a_float": {"step": 3.5},
    "no_step": {"drop": "step"},
    "kind_a_number": {"kind": 5},
    "schema_a_number": {"schema": 7},
    "seq_a_string": {"seq": "3"},
    "no_data": {"drop": "data"},
}


def bad_event(writer: str, change: dict[str, Any], t0: float) -> dict[str, Any]:
    ev = event("record", 3, writer=writer, time=t0 + 3, schema="metrics", step=2, data={"loss": 0.2})
    ev.update({k: v for k, v in change.items() if k != "drop"})
    if "drop" in change:
        del ev[change["drop"]]
    return ev


def write_bad_run(store: Path) -> dict[str, Path]:
    """Run ``shapes``: a real first writer, then one hand-written segment per bad shape (its last line)."""
    with tracker.start_run(name="shapes", project="p", store=store, run_id="shapes") as run:
        run.log({"loss": 0.5}, step=0)
    run_dir = store / "runs" / "shapes"
    t0 = time.time() + 60  # after the first writer: these writers resumed the run, then died
    paths = {}
    for i, (name, change) in enumerate(BAD_SHAPES.items()):
        wid = f"gone-host-{1000 + i}-abcdef"
        header = event("writer_started", 1, writer=wid, time=t0, data={
            "host": "gone-host", "pid": 1000 + i, "proc_start": None, "writer": wid, "name": "shapes",
            "project": "p", "config": {}, "tags": [], "env": {}, "resumed": True})
        good = event("record", 2, writer=wid, time=t0 + 2, schema="metrics", step=1, data={"loss": 0.25})
        path = run_dir / f"{wid}.jsonl"
        path.write_bytes(event_line(header) + event_line(good) + event_line(bad_event(wid, change, t0)))
        old = time.time() - 86400  # its writer, on another host, has been silent for a day: crashed
        os.utime(path, (old, old))
        paths[name] = path
    return paths


def test_bad_shapes_are_reported_and_nothing_fails(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    with tracker.start_run(name="healthy", store=store, run_id="healthy") as run:
        run.log({"loss": 1.0}, step=0)
    paths = write_bad_run(store)

    infos = {i.id: i for i in tracker.open_store(store).runs()}
    assert set(infos) == {"healthy", "shapes"}
    assert infos["shapes"].name == "shapes" and infos["shapes"].status == "crashed"
    assert isinstance(infos["shapes"].last_metrics.get("loss"), float)

    view, records = read_run(store, "shapes")
    good = [(r.step, r.data) for r in records]
    assert good == [(0, {"loss": 0.5})] + [(1, {"loss": 0.25})] * len(BAD_SHAPES)
    reported = {(p.path, p.line, p.kind) for p in view.problems}
    assert reported == {(str(path), 3, "corrupt") for path in paths.values()}, view.problems

    for read in ("metrics", "table", "summarize", "schemas"):
        fresh = tracker.open_store(store).run("shapes")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tracker.TrackerWarning)
            if read == "metrics":
                cols = fresh.metrics()
                assert cols["step"].tolist() == [0] + [1] * len(BAD_SHAPES)
                assert cols["loss"].tolist() == [0.5] + [0.25] * len(BAD_SHAPES)
            elif read == "table":
                assert len(fresh.table("metrics")) == 1 + len(BAD_SHAPES)
                assert len(list(fresh.table("metrics").rows())) == 1 + len(BAD_SHAPES)
            elif read == "summarize":
                assert fresh.summarize()
            else:
                assert fresh.schemas() == ["metrics"]
        assert {(p.path, p.line) for p in fresh.problems} >= {(str(p), 3) for p in paths.values()} or \
            read == "schemas"


def test_cli_lists_the_store_and_verify_reports_every_bad_shape(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    with tracker.start_run(name="healthy", store=store, run_id="healthy") as run:
        run.log({"loss": 1.0}, step=0)
    paths = write_bad_run(store)
    env = child_env(tmp_path)
    res = cli("--store", str(store), "runs", "--format", "json", env=env, cwd=tmp_path)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert {d["id"] for d in json.loads(res.stdout)} == {"healthy", "shapes"}
    for command in (["show", "shapes"], ["export", "shapes", "--format", "csv"], ["tail", "shapes"]):
        res = cli("--store", str(store), *command, env=env, cwd=tmp_path)
        assert res.returncode == 0 and "Traceback" not in res.stderr, (command, res.stderr)
    res = cli("--store", str(store), "verify", "--format", "json", env=env, cwd=tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    problems = json.loads(res.stdout)["problems"]
    corrupt = {(p["path"], p["line"]) for p in problems if p["kind"] == "corrupt"}
    assert corrupt == {(str(p), 3) for p in paths.values()}, problems
    res = cli("--store", str(store), "verify", env=env, cwd=tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr


@pytest.mark.parametrize("name", ["time_a_string", "data_a_list"])
def test_a_start_line_of_the_wrong_shape_is_corrupt_and_the_run_still_lists(tmp_path: Path, host: tracker.Host,
                                                                            name: str) -> None:
    store = tmp_path / "store"
    run_dir = store / "runs" / "head"
    run_dir.mkdir(parents=True)
    wid = "gone-host-77-abcdef"
    header = event("run_started", 1, writer=wid, time=T0, data={"host": "gone-host", "pid": 77, "name": "head"})
    header.update(BAD_SHAPES[name])
    good = event("record", 2, writer=wid, time=T0 + 2, schema="metrics", step=0, data={"loss": 0.25})
    path = run_dir / f"{wid}.jsonl"
    path.write_bytes(event_line(header) + event_line(good))
    old = time.time() - 86400
    os.utime(path, (old, old))
    (info,) = tracker.open_store(store).runs()
    assert info.id == "head" and info.status == "crashed"
    view, records = read_run(store, "head")
    assert [r.data for r in records] == [{"loss": 0.25}]
    assert [(p.line, p.kind) for p in view.problems] == [(1, "corrupt")]
