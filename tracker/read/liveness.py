"""Who is writing: this host's name as writers record it, and whether a writer's process still runs.

Part of the read path (a run's status depends on it); the segment reader and the edit events share it.
"""

from __future__ import annotations

import os
import re
import socket

from tracker.core.values import storable_text


def hostname() -> str:
    """This machine's name, as writers record it (bytes UTF-8 cannot encode escaped)."""
    return storable_text(socket.gethostname())


def safe_hostname() -> str:
    """This machine's name as writer ids carry it: letters, digits and dashes, at most 32 characters."""
    return re.sub(r"[^A-Za-z0-9-]", "-", hostname())[:32] or "host"


def _proc_stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` from the state on (Linux), if readable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; fields after it are plain.
    return stat[stat.rfind(b")") + 2:].split()


def process_start(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (tells a reused pid apart), if known."""
    fields = _proc_stat(pid)
    return fields[19].decode() if fields is not None and len(fields) > 19 else None


def _zombie(fields: list[bytes]) -> bool:
    """Whether the process has ended and only waits for its parent to reap it (state Z or X).

    The state is the main thread's: a writer is a Python process, whose main
    thread ends only with the process, so this holds as soon as it is killed,
    even while its other threads are still being torn down.
    """
    return bool(fields) and fields[0] in (b"Z", b"X")


def pid_alive(pid: int, start: str | None) -> bool:
    """Whether process ``pid`` on this host still runs and is the same process.

    A zombie (killed or exited, not yet reaped by its parent, as in a container
    without an init process) answers ``kill(pid, 0)`` but is gone.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _proc_stat(pid)
    if fields is not None:
        if _zombie(fields):
            return False
        if start is not None and len(fields) > 19 and fields[19].decode() != start:
            return False
    return True
