"""Streaming to the team database: a run's start makes sure its store's follower process runs.

With ``[team] url`` (or ``TRACKER_TEAM_URL``) set, every run streams to the
team database through one detached follower process per store
(``python -m tracker.team.follower``), which tails the runs' segment files:
nothing is added to ``log``. A run's start leaves a marker naming the run
for the follower and starts the follower when none holds the store's lock;
a small watchdog thread of the logging process starts it again if it dies
while a run of this process is open. Starting it is a process boundary, not
an import: this module imports nothing of the team store.

With a tracker server as the team URL (``https://...``, or ``TRACKER_URL``)
the same follower ships segment bytes to the server instead; the logging
process then also says, in one line on stderr, when the server is out of
reach or refuses the key (the follower's ``follower.json`` tells it), and
``finish()`` waits up to ``[team] finish_timeout`` for the run's lines to
be on the server (:func:`wait_shipped`).
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
#: ``(store, url, tracker.toml, writer, run id)`` of the runs this process keeps a follower alive for.
_watched: list[tuple[Path, str, Any, weakref.ref, str]] = []
_watchdog: threading.Thread | None = None
_children: list[subprocess.Popen] = []
#: Per store: when this process last started a follower (wall time) and the seconds to wait before the next.
_started: dict[Path, tuple[float, float]] = {}
#: Seconds after starting a follower before this process starts another for the same store; doubled (up to
#: ``START_COOLDOWN_MAX``) each time the last one never came up, so a follower that cannot start costs little.
START_COOLDOWN = 2.0
START_COOLDOWN_MAX = 300.0
_warned: set[str] = set()


#: Seconds between the logging process's looks at what the follower says of a server (refused key, down).
SAY_EVERY = 0.5
#: What this process has said already (each message once).
_said: set[str] = set()


def stream_url(config: Any) -> str | None:
    """Where runs stream to: ``[team] url``, else ``TRACKER_TEAM_URL``, else ``TRACKER_URL`` (a tracker server)."""
    return (getattr(config, "team_url", None) or os.environ.get("TRACKER_TEAM_URL")
            or os.environ.get("TRACKER_URL") or None)


def is_server_url(url: Any) -> bool:
    """Whether ``url`` names a tracker server (``http(s)://``) rather than the team database."""
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


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
    if not is_server_url(url) and not _have_psycopg():
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
    without ``[team] url``, ``TRACKER_TEAM_URL`` or ``TRACKER_URL``, and never raises.
    """
    url = stream_url(config)
    if not url or fcntl is None:
        return
    try:
        mark_hot(root, run_id)
        config_file = getattr(config, "file", None)
        start_follower(root, url, config_file)
        _watch(root, url, config_file, writer, run_id)
    except Exception:  # noqa: BLE001 - streaming never fails a run
        pass


def on_edited(root: Path, run_id: str, config: Any) -> None:
    """An edit of a run (tag, name, notes, config, summary, alias): with a team URL set, mark the run for the
    follower and make sure one runs, so the edit reaches the database within seconds (a finished run is
    otherwise looked at only by the follower's passes over every run).

    Costs nothing without ``[team] url`` or ``TRACKER_TEAM_URL``, and never raises.
    """
    url = stream_url(config)
    if not url or fcntl is None:
        return
    try:
        mark_hot(root, run_id)
        start_follower(root, url, getattr(config, "file", None))
    except Exception:  # noqa: BLE001 - an edit is never failed by streaming
        pass


def _watch(root: Path, url: str, config_file: Any, writer: Any, run_id: str) -> None:
    """Keep the follower alive while ``writer`` is open (it may be killed; a new one resumes)."""
    global _watchdog
    with _lock:
        _watched.append((root, url, config_file, weakref.ref(writer), run_id))
        if _watchdog is None or not _watchdog.is_alive():
            _watchdog = threading.Thread(target=_watch_loop, name="tracker-follower-watch", daemon=True)
            _watchdog.start()


def _open_roots() -> dict[Path, tuple[str, Any]]:
    with _lock:
        keep = [w for w in _watched if (ref := w[3]()) is not None and not getattr(ref, "closed", True)]
        _watched[:] = keep
        # Reap followers' first processes (each forks the real follower and exits at once).
        _children[:] = [c for c in _children if c.poll() is None]
        return {root: (url, cfg) for root, url, cfg, _, _ in keep}


def _server_runs() -> dict[Path, tuple[str, set[str]]]:
    """The stores of this process's open runs that ship to a server: ``{root: (url, run ids)}``."""
    out: dict[Path, tuple[str, set[str]]] = {}
    with _lock:
        for root, url, _cfg, ref, rid in _watched:
            if is_server_url(url) and (w := ref()) is not None and not getattr(w, "closed", True):
                out.setdefault(root, (url, set()))[1].add(rid)
    return out


def _say(message: str, once: str | None = None) -> None:
    """One line on stderr, once per process (per ``once``, when given: one line for a kind of news)."""
    if (once or message) in _said:
        return
    _said.add(once or message)
    with contextlib.suppress(Exception):
        sys.stderr.write(f"tracker: {message}\n")
        sys.stderr.flush()


def read_follower_state(root: Path) -> dict[str, Any]:
    """What the store's follower last wrote in ``follower.json`` (empty when nothing readable is there)."""
    try:
        with open(team_dir(root) / STATUS_FILE, "rb") as f:
            state = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _tell(root: Path, url: str, runs: set[str], state: dict[str, Any] | None = None) -> bool:
    """Say (once) what the follower found about the server for these runs; returns whether the key or a run
    was refused (nothing more of them will go until that changes)."""
    state = read_follower_state(root) if state is None else state
    if state.get("stopped_at") is not None:
        return False  # what an ended follower found may be stale: the next one says it again
    refused = state.get("refused")
    if isinstance(refused, str) and refused:
        _say(f"{refused}: runs are logged locally only; once that is fixed (`tracker login URL` for a key), "
             f"`tracker sync URL` ships them", once=f"refused {root}")
        return True
    by_run = state.get("refused_runs")
    if isinstance(by_run, dict):
        hit = sorted(r for r in runs if isinstance(by_run.get(r), str))
        for rid in hit:
            _say(f"run {rid}: {by_run[rid]}: the run is logged locally only")
        if hit:
            return True
    error = state.get("error")
    if isinstance(error, str) and error and state.get("url"):
        reason = error.rpartition(": ")[2] or error  # "GET https://lab/api/v1/...: connection refused"
        _say(f"{state['url']} is out of reach ({reason}): runs are logged locally and shipped when it answers "
             "(`tracker sync --status` shows what is behind)", once=f"down {root}")
    return False


def _watch_loop() -> None:
    global _watchdog
    try:
        every = float(os.environ.get("TRACKER_FOLLOWER_CHECK") or CHECK_EVERY)
    except ValueError:
        every = CHECK_EVERY
    last = time.monotonic()
    while True:
        time.sleep(min(SAY_EVERY, every))
        for root, (url, rids) in _server_runs().items():
            with contextlib.suppress(Exception):
                _tell(root, url, rids)
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
            if is_server_url(url) and read_follower_state(root).get("refused"):
                continue  # the server refused the key: a new follower would be refused again (a new run asks)
            with contextlib.suppress(Exception):
                start_follower(root, url, cfg)


def shipped_files(run_dir: Path) -> list[tuple[str, Path]]:
    """``(name, path)`` of the files of a run that go to a server: its segments under their file names, then its
    edit segments as ``edits/<file name>`` (their place in the run's folder)."""
    from tracker.core.format import SEGMENT_SUFFIX
    from tracker.read.edits import EDITS_FOLDER, edit_paths

    try:
        with os.scandir(run_dir) as it:
            out = sorted((e.name, Path(e.path)) for e in it
                         if e.name.endswith(SEGMENT_SUFFIX) and not e.name.startswith(".") and e.is_file())
    except OSError:
        return []
    if (run_dir / EDITS_FOLDER).is_dir():
        with contextlib.suppress(Exception):  # an unreadable edits folder: the segments still go
            out += [(f"{EDITS_FOLDER}/{p.name}", p) for p in edit_paths(run_dir)]
    return out


def complete_end(path: Path, size: int | None = None) -> int:
    """The offset just after the last complete line of a segment (a torn last line is not counted)."""
    try:
        if size is None:
            size = path.stat().st_size
        with open(path, "rb") as f:
            pos = size
            while pos > 0:
                start = max(0, pos - (64 << 10))
                f.seek(start)
                chunk = f.read(pos - start)
                cut = chunk.rfind(b"\n")
                if cut >= 0:
                    return start + cut + 1
                pos = start
    except OSError:
        return 0
    return 0


def wait_shipped(root: Path, run_id: str, config: Any) -> bool:
    """After ``finish()``: wait up to ``[team] finish_timeout`` seconds until the server has every complete line
    of run ``run_id`` (as the follower's ``follower.json`` tells); else say in one line that ``tracker sync URL``
    ships the rest. Returns whether the server has it all. Nothing happens without a server URL.
    """
    url = stream_url(config)
    if not is_server_url(url) or fcntl is None:
        return True
    timeout = getattr(config, "team_finish_timeout", 30.0)
    timeout = float(timeout) if isinstance(timeout, (int, float)) else 30.0
    run_dir = Path(root) / "runs" / run_id
    want = {name: complete_end(path) for name, path in shipped_files(run_dir)}
    want = {name: end for name, end in want.items() if end > 0}
    if not want:
        return True
    mark_hot(root, run_id)  # look at it now, not at the next pass over every run
    with contextlib.suppress(Exception):
        start_follower(root, url, getattr(config, "file", None))
    deadline = time.monotonic() + timeout
    behind = sum(want.values())
    while True:
        state = read_follower_state(root)
        if _tell(root, url, {run_id}, state):
            return False
        shipped = (state.get("shipped") or {}).get(run_id)
        if isinstance(shipped, dict):
            behind = sum(max(0, end - int(shipped.get(name) or 0)) for name, end in want.items())
            if behind == 0:
                return True
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    from tracker.core.urls import redact_url

    shown = redact_url(url)
    _say(f"run {run_id}: {behind} bytes are not on {shown} yet (waited {timeout:g}s, [team] finish_timeout); "
         f"the follower keeps trying, and `tracker sync {shown}` ships the rest")
    return False


__all__ = ["HOT_DIR", "LOCK_FILE", "LOG_FILE", "STATUS_FILE", "TEAM_DIR", "follower_running", "mark_hot",
           "on_edited", "on_run_attached", "start_follower", "team_dir", "complete_end", "is_server_url",
           "read_follower_state", "shipped_files", "stream_url", "wait_shipped"]
