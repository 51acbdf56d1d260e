"""Streaming to the team database: a run's start makes sure its store's follower process runs.

With ``[team] url`` (or ``TRACKER_TEAM_URL``) set, every run streams to the
team database through one detached follower process per store
(``python -m tracker.team.follower``), which tails the runs' segment files:
nothing is added to ``log``. A run's start leaves a marker naming the run
for the follower and starts the follower when none holds the store's lock;
a small watchdog thread of the logging process starts it again if it dies
while a run of this process is open. Starting it is a process boundary, not
an import: this module imports nothing of the team store.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not a POSIX system: no follower (runs are logged locally; `tracker sync` copies them)
    fcntl = None  # type: ignore[assignment]

#: The follower's files live under ``<store>/team/``.
TEAM_DIR = "team"
LOCK_FILE = "follower.lock"
STATUS_FILE = "follower.json"
LOG_FILE = "follower.log"
#: ``<store>/team/hot/<run_id>``: runs started since the follower last looked.
HOT_DIR = "hot"
#: Seconds between the watchdog's looks at the follower's lock (``TRACKER_FOLLOWER_CHECK``).
CHECK_EVERY = 5.0

_lock = threading.Lock()
_watched: list[tuple[Path, str, Any, weakref.ref]] = []
_watchdog: threading.Thread | None = None
_children: list[subprocess.Popen] = []
#: Per store: when this process last started a follower (wall time) and the seconds to wait before the next.
_started: dict[Path, tuple[float, float]] = {}
#: Seconds after starting a follower before this process starts another for the same store; doubled (up to
#: ``START_COOLDOWN_MAX``) each time the last one never came up, so a follower that cannot start costs little.
START_COOLDOWN = 2.0
START_COOLDOWN_MAX = 300.0
_warned: set[str] = set()


def team_dir(root: Path) -> Path:
    """``<store>/team``: the follower's lock, status, log and run markers."""
    return Path(root) / TEAM_DIR


def follower_running(root: Path) -> bool:
    """Whether a follower holds the store's lock now (a non-blocking ``flock`` test)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(team_dir(root) / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


def mark_hot(root: Path, run_id: str) -> None:
    """Leave ``<store>/team/hot/<run_id>`` for the follower: this run is live, look at it at once."""
    hot = team_dir(root) / HOT_DIR
    try:
        hot.mkdir(parents=True, exist_ok=True)
        os.close(os.open(hot / run_id, os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError:
        pass  # the follower's full passes find the run anyway


def start_follower(root: Path, url: str, config_file: Path | None = None) -> bool:
    """Start the store's follower unless one runs; returns whether one was started.

    The URL goes to the child in its environment (``TRACKER_FOLLOWER_URL``),
    never on its command line, where any user of the machine could read it.
    The child detaches itself (a new session, its own fork), so it outlives
    this process and never waits on it.
    """
    if follower_running(root):
        return False
    if not _have_psycopg():
        _warn_once("streaming to the team database needs psycopg, which is not installed: "
                   'pip install "tracker-core[team]" (runs are logged locally; `tracker sync` copies them later)')
        return False
    now = time.time()
    with _lock:
        # One start at a time per store: a follower just started may still be importing.
        last, wait = _started.get(root, (None, START_COOLDOWN))
        if last is not None:
            if now - last < wait:
                return False
            wait = START_COOLDOWN if _came_up(root, last) else min(wait * 2, START_COOLDOWN_MAX)
        _started[root] = (now, wait)
    env = {**os.environ, "TRACKER_FOLLOWER_URL": url}
    if config_file is not None:
        env["TRACKER_CONFIG"] = str(config_file)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "tracker.team.follower", "--store", str(root), "--detach"],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True, cwd=str(root))
    except OSError:
        return False  # streaming never fails a run: `tracker sync --status` shows what is behind
    with _lock:
        _children.append(proc)
    return True


def _have_psycopg() -> bool:
    """Whether psycopg can be imported (looked up, not imported)."""
    try:
        return importlib.util.find_spec("psycopg") is not None
    except (ImportError, ValueError, AttributeError):  # e.g. sys.modules["psycopg"] = None
        return False


def _came_up(root: Path, since: float) -> bool:
    """Whether a follower took the store's lock after ``since`` (its ``follower.json`` says when it started)."""
    try:
        with open(team_dir(root) / STATUS_FILE, "rb") as f:
            started = json.loads(f.read()).get("started_at")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(started, (int, float)) and started >= since


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        from tracker.host.bus import TrackerWarning

        warnings.warn(f"tracker: {message}", TrackerWarning, stacklevel=4)


