"""One watcher per store: a second ``tracker watch`` (or ``tracker ui --watch``) says so in one line.

Real processes: two watchers on one store would both send each alert, so the
second finds the first's lock (``<store>/alerts/watch.lock``), names it and
exits 0; a dashboard started with ``--watch`` meanwhile serves without
watching, and takes over once the first watcher ends.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_alerts import Receiver, receiver, webhook_toml  # noqa: F401 - the fixture

RULES = '[[alerts.rules]]\nwhen = "run failed"\n'


def _start(args: list[str], err: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(err, "wb") as e:
        return subprocess.Popen([sys.executable, "-m", "tracker", *args], stdout=subprocess.DEVNULL, stderr=e,
                                env=env)


def _wait_for(path: Path, text: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while text not in path.read_text():
        assert proc.poll() is None, f"exited {proc.returncode}: {path.read_text()}"
        assert time.monotonic() < end, f"no {text!r} in time: {path.read_text()}"
        time.sleep(0.02)


def _fail_a_run(tmp_path: Path, name: str) -> None:
    (tmp_path / "fail.py").write_text("import sys, tracker\nwith tracker.start_run(name=sys.argv[1]):\n"
                                      "    raise RuntimeError('out of memory')\n")
    subprocess.run([sys.executable, str(tmp_path / "fail.py"), name], capture_output=True, timeout=60)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_second_watch_says_so_in_one_line_and_exits_0(tmp_store: Path, tmp_path: Path,
                                                          receiver: Receiver) -> None:  # noqa: F811
    (Path.cwd() / "tracker.toml").write_text(webhook_toml(receiver.url, RULES, extra="interval = 0.2"))
    first = _start(["watch"], tmp_path / "first.err")
    try:
        _wait_for(tmp_path / "first.err", "watching", first)
        second = subprocess.run([sys.executable, "-m", "tracker", "watch"], capture_output=True, text=True,
                                timeout=60)
        assert second.returncode == 0
        assert second.stderr.splitlines() == [
            f"tracker: another watcher (pid {first.pid} on {socket.gethostname()}) already watches {tmp_store}; "
            "this one does not"]
        once = subprocess.run([sys.executable, "-m", "tracker", "watch", "--once"], capture_output=True, text=True,
                              timeout=60)
        assert once.returncode == 0 and "another watcher" in once.stderr
        _fail_a_run(tmp_path, "boom")
        assert len(receiver.wait(1, timeout=20)) == 1
        time.sleep(1.0)  # five of the first watcher's polls: nothing more arrives
        assert len(receiver.bodies) == 1
    finally:
        _stop(first)
    # The first one gone (its lock with it), the next one watches.
    again = subprocess.run([sys.executable, "-m", "tracker", "watch", "--once"], capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0 and "watching" in again.stderr and "another watcher" not in again.stderr


def test_a_dashboard_with_watch_serves_without_watching_then_takes_over(tmp_store: Path, tmp_path: Path,
                                                                      receiver: Receiver) -> None:  # noqa: F811
    pytest.importorskip("uvicorn")
    (Path.cwd() / "tracker.toml").write_text(webhook_toml(receiver.url, RULES, extra="interval = 0.2"))
    first = _start(["watch"], tmp_path / "first.err")
    ui = None
    try:
        _wait_for(tmp_path / "first.err", "watching", first)
        ui = _start(["ui", "--watch", "--no-open", "--port", "0"], tmp_path / "ui.err")
        _wait_for(tmp_path / "ui.err", "this one does not", ui)
        lines = [ln for ln in (tmp_path / "ui.err").read_text().splitlines() if "another watcher" in ln]
        assert lines == [f"tracker: another watcher (pid {first.pid} on {socket.gethostname()}) already watches "
                         f"{tmp_store}; this one does not"]
        _stop(first)
        _fail_a_run(tmp_path, "after")
        bodies = receiver.wait(1, timeout=30)
        assert [b["alert"]["run_name"] for b in bodies] == ["after"]  # sent by the dashboard's watcher
        assert ui.poll() is None
    finally:
        _stop(first)
        if ui is not None:
            _stop(ui)
