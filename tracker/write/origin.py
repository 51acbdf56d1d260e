"""Where and how a run was started, and how a failure is recorded: always storable facts."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

from tracker.core.urls import redact_urls
from tracker.core.values import storable, storable_text
from tracker.read.liveness import hostname


def error_facts(exc_type: type[BaseException], exc: BaseException | None,
                 tb: TracebackType | None) -> dict[str, Any]:
    """Type, message and traceback of a failure, always storable: recording a failure never fails.

    An exception whose ``__str__`` raises still gets a message, and text that
    UTF-8 cannot encode (a file name from ``os.listdir``) is escaped.
    """
    name = getattr(exc_type, "__name__", None)
    name = name if type(name) is str else "Exception"
    try:
        message = str(exc) if exc is not None else ""
    except Exception as failure:  # noqa: BLE001 - the user's __str__ may raise anything
        message = f"<str() of the exception raised {type(failure).__name__}>"
    try:
        text = "".join(traceback.format_exception(exc_type, exc, tb))
    except Exception:  # noqa: BLE001 - as above, for what the traceback module calls
        text = f"{name}: {message}\n(the traceback could not be formatted)"
    return {"type": storable_text(name), "message": storable_text(message), "traceback": storable_text(text[-20000:])}


def _git_commit(start: Path) -> str | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            try:
                out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True,
                                     text=True, timeout=5)
            except (OSError, subprocess.SubprocessError):
                return None
            return out.stdout.strip() or None if out.returncode == 0 else None
    return None


def origin_facts() -> dict[str, Any]:
    """Where and how the run was started: host, Python, command line, folder, git commit, user.

    A URL's password on the command line (``--db=postgresql://lab:pw@host/runs``)
    is masked (:func:`tracker.core.urls.redact_urls`) before it is stored.
    Always storable: command line, folder and user name may hold
    bytes that are not UTF-8 (``python train.py $'caf\\xe9.csv'``); they are
    escaped, never refused.
    """
    try:
        cwd: Path | None = Path.cwd()
    except OSError:  # the working folder was removed
        cwd = None
    return storable({"host": hostname(), "python": platform.python_version(), "platform": platform.platform(),
                     "argv": redact_urls(list(sys.argv)), "cwd": str(cwd) if cwd is not None else None,
                     "git_commit": _git_commit(cwd) if cwd is not None else None,
                     "user": os.environ.get("USER") or os.environ.get("USERNAME")})