def on_run_attached(root: Path, run_id: str, writer: Any, config: Any) -> None:
    """The run-start hook: with a team URL set, mark the run and make sure the follower runs.

    Called once per run per process, when its segment is opened; costs nothing
    without ``[team] url`` or ``TRACKER_TEAM_URL``, and never raises.
    """
    url = getattr(config, "team_url", None) or os.environ.get("TRACKER_TEAM_URL")
    if not url or fcntl is None:
        return
    try:
        mark_hot(root, run_id)
        config_file = getattr(config, "file", None)
        start_follower(root, url, config_file)
        _watch(root, url, config_file, writer)
    except Exception:  # noqa: BLE001 - streaming never fails a run
        pass


def on_edited(root: Path, run_id: str, config: Any) -> None:
    """An edit of a run (tag, name, notes, config, summary, alias): with a team URL set, mark the run for the
    follower and make sure one runs, so the edit reaches the database within seconds (a finished run is
    otherwise looked at only by the follower's passes over every run).

    Costs nothing without ``[team] url`` or ``TRACKER_TEAM_URL``, and never raises.
    """
    url = getattr(config, "team_url", None) or os.environ.get("TRACKER_TEAM_URL")
    if not url or fcntl is None:
        return
    try:
        mark_hot(root, run_id)
        start_follower(root, url, getattr(config, "file", None))
    except Exception:  # noqa: BLE001 - an edit is never failed by streaming
        pass


def _watch(root: Path, url: str, config_file: Any, writer: Any) -> None:
    """Keep the follower alive while ``writer`` is open (it may be killed; a new one resumes)."""
    global _watchdog
    with _lock:
        _watched.append((root, url, config_file, weakref.ref(writer)))
        if _watchdog is None or not _watchdog.is_alive():
            _watchdog = threading.Thread(target=_watch_loop, name="tracker-follower-watch", daemon=True)
            _watchdog.start()


def _open_roots() -> dict[Path, tuple[str, Any]]:
    with _lock:
        keep = [w for w in _watched if (ref := w[3]()) is not None and not getattr(ref, "closed", True)]
        _watched[:] = keep
        # Reap followers' first processes (each forks the real follower and exits at once).
        _children[:] = [c for c in _children if c.poll() is None]
        return {root: (url, cfg) for root, url, cfg, _ in keep}


def _watch_loop() -> None:
    global _watchdog
    try:
        every = float(os.environ.get("TRACKER_FOLLOWER_CHECK") or CHECK_EVERY)
    except ValueError:
        every = CHECK_EVERY
    last = time.monotonic()
    while True:
        time.sleep(min(0.5, every))
        roots = _open_roots()
        if not roots:
            with _lock:
                # A run attached meanwhile starts its own watchdog once this one is marked gone.
                if not any((r := w[3]()) is not None and not getattr(r, "closed", True) for w in _watched):
                    _watchdog = None
                    return
            continue
        if time.monotonic() - last < every:
            continue
        last = time.monotonic()
        for root, (url, cfg) in roots.items():
            with contextlib.suppress(Exception):
                start_follower(root, url, cfg)


__all__ = ["HOT_DIR", "LOCK_FILE", "LOG_FILE", "STATUS_FILE", "TEAM_DIR", "follower_running", "mark_hot",
           "on_edited", "on_run_attached", "start_follower", "team_dir"]
