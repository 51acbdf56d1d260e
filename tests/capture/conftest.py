"""Fixtures of the capture tests: a store, a run in it, and the real ``tracker`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker


@pytest.fixture
def run(tmp_store: Path) -> Iterator[tracker.Run]:
    """A run in a fresh store, with system sampling off (tests turn it on when they want it)."""
    r = tracker.start_run(project="capture", system_metrics=False)
    yield r
    r.finish()


def cli(store: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real ``tracker`` command on ``store``."""
    env = {**os.environ, "TRACKER_STORE": str(store)}
    env.pop("TRACKER_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def blob_files(store: Path) -> list[Path]:
    """Every blob file of the store."""
    base = store / "blobs" / "sha256"
    return sorted(p for p in base.rglob("*") if p.is_file()) if base.exists() else []
