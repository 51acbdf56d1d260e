"""What streaming has not copied yet: per run, the bytes and lines of its segments beyond the database's offsets.

``tracker sync --status`` prints it with the follower's state (running or
not, connected or retrying, its last error): the offsets are the ones each
commit writes with its rows (``tracker_writers.synced_bytes``), so what is
behind is exactly what a sync would copy next.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import TrackerError
from tracker.core.format import SEGMENT_SUFFIX
from tracker.core.urls import redact_url
from tracker.read.edits import edit_paths
from tracker.write.stream import STATUS_FILE, follower_running, team_dir


@attrs.frozen
class RunBehind:
    """One run's segments (its edit segments included) against where they are copied: the database, or the
    server (:func:`tracker.remote.shipper.runs_behind`).

    :ivar bytes: the size of its segments now (of their complete lines, against a server).
    :ivar synced_bytes: how much of them the database (or the server) holds.
    :ivar lines_behind: complete lines not there yet (a torn last line is not counted).
    """

    run_id: str
    status: str
    segments: int
    bytes: int
    synced_bytes: int
    bytes_behind: int
    lines_behind: int

    @property
    def behind(self) -> bool:
        """Whether anything of the run is not copied yet."""
        return self.bytes_behind > 0


def lines_between(path: Path, start: int, end: int) -> int:
    """Complete lines in bytes ``[start, end)`` of ``path`` (0 where it cannot be read)."""
    n = 0
    try:
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    break
                n += chunk.count(b"\n")
                left -= len(chunk)
    except OSError:
        return 0
    return n


def run_statuses(store: Any) -> dict[str, str]:
    """``{run_id: status}`` of the store's runs (empty where they cannot be listed)."""
    try:
        return {i.id: i.status for i in store.runs()}
    except TrackerError:
        return {}


def synced_offsets(url: str) -> dict[tuple[str, str], int]:
    """``{(run_id, writer): synced bytes}`` as the database holds them (empty for a database without tables).

    :raises TrackerError: the database cannot be reached (one line, password masked).
    """
    from tracker.team.database import connect, error_line, require_psycopg

    psycopg = require_psycopg()
    conn = connect(url, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT to_regclass('tracker_writers') IS NOT NULL")
            if not cur.fetchone()[0]:
                return {}
            cur.execute("SELECT run_id, writer, synced_bytes FROM tracker_writers")
            return {(r, w): int(b) for r, w, b in cur.fetchall()}
    except psycopg.Error as exc:
        raise TrackerError(f"reading {redact_url(url)} failed: {error_line(url, exc)}") from None
    finally:
        conn.close()


def runs_behind(store: Any, url: str) -> list[RunBehind]:
    """Every run of the folder store ``store`` against the database at ``url``, most behind first."""
    offsets = synced_offsets(url)
    statuses = run_statuses(store)
    out = []
    for rid in store.run_ids():
        run_dir = Path(store.path) / "runs" / rid
        try:
            paths = sorted(p for p in run_dir.iterdir() if p.suffix == SEGMENT_SUFFIX and not p.name.startswith("."))
            paths += edit_paths(run_dir)  # edits after the fact (tags, notes...) are copied as segments are
        except (OSError, TrackerError):
            continue
        size = synced = behind = lines = 0
        for path in paths:
            try:
                n = path.stat().st_size
            except OSError:
                continue
            done = min(offsets.get((rid, path.stem), 0), n)
            size += n
            synced += done
            if n > done:
                behind += n - done
                lines += lines_between(path, done, n)
        out.append(RunBehind(rid, statuses.get(rid, "?"), len(paths), size, synced, behind, lines))
    out.sort(key=lambda r: (-r.bytes_behind, r.run_id))
    return out


def follower_state(root: Path) -> dict[str, Any]:
    """The store's follower: ``running`` (it holds the lock now) and what its ``follower.json`` last said."""
    state: dict[str, Any] = {}
    try:
        state = json.loads((team_dir(root) / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {}
    if not isinstance(state, dict):
        state = {}
    state["running"] = follower_running(root)
    if isinstance(state.get("url"), str):
        state["url"] = redact_url(state["url"])
    return state


def describe_follower(state: dict[str, Any], now: float) -> str:
    """The follower's state as one line."""
    if not state.get("running"):
        ended = state.get("stopped_at")
        when = f" (last one ended {_ago(now, ended)})" if isinstance(ended, (int, float)) else ""
        return f"follower: not running{when}"
    where = f" into {state['url']}" if state.get("url") else ""
    text = f"follower: running, pid {state.get('pid')}{where}"
    what = "server" if str(state.get("url", "")).startswith(("http://", "https://")) else "database"
    if state.get("refused"):
        text += f"; the server refused the key: {state['refused']}"
    elif state.get("error"):
        retry = state.get("retry_at")
        text += f"; {what} unreachable, retrying" + (f" in {max(0.0, retry - now):.0f}s" if
                                                      isinstance(retry, (int, float)) else "")
        text += f": {state['error']}"
    elif isinstance(state.get("pass_at"), (int, float)):
        text += f"; last look {_ago(now, state['pass_at'])}"
    return text


def _ago(now: float, then: float) -> str:
    secs = max(0.0, now - float(then))
    return f"{secs:.1f}s ago" if secs < 60 else f"{secs / 60:.0f} min ago"


def status_doc(store: Any, url: str, now: float | None = None) -> dict[str, Any]:
    """``tracker sync --status --format json``: the follower and every run's figures."""
    import time

    runs = runs_behind(store, url)
    return {"url": redact_url(url), "store": str(store.path), "follower": follower_state(Path(store.path)),
            "time": now if now is not None else time.time(),
            "runs": [attrs.asdict(r) for r in runs],
            "behind": {"runs": sum(r.behind for r in runs), "bytes": sum(r.bytes_behind for r in runs),
                       "lines": sum(r.lines_behind for r in runs)}}


__all__ = ["RunBehind", "describe_follower", "follower_state", "lines_between", "run_statuses", "runs_behind",
           "status_doc", "synced_offsets"]
