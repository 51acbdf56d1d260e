"""Read an MLflow store: a file store (an ``mlruns`` folder) through its documented layout, or the
SQLite backend (``mlflow.db``, MLflow 3's default; see :mod:`.mlflow_sqlite`).

MLflow's own ``FileStore`` is not used: it creates a ``.trash`` folder in the
source when it is missing, refuses to open without ``MLFLOW_ALLOW_FILE_STORE``
in MLflow 3, and reads a metric's whole history into memory. The layout it
writes is plain: ``<experiment id>/meta.yaml``, then per run
``<run id>/meta.yaml``, ``params/<key>`` (the value), ``tags/<key>`` (the
value) and ``metrics/<key>`` (one ``timestamp value step`` line per point,
timestamps in milliseconds); keys with ``/`` are subfolders.

Each active run becomes a run: metrics with their steps and timestamps
(points of several metrics with the same timestamp and step make one
record), params as config (``"32"`` as 32, ``"0.1"`` as 0.1), user tags as
tags (``key=value``), MLflow's own ``mlflow.*`` tags in the config under
``imported_from``, the run's name, status, start and end times, and the
files of its local artifact folder as artifacts. What cannot be read is
reported with its file (and line) and skipped: a metric line with a step
beyond ±2**53, a symlinked folder (``mlruns/1/loop -> .``), a FIFO or
device where a file should be.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tracker.integrations._common import require
from tracker.integrations.importers import SourceError, SourceRun, file_size, not_a_file, number, source_run_id
from tracker.integrations.importers.mlflow_common import (
    _grouped,
    _run_status,
    artifact_files,
    check_point,
    local_path,
)

__all__ = ["mlflow_runs"]

# MLflow's RunStatus enum as meta.yaml stores it.
_STATUS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
# Metric files open at once while merging a run's metrics by time.
_OPEN_FILES = 128



def mlflow_runs(mlruns: str | os.PathLike[str], experiment: str | None = None, project: str | None = None,
                problem: Callable[[str], None] | None = None) -> Iterator[SourceRun]:
    """The active runs of an ``mlruns`` folder, experiment by experiment.

    :param mlruns: the folder (a ``file:`` tracking URI's path).
    :param experiment: only the runs of the experiment of this name.
    :param project: the project of the imported runs (default: the experiment's name).
    :param problem: called with one line per run or file that cannot be read (and is skipped).
    :raises SourceError: the folder is not an MLflow file store, or has no such experiment.
    """
    report = problem or (lambda message: None)
    text = os.fspath(mlruns)
    root = Path(text)
    if text.startswith("sqlite:") or root.is_file() or (root.is_dir() and (root / "mlflow.db").is_file()
                                                         and not _has_experiments(root)):
        from tracker.integrations.importers.mlflow_sqlite import sqlite_runs

        db = root / "mlflow.db" if root.is_dir() else root
        yield from sqlite_runs(text if text.startswith("sqlite:") else db, experiment, project, report)
        return
    yaml = require("yaml", "mlflow", "tracker import mlflow")
    if not root.is_dir():
        what = not_a_file(root) if root.exists() else None
        raise SourceError(f"{root}: {'no such folder' if what is None else what + ', not a file'} (expected an "
                          "MLflow mlruns folder, an mlflow.db file or a sqlite:/// tracking URI)")
    experiments = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if folder.is_symlink():
            report(f"{folder}: a symlink to a folder; not followed, skipped")
            continue
        meta = _meta(yaml, folder / "meta.yaml", report)
        if meta is None or "experiment_id" not in meta:
            continue
        if meta.get("lifecycle_stage") == "deleted":
            continue
        experiments.append((folder, meta))
    if not experiments:
        raise SourceError(f"{root}: no MLflow experiment in it: no <experiment id>/meta.yaml folder, and no "
                          "mlflow.db (for MLflow's SQLite backend give the .db file or its sqlite:/// URI)")
    if experiment is not None:
        names = [str(m.get("name")) for _, m in experiments]
        experiments = [(f, m) for f, m in experiments if m.get("name") == experiment]
        if not experiments:
            raise SourceError(f"{root}: no experiment named {experiment!r} (experiments: {', '.join(names)})")
    for folder, meta in experiments:
        for run_dir in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "meta.yaml").exists()):
            if run_dir.is_symlink():
                report(f"{run_dir}: a symlink to a folder; not followed, skipped")
                continue
            run_meta = _meta(yaml, run_dir / "meta.yaml", report)
            if run_meta is None or run_meta.get("lifecycle_stage") == "deleted":
                continue
            if not (run_meta.get("run_id") or run_meta.get("run_uuid")):
                report(f"{run_dir / 'meta.yaml'}: not a run's meta.yaml (no run_id); skipped")
                continue
            yield _source_run(root, run_dir, run_meta, meta, project, report)


def _has_experiments(root: Path) -> bool:
    return any((p / "meta.yaml").is_file() for p in root.iterdir() if p.is_dir() and not p.is_symlink())


def _meta(yaml: Any, path: Path, report: Callable[[str], None]) -> dict[str, Any] | None:
    what = not_a_file(path) if path.exists() or path.is_symlink() else None
    if what is not None:
        report(f"{path}: {what}, not a file; skipped")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        report(f"{path}: cannot be read ({type(exc).__name__}: {exc}); skipped")
        return None
    if not isinstance(data, dict):
        report(f"{path}: expected a mapping of MLflow metadata, given {type(data).__name__}; skipped")
        return None
    return data


def _values(folder: Path, report: Callable[[str], None]) -> dict[str, str]:
    """``key: text`` of every file under ``folder`` (params or tags; keys with ``/`` are subfolders)."""
    out: dict[str, str] = {}
    for path in _files(folder):
        what = not_a_file(path)
        if what is not None:
            report(f"{path}: {what}, not a file; skipped")
            continue
        try:
            out[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            report(f"{path}: cannot be read ({type(exc).__name__}: {exc}); skipped")
    return out


def _files(folder: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        out.extend(Path(dirpath) / f for f in sorted(filenames))
    return out


def _source_run(root: Path, run_dir: Path, meta: dict[str, Any], exp: dict[str, Any], project: str | None,
                report: Callable[[str], None]) -> SourceRun:
    uuid = str(meta.get("run_id") or meta.get("run_uuid") or run_dir.name)
    params = _values(run_dir / "params", report)
    tags = _values(run_dir / "tags", report)
    status = meta.get("status", 1)
    status = _STATUS.get(status, str(status)) if isinstance(status, int) else str(status)
    user_tags = sorted(f"{k}={v}" if v else k for k, v in tags.items() if not k.startswith("mlflow."))
    config: dict[str, Any] = {k: number(v) for k, v in params.items()}
    config["imported_from"] = {
        "format": "mlflow", "mlruns": str(root.resolve()), "experiment_id": str(meta.get("experiment_id")),
        "experiment": exp.get("name"), "run_id": uuid, "status": status, "user": meta.get("user_id"),
        "mlflow_tags": {k: v for k, v in tags.items() if k.startswith("mlflow.")},
    }
    ours, error = _run_status(status)
    metrics = []
    for path in _files(run_dir / "metrics"):
        what = not_a_file(path)
        if what is not None:
            report(f"{path}: {what}, not a file; skipped")
        else:
            metrics.append(path)
    start, end = meta.get("start_time"), meta.get("end_time")

    def records(problem: Callable[[str], None], progress: Callable[[int], None]) -> Iterator[tuple]:
        base = run_dir / "metrics"
        for i in range(0, len(metrics), _OPEN_FILES):
            chunk = metrics[i:i + _OPEN_FILES]
            streams = [_points(p, p.relative_to(base).as_posix(), problem, progress) for p in chunk]
            yield from _grouped(heapq.merge(*streams))

    return SourceRun(run_id=source_run_id("mlflow", uuid), name=meta.get("run_name") or tags.get("mlflow.runName"),
                     project=project if project is not None else exp.get("name"), config=config,
                     tags=user_tags, created_at=start / 1000 if isinstance(start, (int, float)) else None,
                     ended_at=end / 1000 if isinstance(end, (int, float)) else None, status=ours, error=error,
                     records=records, size=sum(file_size(p) for p in metrics), source=str(run_dir),
                     artifacts=lambda: artifact_files(_artifact_dir(meta.get("artifact_uri"), run_dir), report))


def _artifact_dir(uri: Any, run_dir: Path) -> Path | str | None:
    """The run's local artifact folder: its ``artifact_uri`` when that is a local path, else ``<run>/artifacts``."""
    if isinstance(uri, str) and uri:
        local = local_path(uri, run_dir)
        if local is None:
            return uri
        if local.is_dir():
            return local
    default = run_dir / "artifacts"
    return default if default.is_dir() else None


def _points(path: Path, key: str, problem: Callable[[str], None],
            progress: Callable[[int], None]) -> Iterator[tuple[int, int, str, float]]:
    """``(timestamp ms, step, key, value)`` of every line of one metric file, in file order."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, kept open while the merge reads it
    except OSError as exc:
        problem(f"{path}: cannot be read ({type(exc).__name__}: {exc.strerror}); skipped")
        progress(file_size(path))
        return
    with f:
        for lineno, line in enumerate(f, 1):
            progress(len(line))
            parts = line.split()
            if not parts:
                continue
            try:
                if len(parts) not in (2, 3, 5):
                    raise ValueError
                ts = int(parts[0])
                value = float(parts[1])
                step = int(parts[2]) if len(parts) >= 3 else 0
            except ValueError:
                shown = line[:80].decode("utf-8", "replace").rstrip()
                problem(f"{path}:{lineno}: expected 'timestamp value step', given {shown!r}; skipped")
                continue
            bad = check_point(ts, step)
            if bad:
                problem(f"{path}:{lineno}: {bad}; skipped")
                continue
            yield ts, step, key, value


