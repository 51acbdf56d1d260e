"""A writer killed with -9 that its parent has not reaped yet (issue 10, item 5).

In a container without an init process, a killed child stays a zombie until
its parent waits for it, and ``kill(pid, 0)`` still succeeds on it. Here the
test process is that parent: it kills its writer child and does not reap it
while the store is read, in this process and by ``tracker runs``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import child_env, cli, spawn, wait_for_line


def proc_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return stat[stat.rfind(b")") + 2:].split()[0].decode()


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc (Linux) to see a zombie")
def test_an_unreaped_killed_writer_reads_as_crashed(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    out = tmp_path / "out.txt"
    p = spawn("loop", tmp_path, out, child_env(tmp_path), "--store", str(store), "--run-id", "z")
    try:
        wait_for_line(out, p)
        assert tracker.open_store(store).run("z").info.status == "running"
        os.kill(p.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while proc_state(p.pid) != "Z":  # killed, not reaped: p.wait() is not called yet
            assert time.monotonic() < deadline, "the child did not become a zombie"
            time.sleep(0.01)
        os.kill(p.pid, 0)  # the fault: the pid still answers
        info = tracker.open_store(store).run("z").info
        assert info.status == "crashed", (info, proc_state(p.pid), os.listdir(f"/proc/{p.pid}/task"))
        res = cli("--store", str(store), "runs", "--format", "json", env=child_env(tmp_path), cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        assert [d["status"] for d in json.loads(res.stdout)] == ["crashed"]
        assert proc_state(p.pid) == "Z"  # still unreaped while the store was read
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
