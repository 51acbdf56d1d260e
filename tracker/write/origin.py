"""Where and how a run was started, and how a failure is recorded: always storable facts."""

from __future__ import annotations

import os
import platform
import re
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


_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _git_commit(start: Path) -> str | None:
    """The commit checked out in the repository holding ``start``, read from its files (no ``git`` process:
    a slow or missing git never holds up ``start_run``; the environment recorder runs git in the background)."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.exists():
            return _head_commit(dot)
    return None


def _head_commit(dot: Path) -> str | None:
    try:
        gitdir = dot
        if dot.is_file():  # a worktree or a submodule: "gitdir: <path>"
            text = dot.read_text().strip()
            if not text.startswith("gitdir:"):
                return None
            gitdir = (dot.parent / text[len("gitdir:"):].strip()).resolve()
        head = (gitdir / "HEAD").read_text().strip()
        if _SHA.fullmatch(head):
            return head  # a detached HEAD
        if not head.startswith("ref:"):
            return None
        ref = head[len("ref:"):].strip()
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
        for base in (gitdir, common):
            if (base / ref).is_file():
                sha = (base / ref).read_text().strip()
                return sha if _SHA.fullmatch(sha) else None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha if _SHA.fullmatch(sha) else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return None  # a branch without a commit yet


def origin_facts(environment: bool = True) -> dict[str, Any]:
    """Where and how the run was started: host, Python, command line, folder, git commit, user.

    With ``environment=False`` (``start_run(environment=False)``, ``[run] environment = false``) only
    the host is kept, which crash detection needs: the command line may hold a secret, and the user
    turned the environment off so that none of it is stored.

    A URL's password on the command line (``--db=postgresql://lab:pw@host/runs``)
    is masked (:func:`tracker.core.urls.redact_urls`) before it is stored.
    Always storable: command line, folder and user name may hold
    bytes that are not UTF-8 (``python train.py $'caf\\xe9.csv'``); they are
    escaped, never refused.
    """
    if not environment:
        return storable({"host": hostname()})
    try:
        cwd: Path | None = Path.cwd()
    except OSError:  # the working folder was removed
        cwd = None
    return storable({"host": hostname(), "python": platform.python_version(), "platform": platform.platform(),
                     "argv": redact_urls(list(sys.argv)), "cwd": str(cwd) if cwd is not None else None,
                     "git_commit": _git_commit(cwd) if cwd is not None else None,
                     "user": os.environ.get("USER") or os.environ.get("USERNAME")})
