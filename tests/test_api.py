"""The embedded logging API: runs, steps, statuses, resume, values."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tracker
from tests.conftest import strict_lines


def test_log_and_read_back(tmp_store: Path) -> None:
    with tracker.start_run(project="proj", name="first", config={"opt": {"lr": 0.1}}, tags=["a", "b"]) as run:
        run.log({"loss": 0.5, "acc": 0.25})
        run.log({"loss": 0.25})
    view = tracker.open_store().run(run.id)
    info = view.info
    assert (info.name, info.project, info.status) == ("first", "proj", "finished")
    assert info.config == {"opt": {"lr": 0.1}}
    assert info.tags == ["a", "b"]
    assert info.records == 2
    m = view.metrics()
    assert m["step"].tolist() == [0, 1]
    assert m["loss"].tolist() == [0.5, 0.25]
    assert m["acc"][0] == 0.25 and math.isnan(m["acc"][1])
    assert run.path == tmp_store / "runs" / run.id


def test_auto_steps_continue_after_explicit_and_keep_repeats(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        run.log({"x": 1.0})  # 0
        run.log({"x": 2.0}, step=10)
        run.log({"x": 3.0})  # 11
        run.log({"x": 4.0}, step=5)  # out of order: kept
        run.log({"x": 5.0}, step=5)  # repeated: kept
        run.log({"x": 6.0})  # 12
    m = tracker.open_store().run(run.id).metrics()
    assert m["step"].tolist() == [0, 10, 11, 5, 5, 12]
    assert m["x"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_exception_marks_failed_records_error_and_propagates(tmp_store: Path) -> None:
    with pytest.raises(ZeroDivisionError):
        with tracker.start_run(name="boom") as run:
            run.log({"loss": 1.0})
            1 / 0  # noqa: B018
    info = tracker.open_store().run(run.id).info
    assert info.status == "failed"
    assert info.error["type"] == "ZeroDivisionError"
    assert "division by zero" in info.error["message"]
    assert "1 / 0" in info.error["traceback"]


def test_finish_is_idempotent_and_logging_after_finish_fails(tmp_store: Path) -> None:
    run = tracker.start_run()
    run.log({"a": 1.0})
    run.finish()
    run.finish()
    run.finish("failed")
    assert tracker.open_store().run(run.id).info.status == "finished"
    finished = [e for e in strict_lines(run.path) if e["kind"] == "run_finished"]
    assert len(finished) == 1
    with pytest.raises(tracker.TrackerError, match="finished"):
        run.log({"a": 2.0})


def test_module_level_functions_act_on_active_run(tmp_store: Path) -> None:
    assert tracker.current_run() is None
    with pytest.raises(tracker.TrackerError, match="no active run"):
        tracker.log({"x": 1.0})
    with tracker.start_run() as run:
        assert tracker.current_run() is run
        tracker.log({"x": 1.0}, step=3)
        tracker.log_record("metrics", {"y": 2.0})
    assert tracker.current_run() is None
    recs = list(tracker.open_store().run(run.id).records())
    assert [(r.step, r.data) for r in recs] == [(3, {"x": 1.0}), (4, {"y": 2.0})]


def test_run_id_exists_needs_resume_and_resume_continues_steps(tmp_store: Path) -> None:
    with tracker.start_run(run_id="exp-1") as run:
        for i in range(3):
            run.log({"x": float(i)})
    with pytest.raises(tracker.TrackerError, match="already exists"):
        tracker.start_run(run_id="exp-1")
    with tracker.start_run(run_id="exp-1", resume=True) as again:
        again.log({"x": 9.0})
    view = tracker.open_store().run("exp-1")
    assert view.metrics()["step"].tolist() == [0, 1, 2, 3]
    assert view.info.status == "finished"
    assert view.info.writers == 2


def test_resume_creates_missing_run(tmp_store: Path) -> None:
    with tracker.start_run(run_id="rank-run", resume=True) as run:
        run.log({"x": 1.0})
    assert tracker.open_store().run("rank-run").info.records == 1


@pytest.mark.parametrize("bad", ["../x", "a/b", "", "a" * 65, "x y", "..", "a\x00b", "/abs"])
def test_invalid_run_ids_are_refused(tmp_store: Path, bad: str) -> None:
    with pytest.raises(tracker.TrackerError, match="invalid run id"):
        tracker.start_run(run_id=bad)
    assert not (tmp_store / "runs").exists() or list((tmp_store / "runs").iterdir()) == []


def test_second_process_attaches_with_tracker_run_id(tmp_store: Path) -> None:
    with tracker.start_run(run_id="shared") as run:
        run.log({"main": 1.0})
        code = textwrap.dedent("""
            import tracker
            with tracker.start_run() as run:
                assert run.id == "shared"
                run.log({"child": 2.0}, step=7)
        """)
        env = {**os.environ, "TRACKER_RUN_ID": "shared"}
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
        run.log({"main": 3.0})
    view = tracker.open_store().run("shared")
    recs = list(view.records())
    assert sorted(r.data.get("main", r.data.get("child")) for r in recs) == [1.0, 2.0, 3.0]
    assert len({r.writer for r in recs}) == 2
    assert view.info.status == "finished"


def test_killed_writer_reads_as_crashed(tmp_store: Path) -> None:
    code = textwrap.dedent("""
        import os, signal, tracker
        run = tracker.start_run(run_id="victim")
        run.log({"loss": 1.0})
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert proc.returncode == -9
    view = tracker.open_store().run("victim")
    assert view.info.status == "crashed"
    assert view.metrics()["loss"].tolist() == [1.0]


