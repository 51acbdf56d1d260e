"""``tracker tail``: records in order; ``-f`` follows every writer until the run ends or Ctrl-C."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

import tracker
from tests.cli.support import write_run

TIMEOUT = 20.0


def _records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def two_writers(store):
    """One run written by two processes whose records interleave in time."""
    write_run(store, "tworun", [(0, {"loss": 1.0}), (2, {"loss": float("nan")}), (4, {"loss": 0.25})],
              writer="host-1-aaaaaa", created=1000.0)
    write_run(store, "tworun", [(1, {"rank": 1.0}), (3, {"rank": float("inf")})], writer="host-2-bbbbbb",
              created=1000.5, start_kind="writer_started")
    return "tworun"


def test_merges_writers_by_time(cli, two_writers):
    result = cli("tail", two_writers, "--format", "jsonl")
    assert result.exit_code == 0, result.output
    recs = _records(result.stdout)
    assert [r["step"] for r in recs] == [0, 1, 2, 3, 4]
    assert [r["writer"] for r in recs[:2]] == ["host-1-aaaaaa", "host-2-bbbbbb"]
    assert recs[2]["data"] == {"loss": "NaN"} and recs[3]["data"] == {"rank": "Infinity"}


def test_text_lines(cli, two_writers):
    lines = cli("tail", two_writers).stdout.splitlines()
    assert len(lines) == 5
    assert lines[0].split()[0] == "0" and lines[0].split()[2:] == ["metrics", "loss=1"]
    assert lines[3].split()[-1] == "rank=inf"


def test_last_n_and_schema(cli, store):
    with tracker.start_run() as run:
        for s in range(10):
            run.log({"x": float(s)}, step=s)
        run.log_record("phase.step", step=10, phase="FULL", phase_step=0, cycle=0, loss=0.5)
    recs = _records(cli("tail", run.id, "-n", "3", "--format", "jsonl").stdout)
    assert [r["step"] for r in recs] == [8, 9, 10]
    only = _records(cli("tail", run.id, "--schema", "phase.step", "--format", "jsonl").stdout)
    assert len(only) == 1 and only[0]["data"]["phase"] == "FULL" and only[0]["schema"] == "phase.step"
    out = cli("tail", run.id, "--schema", "phase.step").stdout
    assert "phase=FULL" in out and "phase.step" not in out  # one schema: no schema column


class Lines:
    """The lines a subprocess prints, read by a thread so that the test can wait with a timeout."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(proc.stdout,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.queue.put(line)

    def next(self, timeout: float = TIMEOUT) -> dict:
        return json.loads(self.queue.get(timeout=timeout))


def _follow(store, run_id: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "TRACKER_RUN_ID"}
    return subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "tail", run_id, "-f",
                             "--format", "jsonl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def test_follow_sees_other_processes_and_stops_when_the_run_finishes(store):
    run = tracker.start_run(name="live")
    run.log({"loss": 1.0}, step=0)
    proc = _follow(store, run.id)
    try:
        lines = Lines(proc)
        assert lines.next()["data"] == {"loss": 1.0}
        run.log({"loss": 0.5}, step=1)  # this process, after tail started
        assert lines.next()["data"] == {"loss": 0.5}
        # A second writer joins the same run from another process, logs, and leaves.
        rank = subprocess.run(
            [sys.executable, "-c", "import tracker; r = tracker.start_run(); r.log({'rank': 1.0}, step=7); r.finish()"],
            env={**os.environ, "TRACKER_STORE": str(store), "TRACKER_RUN_ID": run.id}, capture_output=True,
            text=True, timeout=TIMEOUT)
        assert rank.returncode == 0, rank.stderr
        got = lines.next()
        assert got["data"] == {"rank": 1.0} and got["step"] == 7 and got["writer"] != run.writer_id
        assert proc.poll() is None  # the first writer still runs: keep following
        run.log({"loss": 0.25}, step=2)
        assert lines.next()["data"] == {"loss": 0.25}
        run.finish()
        assert proc.wait(timeout=TIMEOUT) == 0
        assert f"run {run.id} finished" in proc.stderr.read()
    finally:
        run.finish()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_exits_cleanly(store):
    run = tracker.start_run(name="endless")
    run.log({"loss": 1.0})
    proc = _follow(store, run.id)
    try:
        Lines(proc).next()  # following now
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=TIMEOUT) == 0
        err = proc.stderr.read()
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    finally:
        run.finish()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_without_follow_a_running_run_prints_what_is_there(cli, store):
    run = tracker.start_run()
    try:
        run.log({"a": 1.0})
        result = cli("tail", run.id, "--format", "jsonl")
        assert result.exit_code == 0 and len(_records(result.stdout)) == 1
    finally:
        run.finish()


def test_follow_a_finished_run_returns_at_once(cli, two_writers):
    start = time.monotonic()
    result = cli("tail", two_writers, "-f", "--format", "jsonl")
    assert result.exit_code == 0 and len(_records(result.stdout)) == 5
    assert "finished" in result.stderr and time.monotonic() - start < 5
