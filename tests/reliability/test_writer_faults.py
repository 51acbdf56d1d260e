"""Faults on the write path: Ctrl-C between a write and its bookkeeping, threads without steps, step errors."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import pytest

import tracker
import tracker.write.route
import tracker.write.writer
from tests.reliability.support import child_env, local_host, verify

# A training loop that a Ctrl-C stops: the run is recorded as stopped, with KeyboardInterrupt as its error.
CTRL_C_LOOP = """
import sys, tracker
with tracker.start_run(store=sys.argv[1], run_id=sys.argv[2]) as run:
    print("ready", flush=True)
    k = 0
    while True:
        run.log({"k": k, "x": k / 7, "y": 1.5, "z": -2.0})
        k += 1
"""


def test_ctrl_c_or_interrupt_while_logging_leaves_a_run_that_verifies_clean(tmp_path: Path) -> None:
    """Item 4: SIGINT lands mostly during os.write, so the interrupt is raised right after it returns."""
    store = tmp_path / "store"
    rng = random.Random(4)
    runs = [f"ctrl-c-{i}" for i in range(6)]
    for run_id in runs:
        proc = subprocess.Popen([sys.executable, "-c", CTRL_C_LOOP, str(store), run_id], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=child_env(tmp_path), cwd=tmp_path)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready", proc.stderr.read() if proc.stderr else ""
        time.sleep(rng.uniform(0.05, 0.3))
        proc.send_signal(signal.SIGINT)  # what Ctrl-C, or `timeout -s INT`, sends
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()  # a child the interrupt did not stop would log forever
        assert b"KeyboardInterrupt" in err, err.decode(errors="replace")
    code, report = verify(store, *runs, work=tmp_path)
    assert code == 0 and report["problems"] == [], report["problems"]
    opened = tracker.Store(store, host=local_host())
    for run_id in runs:
        view = opened.run(run_id)
        assert view.info.status == "stopped"  # Ctrl-C: stopped on purpose, not failed
        assert view.info.error is not None and view.info.error["type"] == "KeyboardInterrupt"
        records = list(view.records())
        assert view.info.records == len(records) > 0
        assert [r.data["k"] for r in records] == list(range(len(records)))
        assert view.info.last_step == records[-1].step == len(records) - 1


def test_ctrl_c_or_interrupt_right_after_the_write_counts_the_line(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 4, injected: KeyboardInterrupt raised the moment os.write returns, on both write paths."""
    host = local_host()
    old = tracker.set_host(host)
    real_write = tracker.write.writer._write
    interrupts = {"left": 0}

    def write_then_interrupt(fd: int, data: bytes) -> int:
        n = real_write(fd, data)
        if interrupts["left"]:
            interrupts["left"] -= 1
            raise KeyboardInterrupt
        return n

    monkeypatch.setattr(tracker.write.writer, "_write", write_then_interrupt)  # every line's one write
    # The C fast path runs no signal handler between its write and its counts: the window injected
    # into here is the Python body's (which a build without a C compiler uses).
    monkeypatch.setattr(tracker.write.route, "fast_append", None)
    monkeypatch.setattr(tracker.Run, "log", getattr(tracker.Run.log, "__wrapped__", tracker.Run.log))
    try:
        run = tracker.start_run(store=tmp_path / "store", run_id="injected")
        run.log({"x": 0.0})  # makes the route: the next ones take the fast path
        for k in range(1, 4):
            interrupts["left"] = 1
            with pytest.raises(KeyboardInterrupt):
                run.log({"x": float(k)})
        sub = host.bus.subscribe(lambda e: None, kinds=tracker.RECORD)  # records now take the bus
        interrupts["left"] = 1
        with pytest.raises(KeyboardInterrupt):
            run.log({"x": 4.0})
        sub.unsubscribe()
        run.log({"x": 5.0})
        run.finish("failed", KeyboardInterrupt())
    finally:
        tracker.set_host(old)
    code, report = verify(tmp_path / "store", "injected", work=tmp_path)
    assert code == 0 and report["problems"] == [], report["problems"]
    view = tracker.Store(tmp_path / "store", host=local_host()).run("injected")
    recs = list(view.records())
    assert [(r.step, r.data["x"], r.seq) for r in recs] == [(k, float(k), k + 2) for k in range(6)]
    assert view.info.records == 6 and view.info.last_step == 5 and view.info.last_metrics == {"x": 5.0}


@pytest.mark.parametrize("path", ["route", "bus"])
def test_threads_without_steps_never_share_one(tmp_path: Path, path: str) -> None:
    """Item 6: 16 threads call run.log without a step on one Run; every call gets its own step."""
    host = local_host()
    old = tracker.set_host(host)
    threads, calls = 16, 500
    sub = host.bus.subscribe(lambda e: None, kinds=tracker.RECORD) if path == "bus" else None
    start = threading.Barrier(threads)
    try:
        with tracker.start_run(store=tmp_path / "store", run_id="threads") as run:

            def worker(t: int) -> None:
                start.wait()
                for k in range(calls):
                    run.log({"t": t, "k": k})

            pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
            for th in pool:
                th.start()
            for th in pool:
                th.join()
    finally:
        if sub is not None:
            sub.unsubscribe()
        tracker.set_host(old)
    view = tracker.Store(tmp_path / "store", host=local_host()).run("threads")
    recs = list(view.records())
    steps = [r.step for r in recs]
    assert len(recs) == threads * calls
    assert sorted(steps) == list(range(threads * calls)), f"{len(steps) - len(set(steps))} steps given twice"
    for t in range(threads):  # each thread's own calls in its order
        mine = [r for r in recs if r.data["t"] == t]
        assert [r.data["k"] for r in mine] == list(range(calls))
        assert [r.step for r in mine] == sorted(r.step for r in mine)


@attrs.frozen(kw_only=True)
class Point:
    loss: float


class PointPlugin:
    @tracker.hookimpl
    def tracker_schemas(self) -> list[tracker.Schema]:
        return [tracker.Schema("faults.point", Point)]


def test_a_bad_step_of_log_record_names_the_records_schema(tmp_path: Path) -> None:
    """Item 12: the step error of log_record named the schema ``metrics``."""
    old = tracker.set_host(local_host(PointPlugin(), names=["faults"]))
    try:
        with tracker.start_run(store=tmp_path / "store", run_id="steps") as run:
            for bad in ("x", 1.5, 2**60):
                with pytest.raises(tracker.SchemaError) as got:
                    run.log_record("faults.point", step=bad, loss=0.5)
                text = str(got.value)
                assert "faults.point" in text and "metrics" not in text and "step" in text, text
            with pytest.raises(tracker.SchemaError) as got:
                run.log({"loss": 0.5}, step="x")
            assert "'metrics'" in str(got.value) and "step" in str(got.value)
            run.log_record("faults.point", step=3, loss=0.5)
    finally:
        tracker.set_host(old)
    recs = list(tracker.Store(tmp_path / "store", host=local_host(PointPlugin(), names=["faults"]))
                .run("steps").records())
    assert [(r.schema, r.step) for r in recs] == [("faults.point", 3)]
