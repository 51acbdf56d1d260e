"""Helpers of the lifecycle tests: the real command in a subprocess, file hashes, child scripts."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from ..childenv import kept


def child_env(store: Path, **extra: str) -> dict[str, str]:
    """A child's environment: the store as TRACKER_STORE, no other tracker settings."""
    env = {k: v for k, v in os.environ.items() if kept(k) and k != "NO_COLOR"}
    env["TRACKER_STORE"] = str(store)
    env.update(extra)
    return env


def tracker_cmd(store: Path, *args: str, stdin: str | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m tracker ARGS`` on ``store`` in a subprocess (stdin a pipe, not a terminal)."""
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True,
                          env=child_env(store), input=stdin if stdin is not None else "", timeout=timeout,
                          cwd=store.parent)


def python(store: Path, code: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with ``store`` as TRACKER_STORE; fails the test if it fails."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=child_env(store, **env), timeout=timeout, cwd=store.parent)
    assert proc.returncode == 0, proc.stderr
    return proc


def spawn(store: Path, code: str, **env: str) -> subprocess.Popen[str]:
    """Start ``code`` in a fresh interpreter; stdin and stdout are pipes (it prints "ready" when it is)."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env(store, **env), cwd=store.parent)


def wait_ready(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The first line the child prints (it prints one when it is ready)."""
    deadline = time.time() + timeout
    line = proc.stdout.readline() if proc.stdout else ""
    assert line, f"child ended before it was ready: {proc.stderr.read() if proc.stderr else ''}"
    assert time.time() < deadline
    return line.strip()


def tree_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` but derived data (``<store>/index/``), by path relative to it."""
    from tests.reliability.support import derived

    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not derived(path.relative_to(folder)):
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def make_runs(store: Path, n: int, project: str = "p", prefix: str = "run", records: int = 3) -> list[str]:
    """``n`` finished runs ``<prefix>0``... of ``project``, tags ``t0``/``t1``, config ``{"i": i}``."""
    import tracker

    for i in range(n):
        with tracker.start_run(project=project, name=f"{prefix}{i}-name-{i}", run_id=f"{prefix}{i}",
                               tags=[f"t{i % 2}"], config={"i": i}, store=store) as run:
            for _ in range(records):
                run.log({"loss": 1.0 / (_ + 1), "i": i})
    return [f"{prefix}{i}" for i in range(n)]
