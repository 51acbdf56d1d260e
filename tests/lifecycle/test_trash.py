"""rm and restore: whole folders move by rename, live runs are refused, bytes stay as they were."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tracker
from tracker.read.verify import verify_store

from .support import child_env, make_runs, spawn, tracker_cmd, tree_hashes, wait_ready

LIVE = """
    import sys, tracker
    with tracker.start_run(project="p", name="live", run_id="live") as run:
        run.log({"loss": 1.0})
        print("ready", flush=True)
        sys.stdin.readline()
"""


def _finish(child: subprocess.Popen[str]) -> None:
    child.stdin.write("go\n")
    child.stdin.flush()
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err


def test_rm_restore_round_trip_keeps_every_byte(store: Path, cmd: Callable[..., Any]) -> None:
    ids = make_runs(store, 3)
    s = tracker.open_store(store)
    s.tag(ids[0], add=["edited"])
    before = tree_hashes(store / "runs")
    proc = cmd("rm", ids[0], ids[1], "--yes")
    assert proc.returncode == 0, proc.stderr
    assert "moved 2 runs" in proc.stdout
    assert sorted(p.name for p in (store / "runs").iterdir()) == [ids[2]]
    assert [i.id for i in s.runs()] == [ids[2]]
    assert sorted(i.id for i in s.trashed()) == ids[:2]
    proc = cmd("restore", ids[0], ids[1])
    assert proc.returncode == 0, proc.stderr
    assert tree_hashes(store / "runs") == before
    assert sorted(i.id for i in s.runs()) == ids and s.trashed() == []
    assert s.run(ids[0]).info.tags == ["t0", "edited"]
    assert verify_store(store).ok


def test_rm_of_a_live_run_is_refused(store: Path) -> None:
    make_runs(store, 1)
    child = spawn(store, LIVE)
    try:
        assert wait_ready(child) == "ready"
        before = tree_hashes(store)
        proc = tracker_cmd(store, "rm", "live", "--yes")
        assert proc.returncode == 1 and "is running" in proc.stderr and "--force" in proc.stderr
        assert proc.stderr.count("\n") == 1
        assert tree_hashes(store) == before
        # A selection skips it and says so; the other run goes.
        proc = tracker_cmd(store, "rm", "--project", "p", "--yes", "--format", "json")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert [r["id"] for r in doc["removed"]] == ["run0"] and [r["id"] for r in doc["skipped"]] == ["live"]
        assert "skipped live" in proc.stderr
        assert (store / "runs" / "live").is_dir()
    finally:
        _finish(child)
    # With --force a live run moves too (its writer appends to its moved segment).
    child = spawn(store, LIVE.replace('run_id="live"', 'run_id="live2"'))
    assert wait_ready(child) == "ready"
    proc = tracker_cmd(store, "rm", "live2", "--yes", "--force")
    assert proc.returncode == 0, proc.stderr
    _finish(child)
    assert tracker.open_store(store / "trash").run("live2").info.status == "finished"


def test_rm_asks_on_a_terminal_and_refuses_off_one(store: Path) -> None:
    import pty

    make_runs(store, 2)
    before = tree_hashes(store)
    proc = tracker_cmd(store, "rm", "run0")
    assert proc.returncode == 1 and "stdin is not a terminal" in proc.stderr and "--yes" in proc.stderr
    assert tree_hashes(store) == before

    def on_terminal(answer: bytes) -> str:
        master, slave = pty.openpty()
        p = subprocess.Popen([sys.executable, "-m", "tracker", "rm", "run0"], stdin=slave, stdout=slave,
                             stderr=slave, env=child_env(store))
        os.close(slave)
        out = b""
        while b"[y/N]" not in out:
            out += os.read(master, 4096)
        os.write(master, answer)
        p.wait(timeout=60)
        try:
            while chunk := os.read(master, 4096):
                out += chunk
        except OSError:
            pass
        os.close(master)
        return out.decode()

    out = on_terminal(b"n\n")
    assert "Move 1 run" in out and "nothing was removed" in out and "run0-name-0" in out
    assert tree_hashes(store) == before
    out = on_terminal(b"y\n")
    assert "moved 1 run" in out
    assert not (store / "runs" / "run0").exists() and (store / "trash" / "runs" / "run0").is_dir()


def test_rm_by_selection(store: Path, cmd: Callable[..., Any]) -> None:
    make_runs(store, 4, project="a")
    make_runs(store, 2, project="b", prefix="other")
    s = tracker.open_store(store)
    s.tag("run1", add=["draft"])
    proc = cmd("rm", "--project", "a", "--tag", "t1", "--dry-run", "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["dry_run"] and sorted(r["id"] for r in doc["removed"]) == ["run1", "run3"]
    assert doc["bytes"] == sum(r["bytes"] for r in doc["removed"]) > 0
    assert len(s.runs()) == 6
    proc = cmd("rm", "--tag", "draft", "--tag", "t1", "--yes")
    assert proc.returncode == 0 and "run1" in proc.stdout
    assert sorted(i.id for i in s.trashed()) == ["run1"]
    proc = cmd("rm", "--older-than", "1h", "--yes")
    assert "no runs match" in proc.stderr and len(s.runs()) == 5
    proc = cmd("rm", "--older-than", "0s", "--project", "b", "--yes")
    assert proc.returncode == 0 and sorted(i.id for i in s.runs()) == ["run0", "run2", "run3"]
    proc = cmd("rm", "--older-than", "soon")
    assert proc.returncode == 1 and "expected a number and a unit" in proc.stderr
    proc = cmd("rm")
    assert proc.returncode == 1 and "no runs given" in proc.stderr
    proc = cmd("rm", "run0", "--project", "a")
    assert proc.returncode == 1 and "not both" in proc.stderr


def test_restore_errors_change_nothing(store: Path, cmd: Callable[..., Any]) -> None:
    make_runs(store, 2)
    assert cmd("rm", "run0", "run1", "--yes").returncode == 0
    make_runs(store, 1)  # run0 exists again
    before = tree_hashes(store)
    proc = cmd("restore", "run1", "run0")
    assert proc.returncode == 1 and "run0 exists in the store again" in proc.stderr
    assert tree_hashes(store) == before
    proc = cmd("restore", "nosuch")
    assert proc.returncode == 1 and "no run matches 'nosuch'" in proc.stderr
    assert tree_hashes(store) == before
    # The same id removed twice: the trash keeps the first, and says why it refuses.
    proc = cmd("rm", "run0", "--yes")
    assert proc.returncode == 1 and "in the trash already" in proc.stderr
    assert tree_hashes(store) == before


def _runs_where(store: Path, originals: dict[str, dict[str, str]]) -> dict[str, str]:
    """Each original run: "runs", "trash" or "gone"; fails if a run is partly anywhere."""
    where = {}
    for rid, hashes in originals.items():
        places = [p for p in ("runs", "trash/runs") if (store / p / rid).exists()]
        assert len(places) <= 1, f"{rid} is in {places}"
        if not places:
            where[rid] = "gone"
            continue
        assert tree_hashes(store / places[0] / rid) == hashes, f"{rid} changed in {places[0]}"
        where[rid] = places[0].split("/")[0]
    return where


def _timed(store: Path, *args: str) -> float:
    t = time.perf_counter()
    assert tracker_cmd(store, *args).returncode == 0
    return time.perf_counter() - t


def test_kill_9_of_rm_and_gc_leaves_every_run_whole(tmp_path: Path, store: Path) -> None:
    ids = make_runs(store, 120, records=2)
    template = tmp_path / "template"
    shutil.copytree(store, template)
    originals = {rid: tree_hashes(store / "runs" / rid) for rid in ids}
    rng = random.Random(18)
    rm_time = _timed(store, "rm", "--project", "p", "--yes")
    gc_time = _timed(store, "gc")
    for i in range(10):
        shutil.rmtree(store)
        shutil.copytree(template, store)
        if i % 2:  # gc: half of the runs in the trash first
            assert len(tracker.open_store(store).remove(ids[:60])) == 60
            cmd, limit = ["gc"], gc_time
        else:
            cmd, limit = ["rm", "--project", "p", "--yes"], rm_time
        p = subprocess.Popen([sys.executable, "-m", "tracker", *cmd], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=child_env(store))
        if i in (2, 3, 6, 7):
            # Killed the moment the work shows: the first run in the trash (rm), the first run being
            # deleted (gc), so that the kill lands in the middle of the moves or the deletions.
            sign = (lambda: any(os.scandir(store / "trash" / "runs"))) if cmd[0] == "rm" else \
                (lambda: any(store.joinpath("trash").glob(".gc-*")))
            deadline = time.time() + 2 * limit + 10
            while time.time() < deadline and p.poll() is None:
                try:
                    if sign():
                        break
                except FileNotFoundError:
                    pass
        else:
            time.sleep(rng.uniform(0.5, 1.0) * limit)
        p.send_signal(signal.SIGKILL)  # a no-op once the process has been waited for
        p.wait()
        where = _runs_where(store, originals)
        if cmd == ["gc"]:
            assert all(where[r] == "runs" for r in ids[60:])
        else:
            assert "gone" not in where.values()
        assert verify_store(store).ok and verify_store(store / "trash").ok
        # A later gc finishes what a killed one began, and leaves nothing hidden behind.
        tracker.open_store(store).gc()
        assert not [p for p in (store / "trash").glob(".gc-*")]
        assert _runs_where(store, originals) == {r: ("runs" if w == "runs" else "gone") for r, w in where.items()}
