"""Streaming under kill -9: of the training process, of the follower; every acknowledged record exactly once."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

import tracker

from ..query.conftest import pg_server, pg_url  # noqa: F401 - the PostgreSQL fixtures
from .streaming import db_keys, follower_pid, local_keys, project, safe, stop_follower, train, wait

pytestmark = pytest.mark.slow

#: Logs until killed, printing the last step ``log`` returned from every 50 records.
LOGGER = """
    import time, tracker
    run = tracker.start_run("team", "victim", run_id="{rid}")
    i = 0
    while True:
        run.log({{"loss": 1.0 / (i + 1), "i": i}}, step=i)
        if i % 50 == 0:
            print(i, flush=True)
            time.sleep(0.002)
        i += 1
"""


def acked(out: str) -> int:
    """The last step the killed process reported as returned from ``log``."""
    steps = [int(x) for x in out.split() if x.isdigit()]
    return max(steps) if steps else -1


def test_kill_9_of_the_training_process_ten_times(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    folder, store = project(tmp_path, pg_url)
    rng = random.Random(31)
    acks = {}
    try:
        for n in range(10):
            rid = f"victim{n}"
            child = train(folder, LOGGER.format(rid=rid))
            first = child.stdout.readline()  # logging has begun
            assert first.strip() == "0", child.stderr.read()
            time.sleep(rng.uniform(0.05, 0.8))
            os.kill(child.pid, signal.SIGKILL)
            out, _ = child.communicate(timeout=30)
            acks[rid] = acked(first + out)
        # The follower finishes what each killed run wrote, then sees every one of them crashed.
        wait(lambda: sorted(safe(lambda: db_keys(pg_url), [])) == sorted(local_keys(store)), timeout=60)
        keys = db_keys(pg_url)
        assert len(keys) == len(set(keys))
        team = tracker.open_store(pg_url)
        for rid, last in acks.items():
            steps = [r.step for r in team.run(rid).records("metrics")]
            assert steps[: last + 1] == list(range(last + 1)), rid  # every acknowledged record, in order
            assert steps == list(range(len(steps))), rid
        wait(lambda: {i.status for i in tracker.open_store(pg_url).runs()} == {"crashed"}, timeout=30)
    finally:
        stop_follower(store)


def test_kill_9_of_the_follower_ten_times(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    folder, store = project(tmp_path, pg_url)
    stop = folder / "stop"
    child = train(folder, f"""
        import os, time, tracker
        with tracker.start_run("team", "steady", run_id="steady") as run:
            i = 0
            while not os.path.exists({str(stop)!r}):
                run.log({{"loss": 1.0 / (i + 1)}}, step=i)
                i += 1
                if i % 20 == 0:
                    time.sleep(0.01)
        print(i, flush=True)
    """)
    rng = random.Random(32)
    killed = []
    try:
        pid = wait(lambda: follower_pid(store), timeout=30)
        for _ in range(10):
            # Somewhere in a pass: reading, copying, committing, or waiting for the next look.
            wait(lambda: len(safe(lambda: db_keys(pg_url), [])) > 0, timeout=30)
            time.sleep(rng.uniform(0.05, 0.6))
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            # The run's watchdog starts another, which goes on from the last commit.
            pid = wait(lambda: (p := follower_pid(store)) not in (None, *killed) and p, timeout=30)
        stop.touch()
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        total = int(out.strip())
        wait(lambda: sorted(safe(lambda: db_keys(pg_url), [])) == sorted(local_keys(store)), timeout=60)
        keys = db_keys(pg_url)
        assert len(keys) == len(set(keys))
        view = tracker.open_store(pg_url).run("steady")
        wait(lambda: view.refresh().status == "finished", timeout=30)
        assert [r.step for r in view.records("metrics")] == list(range(total))
    finally:
        if child.poll() is None:
            child.kill()
        stop_follower(store)
