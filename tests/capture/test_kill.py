"""kill -9 in the middle of logging a large artifact: never a record without its complete blob."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import tracker
from tracker.capture.blobs import hash_file

CHILD = r"""
import sys, tracker
store, run_id, path = sys.argv[1:4]
run = tracker.start_run(store=store, run_id=run_id, resume=True, system_metrics=False)
print("GO", flush=True)
a = run.log_artifact(path, name="big")
print("ACK", a.sha256, flush=True)
run.finish()
"""

SIZE = 200 << 20
ROUNDS = 10


def _child(store: Path, run_id: str, path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(store), run_id, str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_go(p: subprocess.Popen) -> None:
    line = p.stdout.readline()
    assert line.startswith("GO"), (line, p.stderr.read())


def test_kill_while_logging_a_large_artifact(tmp_path: Path) -> None:
    store = tmp_path / "store"
    src = tmp_path / "big.bin"
    block = os.urandom(1 << 20)
    with open(src, "wb") as f:
        for _ in range(SIZE >> 20):
            f.write(block)
    run_id = "kill-artifact"
    # One uninterrupted round measures how long logging takes here.
    p = _child(store, run_id, src)
    _wait_go(p)
    t0 = time.perf_counter()
    out, err = p.communicate(timeout=120)
    duration = time.perf_counter() - t0
    assert p.returncode == 0, err
    acked = {out.split()[1]}
    rng = random.Random(1717)
    kills = 0
    for i in range(ROUNDS):
        # A different content each round: a new blob to be cut off.
        with open(src, "r+b") as f:
            f.write(i.to_bytes(8, "little") + b"round")
        p = _child(store, run_id, src)
        _wait_go(p)
        time.sleep(rng.uniform(0.0, duration * 1.1))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        out, _ = p.communicate(timeout=60)
        for line in out.splitlines():
            if line.startswith("ACK"):
                acked.add(line.split()[1])
    assert kills >= ROUNDS // 2  # most rounds were really cut off
    view = tracker.open_store(store).run(run_id)
    recorded = {a.sha256: a for a in view.artifacts()}
    # What was acknowledged is recorded and readable, byte for byte.
    assert acked <= set(recorded)
    # Every record names a complete blob.
    for sha, a in recorded.items():
        assert a.path.stat().st_size == SIZE
        assert hash_file(a.path) == (sha, SIZE)
    # Cut-off copies are only ever under blobs/tmp, never under a hash name.
    for p in (store / "blobs" / "sha256").rglob("*"):
        if p.is_file():
            assert hashlib.sha256(p.read_bytes()).hexdigest() == p.parent.name + p.name
