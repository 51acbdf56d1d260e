"""``tracker import mlflow`` on an mlruns folder written by real mlflow calls."""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("yaml")
mlflow = pytest.importorskip("mlflow")

import tracker  # noqa: E402
from tracker.integrations.importers import import_runs  # noqa: E402
from tracker.integrations.importers.mlflow import mlflow_runs  # noqa: E402

from .support import hash_tree, invoke  # noqa: E402

LOSS = [1.0, 0.7, 0.5, float("nan"), 0.3, 0.25]


@pytest.fixture(scope="module")
def mlruns(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Two runs of experiment ``exp`` (finished, failed) and one of ``other``, through mlflow's own API."""
    root = tmp_path_factory.mktemp("mlflow") / "mlruns"
    mp = pytest.MonkeyPatch()
    mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store behind this switch
    try:
        mlflow.set_tracking_uri(root.as_uri())
        mlflow.set_experiment("exp")
        with mlflow.start_run(run_name="good") as good:
            mlflow.log_params({"lr": 0.01, "batch_size": 32, "optimizer": "adam", "schedule": "1e-3 then 1e-4"})
            mlflow.set_tags({"team": "vision", "flag": ""})
            for step, loss in enumerate(LOSS):
                mlflow.log_metric("loss", loss, step=step)
            mlflow.log_metric("loss", 0.2, step=5)  # a repeated step
            mlflow.log_metrics({"val/acc": 0.8, "val/loss": 0.4}, step=6)
        with mlflow.start_run(run_name="bad") as bad:
            mlflow.log_metric("loss", 3.0, step=0)
            mlflow.end_run(status="FAILED")
        mlflow.set_experiment("other")
        with mlflow.start_run(run_name="elsewhere"):
            mlflow.log_metric("x", 1.0, step=0)
        client = mlflow.MlflowClient()
        facts = {
            "good": client.get_run(good.info.run_id).info, "bad": client.get_run(bad.info.run_id).info,
            "loss": [(m.step, m.value, m.timestamp) for m in client.get_metric_history(good.info.run_id, "loss")],
            "val": [(m.step, m.value, m.timestamp) for m in client.get_metric_history(good.info.run_id, "val/acc")],
        }
    finally:
        mlflow.set_tracking_uri(None)
        mp.undo()
    return root, facts


def test_import_keeps_metrics_params_tags_status_and_times(mlruns: tuple[Path, dict], tmp_store: Path) -> None:
    root, facts = mlruns
    before = hash_tree(root)
    result = invoke(["import", "mlflow", str(root), "--experiment", "exp", "--format", "json"])
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert sorted((r["name"], r["outcome"]) for r in out["runs"]) == [("bad", "imported"), ("good", "imported")]

    store = tracker.open_store()
    runs = {r.name: r for r in store.runs()}
    assert sorted(runs) == ["bad", "good"]  # --experiment exp only
    good, info = runs["good"], facts["good"]
    assert good.id == f"mlflow-{info.run_id}" and good.project == "exp"
    assert good.status == "finished" and runs["bad"].status == "failed"
    assert good.created_at == info.start_time / 1000 and good.ended_at == info.end_time / 1000
    assert good.config["lr"] == 0.01 and good.config["batch_size"] == 32 and good.config["optimizer"] == "adam"
    assert good.config["schedule"] == "1e-3 then 1e-4"
    assert good.config["imported_from"]["run_id"] == info.run_id
    assert good.config["imported_from"]["mlflow_tags"]["mlflow.runName"] == "good"
    assert sorted(good.tags) == ["flag", "team=vision"]

    records = list(store.run(good.id).records("metrics"))
    loss = [(r.step, r.data["loss"], r.time) for r in records if "loss" in r.data]
    assert len(loss) == len(facts["loss"]) == 7
    for (step, value, t), (s2, v2, ts) in zip(loss, facts["loss"], strict=True):
        assert step == s2 and t == ts / 1000
        assert (math.isnan(value) and math.isnan(v2)) or value == v2
    assert [s for s, _, _ in loss] == [0, 1, 2, 3, 4, 5, 5]
    # log_metrics wrote both values with one timestamp and step: one record.
    [both] = [r for r in records if "val/acc" in r.data]
    assert both.data == {"val/acc": 0.8, "val/loss": 0.4} and both.step == 6
    assert both.time == facts["val"][0][2] / 1000

    sizes = sorted(p.stat().st_size for p in (tmp_store / "runs").rglob("*.jsonl"))
    again = invoke(["import", "mlflow", str(root)])
    assert again.returncode == 0, again.stderr
    assert "1 imported, 2 already there" in again.stdout  # only the other experiment's run is new
    third = invoke(["import", "mlflow", str(root)])
    assert "0 imported, 3 already there" in third.stdout
    new_sizes = sorted(p.stat().st_size for p in (tmp_store / "runs").rglob("*.jsonl"))
    assert len(new_sizes) == 3 and all(s in new_sizes for s in sizes)
    assert hash_tree(root) == before  # the source is only read


def test_unreadable_files_are_reported_and_the_rest_imported(mlruns: tuple[Path, dict], tmp_store: Path,
                                                              tmp_path: Path) -> None:
    import shutil

    root, facts = mlruns
    copy = tmp_path / "mlruns"
    shutil.copytree(root, copy)
    run_dir = copy / facts["good"].experiment_id / facts["good"].run_id
    with open(run_dir / "metrics" / "loss", "a", encoding="utf-8") as f:
        f.write("not a metric line\n")
    bad_meta = copy / facts["bad"].experiment_id / facts["bad"].run_id / "meta.yaml"
    bad_meta.write_text("run_id: [unclosed\n", encoding="utf-8")
    result = invoke(["import", "mlflow", str(copy), "--experiment", "exp"])
    assert result.returncode == 1
    assert f"{run_dir / 'metrics' / 'loss'}:8:" in result.stderr and "not a metric line" in result.stderr
    assert str(bad_meta) in result.stderr
    [run] = tracker.open_store().runs()
    assert run.name == "good"
    assert sum(1 for r in tracker.open_store().run(run.id).records("metrics") if "loss" in r.data) == 7


def test_unknown_experiment_is_one_clear_error(mlruns: tuple[Path, dict], tmp_store: Path) -> None:
    root, _ = mlruns
    result = invoke(["import", "mlflow", str(root), "--experiment", "nope"])
    assert result.returncode == 1
    assert "no experiment named 'nope'" in result.stderr and "exp" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_import_streams_in_constant_memory(mlruns: tuple[Path, dict], tmp_store: Path, tmp_path: Path) -> None:
    """Peak Python memory of importing 4x the points stays about the same (no list of points)."""
    import shutil

    root, facts = mlruns
    peaks = []
    for n in (20_000, 80_000):
        copy = tmp_path / f"mlruns-{n}"
        shutil.copytree(root, copy)
        run_dir = copy / facts["good"].experiment_id / facts["good"].run_id
        t0 = facts["good"].start_time
        lines = "".join(f"{t0 + i} {i * 0.001} {10**6 + i}\n" for i in range(n))
        (run_dir / "metrics" / "big").write_text(lines, encoding="utf-8")
        store = tmp_path / f"store-{n}"
        tracemalloc.start()
        try:
            [result] = import_runs((r for r in mlflow_runs(copy, experiment="exp") if r.name == "good"), store=store)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert result.records == n + 8  # the loss points, the val record, the big metric
    assert peaks[1] < peaks[0] * 1.5 + 2**20, peaks
