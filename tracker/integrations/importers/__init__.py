"""Import other trackers' runs: ``tracker import tensorboard LOGDIR``, ``tracker import mlflow MLRUNS``.
Imports the store and the write path below it; the sources' own libraries only when used.

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

import errno
import hashlib
import math
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import TrackerError
from tracker.core.files import not_a_file  # noqa: F401 - the importers check their sources with it
from tracker.read.liveness import pid_alive

__all__ = ["ImportResult", "SourceError", "SourceRun", "import_runs", "source_run_id"]

#: The error type of a run whose import stopped half way (imports before staging could leave one).
INTERRUPTED = "ImportInterrupted"
#: Name prefix of the staging stores imports write into, in the store's folder (hidden from readers).
STAGING = ".import-"
_ID_OK = re.compile(r"[A-Za-z0-9_-]{1,50}\Z")


@attrs.define
class SourceRun:
    """One run of a source, ready to be imported.

    :ivar run_id: the tracker run id it is imported under (stable for the source run).
    :ivar records: ``records(problem, progress)`` gives ``(time, step, {name: number})``
        (metrics) or ``(time, step, data, schema)`` (``histogram``, ``image``)
        in order, one at a time; it calls ``problem(message)`` for what it
        skips and ``progress(n)`` for each ``n`` source bytes read.
    :ivar artifacts: ``artifacts()`` gives ``(path, name)`` of the files to log as artifacts.
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
    records: Callable[[Callable[[str], None], Callable[[int], None]], Iterator[tuple]]
    size: int = 0
    source: str = ""
    #: What the records left out, by kind (e.g. ``{"audio clips": 12}``), filled while they are read.
    skipped: dict[str, int] = attrs.field(factory=dict)
    artifacts: Callable[[], Iterator[tuple[Path, str]]] = lambda: iter(())


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
    from tracker.store import Store

    results = []
    for source in runs:
        result = _import_one(source, store, Store, progress, report)
        results.append(result)
    return results


def _import_one(source: SourceRun, store: Any, store_cls: Any, progress: Callable[[int], None] | None,
                report: Callable[[str], None] | None) -> ImportResult:
    from tracker.core.config import resolve_store_path
    from tracker.host.host import get_host

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
    # The run is written into a staging store beside the runs and moved in whole once finished: an
    # import stopped half-way (an exception, Ctrl-C, a kill) leaves no half-imported run behind.
    _clean_stale_staging(root)
    staging = root / f"{STAGING}{os.getpid()}.{_host()}.{secrets.token_hex(4)}"
    try:
        count = _write_run(source, staging, problem, progress or _ignore)
        if not _move_in(staging, root, source.run_id):
            result.outcome = "skipped"  # another import brought the same run meanwhile
            count = 0
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    result.records = count
    result.skipped = dict(source.skipped)
    return result


def _write_run(source: SourceRun, staging: Path, problem: Callable[[str], None],
               progress: Callable[[int], None]) -> int:
    """Import ``source`` as a finished run of the store at ``staging``; the records written."""
    from tracker.core.errors import SchemaError
    from tracker.write.api import start_run

    run = start_run(source.project, source.name, config=source.config, tags=source.tags, store=staging,
                    run_id=source.run_id, created_at=source.created_at, system_metrics=False)
    last = source.created_at
    count = 0
    try:
        for item in source.records(problem, progress):
            time, step = item[0], item[1]
            try:
                _write_item(run, item)
            except SchemaError as exc:  # one bad record: named, skipped, the rest imported
                problem(f"{source.source}: a record at step {step} cannot be stored ({exc}); skipped")
                continue
            count += 1
            if time is not None and (last is None or time > last):
                last = time
        for path, name in source.artifacts():
            try:
                run.log_artifact(path, name)
                count += 1
            except TrackerError as exc:
                problem(f"{path}: artifact {name!r} not imported ({exc})")
    except BaseException as exc:
        run.finish("failed", {"type": INTERRUPTED, "message": f"the import of {source.source} stopped after "
                                                            f"{count} records: {type(exc).__name__}: {exc}"},
                   time=last)
        raise
    end = source.ended_at if source.ended_at is not None else last
    if end is not None and last is not None and end < last:
        end = last
    run.finish(source.status, source.error, time=end)
    return count


def _write_item(run: Any, item: tuple) -> None:
    """One record of a source: ``(time, step, {name: number})`` or ``(time, step, data, schema)``."""
    time, step, data = item[0], item[1], item[2]
    schema = item[3] if len(item) > 3 else "metrics"
    if schema == "metrics":
        run.log_at(time, data, step)
        return
    if schema == "image":  # data: {"name", "image" (a PIL image or array), "caption"}
        from tracker.capture.blobs import BlobStore
        from tracker.capture.media import image_record

        data = image_record(data["name"], data["image"], data.get("caption", ""), BlobStore(run.store))
    elif schema == "audio":  # data: {"name", "clip" (a checked tracker.capture.audio.Clip), "caption"}
        from tracker.capture.audio import audio_record
        from tracker.capture.blobs import BlobStore

        data = audio_record(data["name"], data["clip"], data.get("caption", ""), BlobStore(run.store))
    from tracker.write.api import check_time, resolve_step

    compiled = run._host.schemas.get(schema) or run._host.schema(schema)
    run._write(compiled.name, compiled.validate(data), resolve_step(step, schema), check_time(time))


def _move_in(staging: Path, root: Path, run_id: str) -> bool:
    """Blobs first, then the run's folder in one rename; ``False`` if the store has the run already."""
    blobs = staging / "blobs"
    if blobs.is_dir():
        for path in sorted(blobs.rglob("*")):
            if not path.is_file():
                continue
            target = root / path.relative_to(staging)
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
    (root / "runs").mkdir(parents=True, exist_ok=True)
    try:
        os.rename(staging / "runs" / run_id, root / "runs" / run_id)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            return False
        raise TrackerError(f"cannot move the imported run {run_id} into {root / 'runs'}: {exc.strerror}") from None
    return True


def _clean_stale_staging(root: Path) -> None:
    """Remove staging stores of imports whose process is gone (a kill -9 mid-import)."""
    try:
        entries = list(root.iterdir()) if root.is_dir() else []
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(STAGING):
            continue
        pid, _, rest = entry.name[len(STAGING):].partition(".")
        host = rest.rpartition(".")[0]
        # Only this host's: a pid says nothing about a process of another machine sharing the store.
        if pid.isdigit() and host == _host() and not pid_alive(int(pid), None):
            shutil.rmtree(entry, ignore_errors=True)


def _host() -> str:
    from tracker.read.liveness import hostname

    return re.sub(r"[^A-Za-z0-9-]", "-", hostname())[:32] or "host"


    return True


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
