"""Edits after the fact: tag, rename, note, config and summary events, from the API and real processes."""

from __future__ import annotations

import json
import os
import signal
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tracker
from tracker.lifecycle import EDITS_FOLDER, edit_paths
from tracker.read.verify import verify_store

from .support import make_runs, spawn, tracker_cmd, tree_hashes, wait_ready


def test_edits_show_in_run_info(store: Path) -> None:
    with tracker.start_run(project="p", name="first", tags=["a"], config={"lr": 0.1}) as run:
        run.log({"loss": 1.0})
    s = tracker.open_store(store)
    s.tag(run.id, add=["b", "c"], remove=["a"])
    s.rename(run.id, "second")
    s.note(run.id, "diverged")
    s.note(run.id, "rerun with clipping", append=True)
    s.update_config(run.id, {"bs": 64})
    s.update_summary(run.id, {"best": 0.9})
    s.update_summary(run.id, {"best": 0.95})
    info = s.run(run.id).info
    assert info.name == "second" and info.tags == ["b", "c"]
    assert info.notes == "diverged\nrerun with clipping"
    assert info.config == {"lr": 0.1, "bs": 64} and info.summary == {"best": 0.95}
    assert info.status == "finished" and info.writers == 1 and info.records == 1
    # The run is found by its new name; the old one no longer names it.
    assert s.run("second").id == run.id
    with pytest.raises(tracker.RunNotFound):
        s.run("first")
    # The run's own segment is untouched; the edits are in a segment of their own.
    (seg,) = s.run(run.id).segment_paths()
    assert [p.parent.name for p in edit_paths(run.path)] == [EDITS_FOLDER]
    assert verify_store(store).ok


def test_an_edit_segment_is_one_per_process_and_starts_with_edits(store: Path) -> None:
    (rid,) = make_runs(store, 1)
    for i in range(3):
        assert tracker_cmd(store, "tag", rid, "--add", f"x{i}").returncode == 0
    paths = edit_paths(store / "runs" / rid)
    assert len(paths) == 3 and all(p.name.startswith("edits-") for p in paths)
    lines = [json.loads(line) for p in paths for line in p.read_text().splitlines()]
    assert [ln["kind"] for ln in lines] == ["edit"] * 3
    assert all(ln["w"] == p.stem for p, ln in zip(paths, lines, strict=True))
    assert tracker.open_store(store).run(rid).info.tags == ["t0", "x0", "x1", "x2"]


def test_concurrent_edits_from_two_processes_both_land(store: Path) -> None:
    (rid,) = make_runs(store, 1)
    code = """
        import sys, tracker
        s = tracker.open_store()
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(50):
            s.tag("{rid}", add=["{who}%d" % i])
            s.update_summary("{rid}", {{"{who}": i}})
    """
    procs = [spawn(store, code.format(rid=rid, who=who)) for who in ("a", "b")]
    for p in procs:
        assert wait_ready(p) == "ready"
    for p in procs:  # both start editing at the same moment
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    info = tracker.open_store(store).run(rid).info
    assert set(info.tags) == {"t0", *(f"a{i}" for i in range(50)), *(f"b{i}" for i in range(50))}
    assert info.summary == {"a": 49, "b": 49}
    assert len(edit_paths(store / "runs" / rid)) == 2
    assert verify_store(store).ok


def test_an_edit_of_a_running_run_does_not_disturb_its_writer(store: Path) -> None:
    child = spawn(store, """
        import sys, tracker
        with tracker.start_run(project="p", name="live", run_id="live") as run:
            for i in range(200):
                run.log({"loss": float(i)})
            print("ready", flush=True)
            sys.stdin.readline()
            for i in range(200, 400):
                run.log({"loss": float(i)})
    """)
    assert wait_ready(child) == "ready"
    s = tracker.open_store(store)
    assert s.run("live").info.status == "running"
    s.tag("live", add=["watched"])
    s.rename("live", "live, renamed")
    s.note("live", "looked at it while it ran")
    info = s.run("live").info
    assert info.status == "running" and info.writers == 1 and info.tags == ["watched"]
    child.stdin.write("go\n")
    child.stdin.flush()
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    view = s.run("live")
    info = view.info
    assert info.status == "finished" and info.name == "live, renamed" and info.records == 400
    assert list(view.metrics()["loss"]) == [float(i) for i in range(400)]
    assert verify_store(store).ok


