"""Crash detection and resume: a run whose writer is gone reads as crashed, and can go on.

Same host: the writer's pid (and its start time, against pid reuse) is checked,
so a killed writer reads as crashed at once. Another host: the writer's
segment must keep changing (a heartbeat thread touches it); one silent for
``[store] heartbeat_timeout`` seconds is crashed. Another host is posed by a
child that reports a different host name, and by segments written with
another host in their header whose modification time is set back.
"""

from __future__ import annotations

import json
import os
import signal
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import child_env, cli, read_run, spawn, wait_for_line
from tracker.core.format import FORMAT_VERSION, encode_line
from tracker.read.segment import hostname, process_start


def write_segment(run_dir: Path, host: str, pid: int, proc_start: str | None, records: int,
                  finished: bool = False, start_time: float | None = None) -> Path:
    """A segment as a writer on ``host`` with process ``pid`` leaves it (through the store's own line encoder)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    wid = f"{host.split('.')[0]}-{pid}-abcdef"
    t = start_time if start_time is not None else time.time()

    def line(kind: str, seq: int, schema: str | None, step: int | None, data: dict) -> bytes:
        return encode_line({"v": FORMAT_VERSION, "kind": kind, "schema": schema, "step": step, "time": t + seq,
                            "w": wid, "seq": seq, "data": data})

    lines = [line("run_started", 1, None, None, {"host": host, "pid": pid, "proc_start": proc_start,
                                                  "writer": wid, "name": "posed", "project": None, "config": {},
                                                  "tags": [], "env": {}, "resumed": False})]
    lines += [line("record", 2 + k, "metrics", k, {"k": k}) for k in range(records)]
    if finished:
        lines.append(line("run_finished", 2 + records, None, None, {"status": "finished", "error": None,
                                                                    "records": records, "max_step": records - 1,
                                                                    "last": {"k": records - 1}}))
    seg = run_dir / f"{wid}.jsonl"
    seg.write_bytes(b"".join(lines))
    return seg


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The process reads tracker.toml with a 3 s heartbeat timeout; the host is built from it."""
    cfg = tmp_path / "tracker.toml"
    cfg.write_text('[store]\nheartbeat_timeout = 3\nheartbeat_interval = 0.2\n')
    monkeypatch.setenv("TRACKER_CONFIG", str(cfg))
    monkeypatch.chdir(tmp_path)
    old = tracker.set_host(None)
    yield tmp_path / "store"
    tracker.set_host(old)


def status(store: Path, run_id: str) -> str:
    return tracker.open_store(store).run(run_id).info.status


def test_same_host_killed_writer_is_crashed_at_once_and_a_stopped_one_is_running(tmp_path: Path) -> None:
    store = tmp_path / "store"
    out = tmp_path / "out.txt"
    p = spawn("loop", tmp_path, out, child_env(tmp_path), "--store", str(store), "--run-id", "r")
    wait_for_line(out, p)
    os.kill(p.pid, signal.SIGSTOP)  # alive but silent, however long: still running
    try:
        assert status(store, "r") == "running"
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
    assert status(store, "r") == "crashed"  # no timeout to wait for on the same host


def test_same_host_reused_pid_is_not_mistaken_for_the_writer(tmp_path: Path) -> None:
    store = tmp_path / "store"
    me = os.getpid()  # a live process, but not the one that wrote the segment
    write_segment(store / "runs" / "reused", hostname(), me, "1", 3)
    assert process_start(me) != "1"
    assert status(store, "reused") == "crashed"
    write_segment(store / "runs" / "live", hostname(), me, process_start(me), 3)
    assert status(store, "live") == "running"


