"""Helpers of the CLI tests: the command in a subprocess, runs written straight to a store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tracker.core.format import FORMAT_VERSION, encode_line


def run_tracker(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m tracker ARGS`` in a subprocess; returns its exit code, stdout and stderr."""
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=timeout)


def write_run(store: Path, run_id: str, records: list[tuple[int, dict[str, Any]]], *,
              schema: str = "metrics", name: str | None = None, project: str | None = None,
              created: float = 1.7e9, status: str | None = "finished", writer: str = "host-1-aaaaaa",
              tags: list[str] | None = None, config: dict[str, Any] | None = None,
              pid: int = 1, writer_host: str = "elsewhere", start_kind: str = "run_started") -> Path:
    """Write one run's segment directly, in the store's line format (fast: no logging API).

    :param records: ``(step, data)`` pairs, written one second apart after ``created``.
    :param status: the finish event's status, or ``None`` for a writer that never finished.
    :param pid: the writer's pid; with ``writer_host`` this machine's name and a pid
        that is not running, an unfinished run reads as crashed.
    :returns: the segment's path.
    """
    run_dir = store / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    seq = 0

    def line(kind: str, sch: str | None, step: int | None, t: float, data: dict[str, Any]) -> bytes:
        nonlocal seq
        seq += 1
        return encode_line({"v": FORMAT_VERSION, "kind": kind, "schema": sch, "step": step, "time": t,
                            "w": writer, "seq": seq, "data": data})

    facts = {"host": writer_host, "pid": pid, "proc_start": None, "writer": writer, "name": name,
             "project": project, "config": config or {}, "tags": tags or [], "env": {}, "resumed": False}
    out = [line(start_kind, None, None, created, facts)]
    last: dict[str, Any] = {}
    max_step = None
    for i, (step, data) in enumerate(records):
        out.append(line("record", schema, step, created + 1 + i, data))
        if schema == "metrics":
            last.update(data)
        max_step = step if max_step is None else max(max_step, step)
    if status is not None:
        out.append(line("run_finished", None, None, created + 1 + len(records),
                        {"status": status, "error": None, "records": len(records), "max_step": max_step,
                         "last": last}))
    path = run_dir / f"{writer}.jsonl"
    with open(path, "ab") as f:
        f.write(b"".join(out))
    return path


def run_on_terminal(args: list[str], *, stream: str = "stdout", env: dict[str, str] | None = None,
                    timeout: float = 60) -> str:
    """``python -m tracker ARGS`` with its stdout or stderr on a pseudo-terminal; returns what that got.

    The other stream goes to a pipe that is read and dropped.
    """
    import pty

    master, slave = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full_env.update(env or {})
    targets = {"stdout": slave, "stderr": subprocess.DEVNULL} if stream == "stdout" else \
        {"stdout": subprocess.DEVNULL, "stderr": slave}
    proc = subprocess.Popen([sys.executable, "-m", "tracker", *args], env=full_env, **targets)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=timeout)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")
