"""Fixtures of the artifact tests: a store with a dataset -> model -> evaluation chain across runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tracker


def cli(store: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real ``tracker`` console script on ``store``."""
    env = {**os.environ, "TRACKER_STORE": str(store)}
    env.pop("TRACKER_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def make_chain(store: Path, work: Path) -> dict[str, Any]:
    """prep (dataset mnist:v0) -> train-1, train-2 (models mnist-cnn v0, v1; v1 aliased best) -> prod on v1 ->
    eval (uses mnist-cnn:prod, logs mnist-eval:v0). Returns the run ids and the contents."""
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "train.csv").write_text("x,y\n1,2\n")
    (data / "sub").mkdir(exist_ok=True)
    (data / "sub" / "test.csv").write_text("x,y\n3,4\n")
    ids: dict[str, Any] = {}
    with tracker.start_run(project="mnist", name="prep", store=store, system_metrics=False) as r:
        r.log_artifact(data, name="mnist", type="dataset", aliases=["raw"])
    ids["prep"] = r.id
    for i in (1, 2):
        with tracker.start_run(project="mnist", name=f"train-{i}", store=store, system_metrics=False) as r:
            r.use_artifact("mnist:latest")
            model = work / f"model-{i}.pt"
            model.write_bytes(b"weights" * i)
            r.log_artifact(model, name="mnist-cnn", type="model", aliases=["best"] if i == 2 else None)
        ids[f"train-{i}"] = r.id
    tracker.set_alias("mnist-cnn:v1", "prod", store=store)
    with tracker.start_run(project="mnist", name="eval", store=store, system_metrics=False) as r:
        r.use_artifact("mnist-cnn:prod")
        report = work / "report.txt"
        report.write_text("acc 0.93\n")
        r.log_artifact(report, name="mnist-eval", type="evaluation")
    ids["eval"] = r.id
    return ids


@pytest.fixture
def chain(tmp_store: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A store holding the chain of :func:`make_chain` (``tmp_store``: the test runs in an empty folder)."""
    return tmp_store, make_chain(tmp_store, tmp_path / "src")
