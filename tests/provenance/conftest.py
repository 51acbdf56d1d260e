"""Provenance tests: what a run printed, ran on and changed. Children run with capture on (the default)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tracker

ROOT = Path(__file__).resolve().parents[2]


def child_env(store: Path, **extra: str) -> dict[str, str]:
    """A child's environment: no tracker variables but the store (so console and environment are on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env["TRACKER_STORE"] = str(store)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("PYTHONUNBUFFERED", None)
    env.update(extra)
    return env


def script(tmp: Path, code: str, name: str = "train.py") -> Path:
    """``code`` (dedented) written as a script in ``tmp``."""
    path = tmp / name
    path.write_text(textwrap.dedent(code))
    return path


def run_py(path: Path, store: Path, *args: str, timeout: float = 60, cwd: Path | None = None,
           env: dict[str, str] | None = None, **kw: Any) -> subprocess.CompletedProcess:
    """Run script ``path`` in a child process (bytes captured)."""
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, timeout=timeout,
                          cwd=cwd or path.parent, env=env or child_env(store), **kw)


def killed_when_ready(tmp: Path, code: str, store: Path) -> None:
    """Run ``code`` (it touches the file named by its first argument when it is ready) as a child logging to
    ``store``, wait for that file, then kill the child with SIGKILL."""
    import signal
    import time

    ready = tmp / "ready"
    proc = subprocess.Popen([sys.executable, str(script(tmp, code)), str(ready)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=child_env(store), cwd=tmp)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert ready.exists(), proc.stderr.read() if proc.stderr else ""
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)


def only_run(store: Path) -> Any:
    """The one run of ``store`` as a RunView."""
    runs = tracker.Store(store).runs()
    assert len(runs) == 1, [r.id for r in runs]
    return tracker.Store(store).run(runs[0].id)


def texts(view: Any, stream: str | None = None) -> list[str]:
    """The run's console lines (each in its last state)."""
    from tracker.read.console import console_lines

    return [ln.text for ln in console_lines(view, stream=stream)]


def states(view: Any) -> list[dict[str, Any]]:
    """Every line state the run's ``console`` records hold, in order: ``stream``, ``text``, ``partial``.

    A record holds one or more lines of a stream joined by ``\\n``; only its last can be partial.
    """
    out = []
    for r in view.records("console"):
        parts = r.data["text"].split("\n")
        for i, t in enumerate(parts):
            out.append({"stream": r.data["stream"], "text": t,
                        "partial": bool(r.data.get("partial")) and i == len(parts) - 1})
    return out


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"
