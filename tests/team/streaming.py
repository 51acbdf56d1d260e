"""Helpers of the streaming tests: a store folder with ``[team] url``, its follower, and exact counts."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from tracker.core.format import LineError, parse_line
from tracker.write.stream import STATUS_FILE, follower_running, team_dir

from ..childenv import child_environ
from ..query.support import wait_for

#: Looks at live runs every 0.1 s, ends 2 s after the last run, restarted within 0.3 s when killed.
FAST = {"TRACKER_FOLLOWER_INTERVAL": "0.1", "TRACKER_FOLLOWER_LINGER": "2", "TRACKER_FOLLOWER_CHECK": "0.3",
        "TRACKER_FOLLOWER_BACKOFF_MAX": "1"}


def project(tmp: Path, url: str) -> tuple[Path, Path]:
    """A project folder whose tracker.toml names its store and the team database: ``(folder, store)``."""
    folder = tmp / "proj"
    folder.mkdir()
    (folder / "tracker.toml").write_text(f'[store]\npath = "store"\nheartbeat_interval = 1\n\n'
                                         f'[team]\nurl = "{url}"\n')
    return folder, folder / "store"


def train(folder: Path, code: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A training process in ``folder`` (its tracker.toml applies) running ``code``; stdout piped."""
    full = child_environ()
    full.update(FAST, **(env or {}))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=str(folder), env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def follower_pid(store: Path) -> int | None:
    """The pid of the follower holding the store's lock now, if one does."""
    if not follower_running(store):
        return None
    try:
        return int(json.loads((team_dir(store) / STATUS_FILE).read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def stop_follower(store: Path) -> None:
    """End the store's follower, if one runs (a test never leaves one behind)."""
    quiet_since = time.monotonic()
    end = time.monotonic() + 30
    # Until none has held the lock for a while: one waiting for the lock takes it when the first ends.
    while time.monotonic() - quiet_since < 2.5 and time.monotonic() < end:
        pid = follower_pid(store)
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            wait(lambda: not follower_running(store), timeout=20)
            quiet_since = time.monotonic()
        time.sleep(0.1)


def local_keys(store: Path) -> set[tuple[str, str, int]]:
    """``(run, writer, seq)`` of every sound complete line of every segment: what the database must hold."""
    out = set()
    for seg in store.glob("runs/*/*.jsonl"):
        for line in seg.read_bytes().split(b"\n")[:-1]:
            try:
                ev = parse_line(line)
            except LineError:
                continue
            out.add((seg.parent.name, seg.stem, int(ev["seq"])))
    return out


def db_keys(url: str) -> list[tuple[str, str, int]]:
    """Every ``(run, writer, seq)`` the database holds (a list: a duplicate would show)."""
    import psycopg

    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute("SELECT run_id, writer, seq FROM tracker_events").fetchall()]


def safe(fn: Any, default: Any = None) -> Any:
    """``fn()``, or ``default`` while the database is not there (yet)."""
    import psycopg

    try:
        return fn()
    except psycopg.Error:
        return default


def wait(pred: Any, timeout: float = 30.0, every: float = 0.05) -> Any:
    """Poll ``pred`` until true (returned) or ``timeout`` (AssertionError): the query tests' ``wait_for``."""
    return wait_for(pred, timeout, every)


def run_tracker(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m tracker ARGS`` in ``folder``: exit code, stdout, stderr."""
    full = child_environ()
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "tracker", *args], cwd=str(folder), capture_output=True,
                          text=True, env=full, timeout=120)