def test_other_host_writer_is_crashed_after_the_configured_heartbeat_timeout(configured: Path) -> None:
    store = configured
    seg = write_segment(store / "runs" / "remote", "gpu-node-7.example", 4242, "99", 5)
    assert status(store, "remote") == "running"  # heard from just now
    age(seg, 2.0)
    assert status(store, "remote") == "running"  # within [store] heartbeat_timeout = 3
    age(seg, 4.0)
    assert status(store, "remote") == "crashed"  # silent for longer: crashed, though its pid means nothing here
    _, records = read_run(store, "remote")
    assert [r.data["k"] for r in records] == list(range(5))
    done = write_segment(store / "runs" / "remote-done", "gpu-node-7.example", 4242, "99", 5, finished=True)
    age(done, 3600)
    assert status(store, "remote-done") == "finished"  # a finished writer is never crashed, however old


def test_other_host_timeout_reaches_the_command_line(configured: Path,
                                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    store = configured
    seg = write_segment(store / "runs" / "remote", "gpu-node-7.example", 4242, "99", 5)
    age(seg, 10)
    env = child_env(configured.parent, TRACKER_CONFIG=os.environ["TRACKER_CONFIG"])
    res = cli("--store", str(store), "runs", "--format", "json", env=env, cwd=configured.parent)
    assert res.returncode == 0, res.stderr
    assert [r["status"] for r in json.loads(res.stdout)] == ["crashed"]
    elsewhere = tmp_path_factory.mktemp("elsewhere")  # no tracker.toml here or above: the default timeout (120 s)
    res = cli("--store", str(store), "runs", "--format", "json", env=child_env(elsewhere), cwd=elsewhere)
    assert [r["status"] for r in json.loads(res.stdout)] == ["running"]


@pytest.mark.slow
def test_heartbeat_keeps_a_silent_remote_writer_running_until_it_dies(configured: Path) -> None:
    store = configured
    work = configured.parent
    out = work / "hb.txt"
    p = spawn("heartbeat", work, out, child_env(work, TRACKER_CONFIG=os.environ["TRACKER_CONFIG"]),
              "--store", str(store), "--run-id", "hb")
    try:
        wait_for_line(out, p)
        view = tracker.open_store(store).run("hb")
        (seg,) = view.segment_paths()
        assert json.loads(seg.read_bytes().split(b"\n")[0])["data"]["host"] == "other-host.example"
        first = seg.stat().st_mtime
        # The child logs nothing more; only its heartbeat keeps the segment fresh, for longer than the timeout.
        deadline = time.time() + 4.0
        while time.time() < deadline:
            assert view.refresh().status == "running"
            time.sleep(0.25)
        assert seg.stat().st_mtime > first
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
    killed = time.time()
    while view.refresh().status == "running":
        assert time.time() - killed < 10, "never read as crashed"
        time.sleep(0.1)
    assert view.info.status == "crashed" and time.time() - killed >= 2.5


def test_resume_after_crash_continues_with_later_steps_and_keeps_earlier_records(tmp_path: Path,
                                                                                 host: tracker.Host) -> None:
    store = tmp_path / "store"
    out = tmp_path / "out.txt"
    p = spawn("loop", tmp_path, out, child_env(tmp_path), "--store", str(store), "--run-id", "again")
    wait_for_line(out, p)
    while out.read_bytes().count(b"\n") < 200:
        time.sleep(0.005)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    acked = out.read_bytes().count(b"\n") - 2  # after "pre" and "ready"
    view, before = read_run(store, "again")
    assert view.info.status == "crashed" and len(before) >= acked
    last = max(r.step for r in before)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = tracker.start_run(store=store, run_id="again", resume=True)
    assert all(": torn: " in str(w.message) for w in caught)  # the killed writer's last line, if it was cut
    with run:
        assert tracker.open_store(store).run("again").info.status == "running"
        run.log({"c": 1, "k": 0, "x": 0.0})
        run.log({"c": 1, "k": 1, "x": 0.0}, step=3)  # an explicit earlier step is kept as logged
        run.log({"c": 1, "k": 2, "x": 0.0})
    view, after = read_run(store, "again")
    assert after[:len(before)] == before
    assert [r.step for r in after[len(before):]] == [last + 1, 3, last + 2]
    assert view.info.status == "finished" and view.info.records == len(before) + 3
    assert view.info.last_step == last + 2
