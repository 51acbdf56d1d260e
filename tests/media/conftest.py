"""Fixtures of the media tests: a run in a fresh store, and what the store holds (blobs and records)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker

pytest.importorskip("av", reason="PyAV is part of the media extra, which the test extra installs")


@pytest.fixture
def run(tmp_store: Path) -> Iterator[tracker.Run]:
    """A run in a fresh store, with system sampling off."""
    r = tracker.start_run(project="media", system_metrics=False)
    yield r
    if r.status == "running":
        r.finish()


def blob_files(store: Path) -> list[Path]:
    """Every blob file of the store."""
    base = store / "blobs" / "sha256"
    return sorted(p for p in base.rglob("*") if p.is_file()) if base.exists() else []


def held(run: tracker.Run) -> tuple[int, int]:
    """``(blob files, records)`` of the run's store: what a refused value must leave unchanged."""
    view = tracker.open_store(run.store).run(run.id)
    return len(blob_files(Path(run.store))), sum(1 for _ in view.records())


def records(run: tracker.Run, schema: str) -> list:
    """The run's records of ``schema``, in log order."""
    return list(tracker.open_store(run.store).run(run.id).records(schema))


def blob(run: tracker.Run, sha: str) -> bytes:
    """The bytes of a stored blob."""
    from tracker.capture.blobs import blob_path

    return blob_path(run.store, sha).read_bytes()
