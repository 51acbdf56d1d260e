"""Edit events: tags, name, notes, config and summary changed after the fact, as readers apply them.

An edit is an event of its own kind (``"edit"``) in a segment of its own,
``<run>/edits/edits-<host>-<pid>-<hex>.jsonl``, apart from the writers'
segments: it changes a run's labels, never its status or its records.
Writing edits is :mod:`tracker.write.edits`; reading and applying them is
here, in the read core, so that a run's info needs nothing above it.
See docs/format.md, "Edits".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import StoreError
from tracker.core.format import LineChunks, LineError, decode_nonfinite, parse_line
from tracker.core.records import Problem
from tracker.read.liveness import pid_alive, safe_hostname

#: The event kind of an edit.
EDIT = "edit"
#: The folder of a run that holds its edit segments, and their file name prefix.
EDITS_FOLDER = "edits"
EDITS_PREFIX = "edits-"


def edit_paths(run_dir: Path) -> list[Path]:
    """The edit segments of a run folder, sorted by name."""
    try:
        with os.scandir(run_dir / EDITS_FOLDER) as it:
            return sorted(Path(e.path) for e in it
                          if e.name.startswith(EDITS_PREFIX) and e.name.endswith(".jsonl") and e.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StoreError(f"cannot read {run_dir / EDITS_FOLDER}: {exc.strerror}") from None


def editor_alive(writer_id: str) -> bool:
    """Whether the process of edit segment ``writer_id`` runs on this host (its last line may be in progress)."""
    host, _, _ = writer_id.rpartition("-")
    host, _, pid = host.rpartition("-")
    return host == f"{EDITS_PREFIX}{safe_hostname()}" and pid.isdigit() and pid_alive(int(pid), None)


def read_edits(run_dir: Path, report: Callable[[Problem], None] | None = None) -> list[dict[str, Any]]:
    """Every edit event of a run, in the order they apply: by time, then writer and sequence.

    A damaged line is passed to ``report`` (a torn last line only when its
    writer is gone) and skipped; events of a kind this version does not know
    are reported and skipped.
    """
    events = []
    for path in edit_paths(run_dir):
        chunks = LineChunks(path)
        lineno = 0
        for lines in chunks:
            for line in lines:
                lineno += 1
                try:
                    ev = parse_line(line)
                except LineError as exc:
                    if report:
                        report(Problem(str(path), lineno, exc.kind, str(exc)))
                    continue
                if ev.get("kind") != EDIT or not isinstance(ev.get("data"), dict):
                    if report:
                        report(Problem(str(path), lineno, "unknown",
                                       f"an event of kind {ev.get('kind')!r} in an edit segment (ignored)"))
                    continue
                events.append(ev)
        if chunks.rest and report and not editor_alive(path.stem):
            report(Problem(str(path), lineno + 1, "torn",
                           f"the last line is incomplete ({len(chunks.rest)} bytes): a write was cut off"))
    events.sort(key=lambda e: (e.get("time") or 0.0, str(e.get("w")), e.get("seq") or 0))
    return events


@attrs.frozen(kw_only=True)
class Edited:
    """A run's labels after its edits: what :class:`~tracker.RunInfo` shows."""

    name: str | None
    tags: list[str]
    notes: str | None
    config: dict[str, Any]
    summary: dict[str, Any]
    edits: int = 0


def apply_edits(name: str | None, tags: Iterable[str], notes: str | None, config: Mapping[str, Any],
                events: Iterable[dict[str, Any]]) -> Edited:
    """The labels of a run: its start event's, then every edit applied in order.

    Keys of an edit's ``data`` (applied in this order): ``name``;
    ``tags_add`` and ``tags_remove``; ``notes`` (replaces) and
    ``notes_append`` (adds a line); ``config`` and ``summary`` (top-level
    keys set, last write wins). Other keys are ignored.
    """
    tag_list = list(dict.fromkeys(t for t in tags if isinstance(t, str)))
    cfg = dict(config)
    summary: dict[str, Any] = {}
    n = 0
    for ev in events:
        d = ev["data"]
        n += 1
        if isinstance(d.get("name"), str):
            name = d["name"]
        for t in d.get("tags_add") or ():
            if isinstance(t, str) and t not in tag_list:
                tag_list.append(t)
        remove = {t for t in d.get("tags_remove") or () if isinstance(t, str)}
        if remove:
            tag_list = [t for t in tag_list if t not in remove]
        if isinstance(d.get("notes"), str):
            notes = d["notes"]
        if isinstance(d.get("notes_append"), str):
            notes = f"{notes}\n{d['notes_append']}" if notes else d["notes_append"]
        if isinstance(d.get("config"), dict):
            cfg.update(decode_nonfinite(d["config"]))
        if isinstance(d.get("summary"), dict):
            summary.update(decode_nonfinite(d["summary"]))
    return Edited(name=name, tags=tag_list, notes=notes, config=cfg, summary=summary, edits=n)