@pytest.mark.parametrize("args, message", [
    (("tag", "nosuch", "--add", "x"), "no run matches 'nosuch'"),
    (("tag", "run0", "--add", "two\nlines"), "must be one line"),
    (("tag", "run0", "--add", "  "), "must not be empty"),
    (("tag", "run0", "nosuch", "--add", "x"), "no run matches 'nosuch'"),
    (("tag", "run0", "--add", "x", "--remove", "x"), "both added and removed"),
    (("rename", "run0", ""), "must not be empty"),
    (("rename", "run0", "a\nb"), "must be one line"),
    (("rename", "nosuch", "x"), "no run matches 'nosuch'"),
    (("note", "nosuch", "x"), "no run matches 'nosuch'"),
    (("note", "run0", "", "--append"), "nothing to append"),
])
def test_bad_edits_are_one_line_errors_and_change_nothing(store: Path, cmd: Callable[..., Any],
                                                          args: tuple[str, ...], message: str) -> None:
    make_runs(store, 1)
    before = tree_hashes(store)
    proc = cmd(*args)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and message in proc.stderr and "Traceback" not in proc.stderr
    assert tree_hashes(store) == before


def test_bad_values_from_python_change_nothing(store: Path) -> None:
    (rid,) = make_runs(store, 1)
    s = tracker.open_store(store)
    before = tree_hashes(store)
    with pytest.raises(tracker.SchemaError, match="summary.*best: expected a JSON value"):
        s.update_summary(rid, {"best": object()})
    with pytest.raises(tracker.SchemaError, match="config.*x: .*stand for floats"):
        s.update_config(rid, {"x": "NaN"})
    with pytest.raises(tracker.TrackerError, match="tag: expected a str"):
        s.tag(rid, add=[3])
    assert tree_hashes(store) == before


def test_non_finite_summary_values_round_trip(store: Path) -> None:
    (rid,) = make_runs(store, 1)
    s = tracker.open_store(store)
    s.update_summary(rid, {"nan": float("nan"), "inf": float("inf"), "nested": {"x": -float("inf")}})
    summary = s.run(rid).info.summary
    assert summary["nan"] != summary["nan"] and summary["inf"] == float("inf")
    assert summary["nested"] == {"x": -float("inf")}


def test_damaged_and_unknown_edit_lines_are_reported_and_skipped(store: Path) -> None:
    (rid,) = make_runs(store, 1)
    assert tracker_cmd(store, "tag", rid, "--add", "kept").returncode == 0  # an editor that is gone
    (path,) = edit_paths(store / "runs" / rid)
    from tracker.core.format import encode_line

    with open(path, "ab") as f:
        f.write(encode_line({"v": 1, "kind": "future_kind", "schema": None, "step": None, "time": 2e9,
                             "w": path.stem, "seq": 2, "data": {}}))
        f.write(b'{"v":1,"kind":"edit","damaged\n')
        f.write(b'{"v":1,"kind":"edit","torn')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info = tracker.open_store(store).run(rid).info
    assert info.tags == ["t0", "kept"]
    text = "\n".join(str(w.message) for w in caught)
    assert "future_kind" in text and ":3: corrupt" in text and ":4: torn" in text
    report = verify_store(store)
    assert {(Path(p.path).name, p.line, p.kind) for p in report.problems} == {
        (path.name, 3, "corrupt"), (path.name, 4, "torn")}


def test_verify_checks_edit_segments(store: Path, cmd: Callable[..., Any]) -> None:
    (rid,) = make_runs(store, 1)
    tracker.open_store(store).tag(rid, add=["x"])
    (path,) = edit_paths(store / "runs" / rid)
    assert cmd("verify").returncode == 0
    data = path.read_bytes().replace(b'"x"', b'"y"')
    path.write_bytes(data)
    proc = cmd("verify")
    assert proc.returncode == 1 and "checksum" in proc.stdout and path.name in proc.stdout


def test_a_killed_editor_leaves_no_visible_empty_segment(store: Path) -> None:
    (rid,) = make_runs(store, 1)
    child = spawn(store, f"""
        import tracker
        s = tracker.open_store()
        print("ready", flush=True)
        i = 0
        while True:
            s.tag("{rid}", add=["k%d" % i])
            i += 1
    """)
    assert wait_ready(child) == "ready"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    info = tracker.open_store(store).run(rid).info
    assert info.status == "finished" and info.tags[0] == "t0"
    assert all(p.stat().st_size > 0 for p in edit_paths(store / "runs" / rid))
    report = verify_store(store)
    assert all(p.kind == "torn" for p in report.problems)
