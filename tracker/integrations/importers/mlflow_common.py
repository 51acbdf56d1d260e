"""What MLflow's two stores share: artifact URIs as paths, artifact files, run status, metric points.

Used by the file-store reader (:mod:`.mlflow`) and the SQLite reader (:mod:`.mlflow_sqlite`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from tracker.core.files import not_a_file

#: Steps and integers beyond this lose precision in a float (MLflow stores steps as 64-bit ints).
MAX_INT = 2**53


def local_path(uri: str, base: Path) -> Path | None:
    """The local path of an artifact URI (``file:`` or a plain path, relative to ``base``), else ``None``."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and uri[1:3] in (":\\", ":/")):  # a path (or C:\...)
        path = Path(uri)
        return path if path.is_absolute() else base / path
    return None


def artifact_files(folder: Path | str | None, report: Callable[[str], None]) -> Iterator[tuple[Path, str]]:
    """``(path, name)`` of each regular file under a run's artifact folder; what cannot be logged is reported."""
    if folder is None:
        return
    if isinstance(folder, str):
        report(f"artifacts at {folder}: not a local folder; not imported (copy them with mlflow artifacts download)")
        return
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for d in [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
            report(f"{Path(dirpath) / d}: a symlink to a folder in the artifacts; not followed, skipped")
            dirnames.remove(d)
        for f in sorted(filenames):
            path = Path(dirpath) / f
            what = not_a_file(path)
            if what is not None:
                report(f"{path}: {what} in the artifacts, not a file; skipped")
                continue
            yield path, path.relative_to(folder).as_posix()


def _run_status(status: str) -> tuple[str, dict[str, str] | None]:
    """An MLflow run status as the run's status and error."""
    if status == "FINISHED":
        return "finished", None
    if status in ("FAILED", "KILLED"):
        return "failed", {"type": f"MLflow{status.title()}", "message": f"the MLflow run's status is {status}"}
    return "crashed", {"type": "MLflowUnfinished", "message": f"the MLflow run's status was {status} when it was "
                                                              "imported"}


def check_point(ts: int, step: int) -> str | None:
    """Why a metric point cannot be stored as it is (the store keeps ints within ±2**53 exactly), else ``None``."""
    if not -MAX_INT <= step <= MAX_INT:
        return f"step {step} is beyond ±2**53, which the store keeps exactly"
    if not 0 <= ts <= MAX_INT:
        return f"timestamp {ts} is not a time in milliseconds since the epoch"
    return None


def _grouped(points: Iterator[tuple[int, int, str, float]]) -> Iterator[tuple[float, int, dict[str, float]]]:
    """One record per run of points with the same timestamp and step (and no key twice)."""
    ts = step = None
    values: dict[str, float] = {}
    for t, s, key, value in points:
        if values and (t != ts or s != step or key in values):
            yield ts / 1000, step, values
            values = {}
        ts, step = t, s
        values[key] = value
    if values:
        yield ts / 1000, step, values
