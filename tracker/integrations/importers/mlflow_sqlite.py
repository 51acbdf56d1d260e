"""Read MLflow's SQLite backend (``mlflow.db``, the default tracking store of MLflow 3) with the stdlib.

The database is opened read-only (SQLite's ``mode=ro``), never through
MLflow, which would migrate its schema on open. Tables read: ``experiments``,
``runs``, ``metrics`` (``is_nan`` rows are NaN), ``params`` and ``tags``; the
runs become runs as from the file layout (:mod:`.mlflow`), artifacts from
each run's ``artifact_uri`` when it is a local folder.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from tracker.integrations.importers import SourceError, SourceRun, not_a_file, number, source_run_id
from tracker.integrations.importers.mlflow_common import _grouped, _run_status, artifact_files, check_point, local_path

__all__ = ["sqlite_runs"]

_TABLES = ("experiments", "runs", "metrics", "params", "tags")


def db_path(source: str | os.PathLike[str]) -> Path:
    """The database file of ``mlflow.db``, a path, or a ``sqlite:///`` tracking URI."""
    text = os.fspath(source)
    if text.startswith("sqlite:///"):  # sqlite:///relative.db, sqlite:////absolute.db
        return Path(unquote(text[len("sqlite:///"):].split("?", 1)[0]))
    if text.startswith("sqlite:"):
        raise SourceError(f"{text}: expected a sqlite:/// URI of a local file (sqlite:///mlflow.db)")
    return Path(text)


def sqlite_runs(source: str | os.PathLike[str], experiment: str | None, project: str | None,
                report: Callable[[str], None]) -> Iterator[SourceRun]:
    """The active runs of an MLflow SQLite database.

    :raises SourceError: not a readable SQLite file, not MLflow's tables, no such experiment.
    """
    path = db_path(source)
    if not path.exists():
        raise SourceError(f"{path}: no such file (expected MLflow's SQLite database, e.g. mlflow.db)")
    what = not_a_file(path)
    if what is not None:
        raise SourceError(f"{path}: {what}, not a file (expected MLflow's SQLite database)")
    db = _connect(path)
    experiments = _experiments(db, path)
    if experiment is not None:
        names = [name for _, name, _ in experiments]
        experiments = [e for e in experiments if e[1] == experiment]
        if not experiments:
            raise SourceError(f"{path}: no experiment named {experiment!r} (experiments: {', '.join(names)})")
    for exp_id, exp_name, _ in experiments:
        rows = db.execute("SELECT run_uuid, name, status, start_time, end_time, artifact_uri, user_id FROM runs "
                          "WHERE experiment_id = ? AND lifecycle_stage = 'active' ORDER BY start_time, run_uuid",
                          (exp_id,)).fetchall()
        for row in rows:
            yield _source_run(db, path, exp_id, exp_name, row, project, report)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=ro", uri=True, check_same_thread=False)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise SourceError(f"{path}: not a readable SQLite database ({exc})") from None
    missing = [t for t in _TABLES if t not in tables]
    if missing:
        raise SourceError(f"{path}: a SQLite database without MLflow's tables (missing: {', '.join(missing)})")
    return db


def _experiments(db: sqlite3.Connection, path: Path) -> list[tuple[Any, str, Any]]:
    rows = db.execute("SELECT experiment_id, name, artifact_location FROM experiments "
                      "WHERE lifecycle_stage = 'active' ORDER BY experiment_id").fetchall()
    if not rows:
        raise SourceError(f"{path}: MLflow's database holds no active experiment")
    return [(r[0], str(r[1]), r[2]) for r in rows]


def _source_run(db: sqlite3.Connection, path: Path, exp_id: Any, exp_name: str, row: tuple,
                project: str | None, report: Callable[[str], None]) -> SourceRun:
    uuid, name, status, start, end, artifact_uri, user = row
    params = dict(db.execute("SELECT key, value FROM params WHERE run_uuid = ?", (uuid,)).fetchall())
    tags = dict(db.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (uuid,)).fetchall())
    status = str(status)
    config: dict[str, Any] = {k: number(str(v)) for k, v in sorted(params.items())}
    config["imported_from"] = {
        "format": "mlflow", "database": str(path.resolve()), "experiment_id": str(exp_id), "experiment": exp_name,
        "run_id": uuid, "status": status, "user": user,
        "mlflow_tags": {k: v for k, v in sorted(tags.items()) if k.startswith("mlflow.")},
    }
    ours, error = _run_status(status)
    count = db.execute("SELECT count(*) FROM metrics WHERE run_uuid = ?", (uuid,)).fetchone()[0]

    def records(problem: Callable[[str], None], progress: Callable[[int], None]) -> Iterator[tuple]:
        yield from _grouped(_points(db, path, uuid, problem, progress))

    def artifacts() -> Iterator[tuple[Path, str]]:
        folder: Path | str | None = None
        if isinstance(artifact_uri, str) and artifact_uri:
            local = local_path(artifact_uri, path.parent)
            folder = artifact_uri if local is None else (local if local.is_dir() else None)
        yield from artifact_files(folder, report)

    user_tags = sorted(f"{k}={v}" if v else k for k, v in tags.items() if not k.startswith("mlflow."))
    return SourceRun(run_id=source_run_id("mlflow", str(uuid)), name=name or tags.get("mlflow.runName"),
                     project=project if project is not None else exp_name, config=config, tags=user_tags,
                     created_at=start / 1000 if isinstance(start, (int, float)) else None,
                     ended_at=end / 1000 if isinstance(end, (int, float)) else None, status=ours, error=error,
                     records=records, size=count, source=f"{path} run {uuid}", artifacts=artifacts)


def _points(db: sqlite3.Connection, path: Path, uuid: str, problem: Callable[[str], None],
            progress: Callable[[int], None]) -> Iterator[tuple[int, int, str, float]]:
    """``(timestamp ms, step, key, value)`` of the run's metric rows, by time, step and key (streamed)."""
    cursor = db.execute("SELECT rowid, timestamp, step, key, value, is_nan FROM metrics WHERE run_uuid = ? "
                        "ORDER BY timestamp, step, key, rowid", (uuid,))
    for rowid, ts, step, key, value, is_nan in cursor:
        progress(1)
        where = f"{path}: table metrics, row {rowid} (run {uuid}, metric {key!r})"
        if type(ts) is not int or type(step) is not int or not isinstance(value, (int, float)):
            problem(f"{where}: expected an int timestamp and step and a number, given {ts!r}, {step!r}, "
                    f"{value!r}; skipped")
            continue
        bad = check_point(ts, step)
        if bad:
            problem(f"{where}: {bad}; skipped")
            continue
        yield ts, step, str(key), float("nan") if is_nan else float(value)
