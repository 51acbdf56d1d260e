"""Import other trackers' runs: ``tracker import tensorboard LOGDIR``, ``tracker import mlflow MLRUNS``.

Each source run becomes one run, under an id derived from the source run's
own identity (``tb-...``, ``mlflow-...``), which the run's config also keeps
under ``imported_from``: a second import of the same source finds the run
and adds nothing. Records are streamed from the source one at a time (a run
of a million points imports in constant memory) and keep the source's
steps and wall times; the run keeps the source's start and end times and
status. The source is only read. A file that cannot be read is reported
with its path and skipped; the rest is imported.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from ...errors import TrackerError

__all__ = ["ImportResult", "SourceError", "SourceRun", "import_runs", "source_run_id"]

#: The error type of a run whose import stopped half way.
INTERRUPTED = "ImportInterrupted"
_ID_OK = re.compile(r"[A-Za-z0-9_-]{1,50}\Z")


@attrs.define
class SourceRun:
    """One run of a source, ready to be imported.

    :ivar run_id: the tracker run id it is imported under (stable for the source run).
    :ivar records: ``records(problem, progress)`` gives ``(time, step, {name: number})``
        in order, one at a time; it calls ``problem(message)`` for what it
        skips and ``progress(n)`` for each ``n`` source bytes read.
    :ivar size: bytes the records come from, for the progress bar.
    """

    run_id: str
    name: str | None
    project: str | None
    config: dict[str, Any]
    tags: list[str]
    created_at: float | None
    ended_at: float | None
    status: str
    error: dict[str, Any] | None
    records: Callable[[Callable[[str], None], Callable[[int], None]], Iterator[tuple[float, int, dict[str, float]]]]
    size: int = 0
    source: str = ""
    #: What the records left out, by kind (e.g. ``{"histograms": 12}``), filled while they are read.
    skipped: dict[str, int] = attrs.field(factory=dict)


@attrs.define
class ImportResult:
    """What happened to one source run: ``imported``, ``skipped`` (already there) or ``failed``."""

    source: str
    run_id: str
    name: str | None
    outcome: str
    records: int = 0
    problems: list[str] = attrs.field(factory=list)
    skipped: dict[str, int] = attrs.field(factory=dict)


def source_run_id(prefix: str, key: str) -> str:
    """The tracker run id of a source run: ``prefix-key`` when ``key`` is a plain id, else a hash of it."""
    if _ID_OK.match(key) and len(prefix) + 1 + len(key) <= 64:
        return f"{prefix}-{key}"
    return f"{prefix}-{hashlib.sha256(key.encode('utf-8', 'surrogateescape')).hexdigest()[:24]}"


def import_runs(runs: Iterator[SourceRun], *, store: str | os.PathLike[str] | None = None,
                progress: Callable[[int], None] | None = None,
                report: Callable[[str], None] | None = None) -> list[ImportResult]:
    """Import each source run that the store does not hold yet.

    :param runs: the source's runs (from :mod:`.tensorboard` or :mod:`.mlflow`).
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param progress: called with the number of source bytes done since the last call.
    :param report: called with one line per problem (an unreadable file, a skipped value).
    """
    from ...store import Store

    results = []
    for source in runs:
        result = _import_one(source, store, Store, progress, report)
        results.append(result)
    return results


def _import_one(source: SourceRun, store: Any, store_cls: Any, progress: Callable[[int], None] | None,
                report: Callable[[str], None] | None) -> ImportResult:
    from ...api import start_run
    from ...config import resolve_store_path
    from ...host import get_host

    root = resolve_store_path(store, get_host().config).absolute()
    result = ImportResult(source.source, source.run_id, source.name, "imported")

    def problem(message: str) -> None:
        result.problems.append(message)
        if report is not None:
            report(message)

    if source.run_id in store_cls(root).run_ids():
        info = store_cls(root).run(source.run_id).info
        if info.error and info.error.get("type") == INTERRUPTED:
            problem(f"{source.source}: run {source.run_id} holds an earlier import that was interrupted; "
                    f"remove it (tracker rm {source.run_id}) and import again")
            result.outcome = "failed"
        else:
            result.outcome = "skipped"
        if progress is not None and source.size:
            progress(source.size)
        return result
    run = start_run(source.project, source.name, config=source.config, tags=source.tags, store=root,
                    run_id=source.run_id, created_at=source.created_at, system_metrics=False)
    last = source.created_at
    count = 0
    try:
        for time, step, values in source.records(problem, progress or _ignore):
            run.log_at(time, values, step)
            count += 1
            if time is not None and (last is None or time > last):
                last = time
    except BaseException as exc:
        run.finish("failed", {"type": INTERRUPTED, "message": f"the import of {source.source} stopped after "
                                                            f"{count} records: {type(exc).__name__}: {exc}"},
                   time=last)
        raise
    end = source.ended_at if source.ended_at is not None else last
    if end is not None and last is not None and end < last:
        end = last
    run.finish(source.status, source.error, time=end)
    result.records = count
    result.skipped = dict(source.skipped)
    return result


def _ignore(n: int) -> None:
    pass


def number(text: str) -> float | int | bool | str | None:
    """A param's text as the JSON value it spells (``"32"`` -> 32, ``"0.1"`` -> 0.1, ``"True"`` -> True).

    Anything else, NaN included, stays the text it is.
    """
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if text in ("None", "null"):
        return None
    try:
        value = int(text)
    except ValueError:
        pass
    else:
        return value if abs(value) <= 2**53 and str(value) == text.strip() else text
    try:
        f = float(text)
    except ValueError:
        return text
    return f if math.isfinite(f) else text


def file_size(path: Path) -> int:
    """The size of a file, or 0 if it cannot be seen."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


class SourceError(TrackerError):
    """A source cannot be imported at all (no such folder, not a TensorBoard or MLflow folder)."""
