"""What the dashboard shows of a run's provenance: its console (live), its environment, and why two runs differ.

``GET /api/runs/{id}/console[?since=CURSOR][&tail=N]``: the run's console lines
as compact rows ``[n, stream (0 stdout, 1 stderr), text, partial (0/1)]``, each
line in its last state. ``since`` gives only what changed after a previous
answer: new lines, and lines rewritten since (a progress bar: the same ``n``,
a new text). The cursor carries where every segment was read to (or, over the
team database, each writer's last sequence number) and the lines still
partial, so a poll reads only the new bytes of a running run. ``tail`` keeps
the last N lines (the lines beside a failed run's traceback).

``GET /api/runs/{id}/environment[?diff=1]``: the environment record with its
package list (and, with ``diff=1``, the uncommitted diff's text).

``GET /api/diff?runs=a,b``: :func:`tracker.read.environment.diff_runs`.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson

from tracker.read.console import CONSOLE, ConsoleLine, ConsoleLines
from tracker.read.environment import diff_runs, run_environment
from tracker.read.tail import Follower

#: The most lines one answer holds (the rest come with the next poll).
MAX_LINES = 200_000


class CursorError(ValueError):
    """A console cursor that does not parse."""


def encode_cursor(follower: Follower, reader: ConsoleLines) -> str:
    """An opaque cursor: where each segment was read to, each writer's last sequence number, the partial lines."""
    doc = {"o": {p.name: [o, follower.lines.get(p, 0), _finite(follower.tops.get(p))]
                 for p, o in follower.offsets.items()},
           "s": follower.seqs, "c": reader.count,
           "p": [[w, s, line.n] for (w, s), line in reader.pending.items()]}
    return "c1." + base64.urlsafe_b64encode(orjson.dumps(doc)).decode().rstrip("=")


def _finite(v: float | None) -> float | None:
    return v if v is not None and v not in (float("inf"), float("-inf")) and v == v else None


def decode_cursor(cursor: str, view: Any, follower: Follower, reader: ConsoleLines) -> None:
    """Restore ``follower`` and ``reader`` to where the cursor left them.

    :raises CursorError: a cursor that is not one of this endpoint's.
    """
    if not cursor.startswith("c1.") or len(cursor) > 1_000_000:
        raise CursorError("since: not a console cursor of this server (expected the cursor of a previous answer)")
    try:
        body = cursor[3:]
        doc = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        folder = Path(getattr(view, "path", "") or "")
        for name, (offset, lines, top) in doc["o"].items():
            if "/" in name or "\\" in name or name.startswith("."):
                raise ValueError(name)
            path = folder / name
            follower.offsets[path], follower.lines[path] = int(offset), int(lines)
            follower.tops[path] = float(top) if top is not None else float("-inf")
        follower.seqs = {str(k): int(v) for k, v in doc["s"].items()}
        reader.count = int(doc["c"])
        for writer, stream, n in doc["p"]:
            reader.pending[(str(writer), str(stream))] = ConsoleLine(int(n), str(stream), "", 0.0, 0, str(writer), True)
    except (ValueError, TypeError, KeyError, orjson.JSONDecodeError) as exc:
        raise CursorError("since: the console cursor does not decode") from exc


def _row(line: ConsoleLine) -> list[Any]:
    return [line.n, 1 if line.stream == "stderr" else 0, line.text, 1 if line.partial else 0]


def console_doc(view: Any, host: Any, since: str | None = None, tail: int | None = None) -> dict[str, Any]:
    """The console answer of ``view``: rows, the cursor after them, the run's status and its line count."""
    follower = Follower(view, CONSOLE, host)
    reader = ConsoleLines()
    if since is not None:
        decode_cursor(since, view, follower, reader)
        rows: dict[int, list[Any]] = {}
        for line, _new in reader.feed(follower.read()):
            rows[line.n] = _row(line)  # a line rewritten twice in one poll: its last state
        out = sorted(rows.values())
    elif CONSOLE in view.schemas():
        out = [_row(line) for line in reader.lines(follower.read())]
    else:
        out = []
        follower.read()  # an empty run: the cursor still starts at the end of what is there
    truncated = False
    if tail is not None and len(out) > tail:
        out = out[-tail:] if tail else []
    if len(out) > MAX_LINES:
        out, truncated = out[-MAX_LINES:], True
    return {"lines": out, "cursor": encode_cursor(follower, reader), "count": reader.count,
            "status": view.refresh().status if hasattr(view, "refresh") else view.info.status,
            "truncated": truncated}


def environment_doc(view: Any, blobs: Any, with_diff: bool) -> dict[str, Any]:
    """The environment answer of ``view`` (``{"environment": None}`` when it recorded none)."""
    env = run_environment(view, blobs, with_diff=with_diff)
    return {"environment": env}


def diff_doc(a: Any, b: Any, blobs: Any) -> dict[str, Any]:
    """Why runs ``a`` and ``b`` differ (the sections of ``tracker diff``)."""
    return diff_runs(a, b, blobs)


__all__ = ["CursorError", "console_doc", "decode_cursor", "diff_doc", "encode_cursor", "environment_doc"]