def test_environment_facts(tmp_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_text("x")
    subprocess.run([*git, "-C", str(repo), "add", "f.txt"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "c"], check=True)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(repo)
    with tracker.start_run(environment=True) as run:
        pass
    env = tracker.open_store().run(run.id).info.env
    assert env["git_commit"] == head
    assert env["python"] == ".".join(map(str, sys.version_info[:3]))
    assert env["host"] and env["argv"]
    assert tracker.open_store().run(run.id).info.created_at is not None


def test_nan_inf_round_trip_and_strict_json(tmp_store: Path) -> None:
    values = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "negzero": -0.0, "big": 2**53,
              "flag": True, "tiny": 5e-324}
    with tracker.start_run() as run:
        run.log(values)
    (rec,) = tracker.open_store().run(run.id).records()
    assert math.isnan(rec.data["nan"])
    assert rec.data["inf"] == math.inf and rec.data["ninf"] == -math.inf
    assert math.copysign(1.0, rec.data["negzero"]) == -1.0
    assert rec.data["big"] == 2**53 and type(rec.data["big"]) is int
    assert rec.data["flag"] is True and rec.data["tiny"] == 5e-324
    lines = strict_lines(run.path)  # raises on NaN/Infinity literals
    assert any(e["kind"] == "record" for e in lines)


def test_unencodable_ints_and_values_are_refused_and_nothing_written(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        before = len(strict_lines(run.path))
        # (a str is stored as a text record; one that is not UTF-8 is refused)
        for bad in ({"x": 2**53 + 1}, {"x": -(2**63)}, {"x": "\ud800"}, {"x": [1.0]}, {"x": None}, {"x": b"1"},
                    {"x": 1 + 2j}, {"step": 1.0}, {"": 1.0}, {("a",): 1.0}, {"ok": 1.0, "t": "\udcff"}):
            with pytest.raises(tracker.SchemaError):
                run.log(bad)
        assert len(strict_lines(run.path)) == before
        run.log({"ok": 1.0})  # the run goes on
    assert tracker.open_store().run(run.id).metrics()["ok"].tolist() == [1.0]


def test_numpy_scalars_and_0d_arrays_count_as_numbers(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        run.log({"f32": np.float32(0.5), "i64": np.int64(3), "b": np.bool_(True), "arr": np.array(2.5)},
                step=np.int64(4))
        with pytest.raises(tracker.SchemaError, match="arr"):
            run.log({"arr": np.array([1.0, 2.0])})
    (rec,) = tracker.open_store().run(run.id).records()
    assert rec.step == 4
    assert rec.data == {"f32": 0.5, "i64": 3, "b": True, "arr": 2.5}


def test_schema_error_lists_every_problem(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        with pytest.raises(tracker.SchemaError) as err:
            run.log({"step": 1.0, "a": b"x", "b": 2**60})
    msg = str(err.value)
    assert "3 problems" in msg and "'step'" in msg and "given bytes b'x'" in msg and "2**53" in msg
    assert err.value.schema == "metrics"
    assert [p[0] for p in err.value.problems] == ["step", "a", "b"]


def test_fork_child_writes_its_own_segment(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        run.log({"parent": 1.0})
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                run.log({"child": 2.0})
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        run.log({"parent": 3.0})
    segs = sorted(run.path.glob("*.jsonl"))
    assert len(segs) == 2
    recs = list(tracker.open_store().run(run.id).records())
    assert sorted(k for r in recs for k in r.data) == ["child", "parent", "parent"]


def test_second_run_object_in_one_process_shares_the_segment_and_continues_steps(tmp_store: Path) -> None:
    first = tracker.start_run(run_id="same")
    first.log({"x": 1.0}, step=4)
    second = tracker.start_run(run_id="same", resume=True)
    second.log({"x": 2.0})
    second.finish()
    first.log({"x": 3.0})
    first.finish()
    assert len(list(first.path.glob("*.jsonl"))) == 1
    view = tracker.open_store().run("same")
    assert view.metrics()["step"].tolist() == [4, 5, 5]
    assert view.info.status == "finished" and view.info.records == 3


def test_records_are_stored_whatever_host_objects_came_before(tmp_path: Path, make_tracker_host) -> None:  # noqa: ANN001
    import gc

    gc.freeze()  # what the process held before stays out of each collection: it costs this test's objects only
    try:
        for i in range(40):
            make_tracker_host()  # the previous host becomes garbage; its id() may be reused
            gc.collect()
            store = tmp_path / f"s{i}"
            with tracker.start_run(store=store) as run:
                run.log({"loss": 1.0})
            assert tracker.open_store(store).run(run.id).metrics()["loss"].tolist() == [1.0]
    finally:
        gc.unfreeze()
