"""What ended a run, beside what it printed: uncaught exceptions, dying threads, Ctrl-C (real child processes)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracker.read.console import console_lines

from .conftest import child_env, only_run, run_py, script, texts

INIT_CRASH = """
import tracker
run = tracker.init(project="p")
for epoch in range(3):
    print(f"epoch {epoch}")
print("W1128 dataloader.py:88 worker 3 slow", file=__import__("sys").stderr)
raise RuntimeError("NCCL error: unhandled system error")
"""


def test_an_uncaught_exception_of_an_init_run_is_its_error_beside_the_last_lines(tmp_path: Path,
                                                                                  store: Path) -> None:
    proc = run_py(script(tmp_path, INIT_CRASH), store)
    assert proc.returncode == 1 and b"NCCL error" in proc.stderr
    view = only_run(store)
    info = view.info
    assert info.status == "failed"
    assert info.error["type"] == "RuntimeError" and "NCCL" in info.error["message"]
    assert "raise RuntimeError" in info.error["traceback"]
    assert texts(view, "stdout") == ["epoch 0", "epoch 1", "epoch 2"]
    err = texts(view, "stderr")
    # The traceback the interpreter printed is in the console too, after the warning above it.
    assert err[0] == "W1128 dataloader.py:88 worker 3 slow"
    assert "Traceback (most recent call last):" in err and err[-1] == "RuntimeError: NCCL error: unhandled system error"


THREAD_CRASH = """
import sys, threading, tracker
def train():
    run = tracker.start_run(project="p", name="in a thread")
    print("training in a thread")
    raise ValueError("bad batch")
def helper():
    raise KeyError("a helper thread")
t = threading.Thread(target=train)
t.start(); t.join()
main = tracker.start_run(project="p", name="main")
h = threading.Thread(target=helper)
h.start(); h.join()
print("main goes on")
main.finish()
"""


def test_a_dying_thread_fails_the_run_it_started_and_only_that_one(tmp_path: Path, store: Path) -> None:
    import tracker

    proc = run_py(script(tmp_path, THREAD_CRASH), store)
    assert proc.returncode == 0, proc.stderr
    runs = {r.name: r for r in tracker.Store(store).runs()}
    assert runs["in a thread"].status == "failed"
    assert runs["in a thread"].error["type"] == "ValueError"
    assert runs["main"].status == "finished" and runs["main"].error is None
    err = texts(tracker.Store(store).run(runs["main"].id), "stderr")
    assert any("KeyError: 'a helper thread'" in line for line in err)  # printed, so kept


LOOP = """
import sys, time, tracker
if sys.argv[1] == "with":
    with tracker.start_run(project="p") as run:
        print("ready", flush=True)
        while True:
            run.log({"x": 1.0}); time.sleep(0.01)
else:
    run = tracker.init(project="p")
    print("ready", flush=True)
    while True:
        tracker.log({"x": 1.0}); time.sleep(0.01)
"""


@pytest.mark.parametrize("how", ["with", "init"])
def test_ctrl_c_ends_the_run_stopped(tmp_path: Path, store: Path, how: str) -> None:
    proc = subprocess.Popen([sys.executable, str(script(tmp_path, LOOP)), how], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=child_env(store), cwd=tmp_path)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert b"KeyboardInterrupt" in err
    view = only_run(store)
    assert view.info.status == "stopped"
    assert view.info.error["type"] == "KeyboardInterrupt"
    lines = console_lines(view)
    assert lines[0].text == "ready"
