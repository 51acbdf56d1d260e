"""Importers against what users really have: MLflow 3's default SQLite store, bad lines, symlink loops,
FIFOs where files should be, and an import killed half-way."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("yaml")
mlflow = pytest.importorskip("mlflow")

import tracker  # noqa: E402
from tracker.integrations.importers import SourceRun, import_runs  # noqa: E402
from tracker.integrations.importers.mlflow import mlflow_runs  # noqa: E402

from .support import hash_tree, invoke  # noqa: E402

MLFLOW_DEFAULT = """
import json, os
import mlflow

os.environ.pop("MLFLOW_TRACKING_URI", None)   # MLflow 3's default store: ./mlflow.db
mlflow.set_experiment("exp")
with mlflow.start_run(run_name="good") as run:
    mlflow.log_params({"lr": 0.01, "batch_size": 32, "optimizer": "adam"})
    mlflow.set_tags({"team": "vision"})
    for step, loss in enumerate([1.0, 0.5, float("nan"), 0.25]):
        mlflow.log_metric("loss", loss, step=step)
    mlflow.log_metrics({"val/acc": 0.8, "val/loss": 0.4}, step=4)
    with open("weights.bin", "wb") as f:
        f.write(bytes(range(256)) * 4)
    mlflow.log_artifact("weights.bin")
    mlflow.log_artifact("weights.bin", artifact_path="checkpoints")
with mlflow.start_run(run_name="failing") as bad:
    mlflow.log_metric("loss", 3.0, step=0)
    mlflow.end_run(status="FAILED")
client = mlflow.MlflowClient()
info = client.get_run(run.info.run_id).info
hist = [(m.step, m.value, m.timestamp) for m in client.get_metric_history(run.info.run_id, "loss")]
print(json.dumps({"uri": mlflow.get_tracking_uri(), "run_id": info.run_id, "start": info.start_time,
                  "end": info.end_time, "loss": hist, "bad": bad.info.run_id}))
"""


@pytest.fixture(scope="module")
def mlflow_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A folder where real mlflow calls, with MLflow's default tracking URI, wrote mlflow.db and artifacts."""
    folder = tmp_path_factory.mktemp("mlflow-sqlite")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MLFLOW_DEFAULT)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert facts["uri"].startswith("sqlite:") and (folder / "mlflow.db").is_file()
    return folder, facts


def test_mlflow_sqlite_store_imports_params_metrics_tags_and_artifacts(mlflow_db: tuple[Path, dict],
                                                                        tmp_store: Path) -> None:
    folder, facts = mlflow_db
    before = hash_tree(folder)
    result = invoke(["import", "mlflow", str(folder / "mlflow.db"), "--format", "json"])
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert sorted((r["name"], r["outcome"]) for r in out["runs"]) == [("failing", "imported"), ("good", "imported")]
    store = tracker.open_store()
    runs = {r.name: r for r in store.runs()}
    good = runs["good"]
    assert good.id == f"mlflow-{facts['run_id']}" and good.project == "exp" and good.status == "finished"
    assert runs["failing"].status == "failed"
    assert good.created_at == facts["start"] / 1000 and good.ended_at == facts["end"] / 1000
    assert {k: good.config[k] for k in ("lr", "batch_size", "optimizer")} == {"lr": 0.01, "batch_size": 32,
                                                                             "optimizer": "adam"}
    assert good.tags == ["team=vision"] and good.config["imported_from"]["mlflow_tags"]["mlflow.runName"] == "good"
    view = store.run(good.id)
    loss = [(r.step, r.data["loss"], r.time) for r in view.records("metrics") if "loss" in r.data]
    assert [(s, t) for s, _, t in loss] == [(s, ts / 1000) for s, _, ts in facts["loss"]]
    values = [v for _, v, _ in loss]
    assert values[:2] == [1.0, 0.5] and values[2] != values[2] and values[3] == 0.25
    [val] = [r for r in view.records("metrics") if "val/acc" in r.data]
    assert val.data == {"val/acc": 0.8, "val/loss": 0.4} and val.step == 4
    arts = {a.name: a for a in view.artifacts()}
    assert sorted(arts) == ["checkpoints/weights.bin", "weights.bin"]
    assert view.open_artifact("checkpoints/weights.bin").read() == bytes(range(256)) * 4
    # Again: nothing added. The same store through its folder and its sqlite:/// URI is the same source.
    files = sorted(p.stat().st_size for p in (tmp_store / "runs").rglob("*.jsonl"))
    for source in (str(folder), f"sqlite:///{folder / 'mlflow.db'}"):
        again = invoke(["import", "mlflow", source])
        assert again.returncode == 0, again.stderr
        assert "0 imported, 2 already there" in again.stdout
    assert sorted(p.stat().st_size for p in (tmp_store / "runs").rglob("*.jsonl")) == files
    assert hash_tree(folder) == before  # the database and the artifacts are only read


def _file_store(root: Path) -> dict[str, str]:
    """An mlruns folder with three runs written by mlflow's file store; run name -> run id."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    ids = {}
    try:
        mlflow.set_tracking_uri(root.as_uri())
        mlflow.set_experiment("exp")
        for name in ("first", "second", "third"):
            with mlflow.start_run(run_name=name) as run:
                mlflow.log_param("lr", 0.1)
                for step in range(4):
                    mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
            ids[name] = run.info.run_id
    finally:
        mlflow.set_tracking_uri(None)
        mp.undo()
    return ids


def test_a_bad_metric_line_and_a_symlink_loop_are_named_and_every_good_run_imported_whole(
        tmp_path: Path, tmp_store: Path) -> None:
    root = tmp_path / "mlruns"
    ids = _file_store(root)
    [exp] = [p for p in root.iterdir() if p.is_dir() and (p / "meta.yaml").exists() and p.name != "0"]
    loss = exp / ids["second"] / "metrics" / "loss"
    with open(loss, "a", encoding="utf-8") as f:
        f.write(f"{int(time.time() * 1000)} 0.1 9223372036854775807\n")  # a valid int64 step
    (exp / "loop").symlink_to(".")
    before = hash_tree(root)
    result = invoke(["import", "mlflow", str(root), "--format", "json"])
    assert result.returncode == 1  # problems were reported
    assert f"{loss}:5: step 9223372036854775807 is beyond" in result.stderr
    assert f"{exp / 'loop'}: a symlink" in result.stderr
    out = json.loads(result.stdout)
    assert sorted((r["name"], r["outcome"], r["records"]) for r in out["runs"]) == [
        ("first", "imported", 4), ("second", "imported", 4), ("third", "imported", 4)]
    runs = tracker.open_store().runs()
    assert sorted((r.name, r.status) for r in runs) == [("first", "finished"), ("second", "finished"),
                                                        ("third", "finished")]
    assert not [p for p in tmp_store.iterdir() if p.name.startswith(".import-")]
    assert hash_tree(root) == before


class Boom(Exception):
    pass


def _source(run_id: str, n: int, fail_at: int | None = None, pause_at: int | None = None) -> SourceRun:
    def records(problem: Any, progress: Any) -> Any:
        for i in range(n):
            if i == fail_at:
                raise Boom("the source broke")
            if i == pause_at:
                print("half-way", flush=True)
                time.sleep(60)
            yield 1.7e9 + i, i, {"loss": 1.0 / (i + 1)}

    return SourceRun(run_id=run_id, name="src", project="p", config={"imported_from": {"x": 1}}, tags=[],
                     created_at=1.7e9, ended_at=None, status="finished", error=None, records=records)


def test_an_import_that_fails_half_way_leaves_no_run(tmp_store: Path) -> None:
    with pytest.raises(Boom):
        import_runs(iter([_source("half", 10, fail_at=5)]), store=tmp_store)
    assert tracker.open_store(tmp_store).runs() == []
    assert [p.name for p in tmp_store.iterdir() if p.name.startswith(".")] == []
    [result] = import_runs(iter([_source("half", 10)]), store=tmp_store)
    assert (result.outcome, result.records) == ("imported", 10)
    assert tracker.open_store(tmp_store).run("half").metrics()["step"].tolist() == list(range(10))


KILLED = """
import sys
sys.path[:0] = {paths!r}
from tests.integrations.test_import_sources import _source
from tracker.integrations.importers import import_runs
import_runs(iter([_source("killed", 100, pause_at=50)]), store={store!r})
"""


def test_an_import_killed_half_way_leaves_no_run_and_the_next_import_is_whole(tmp_store: Path,
                                                                             tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parents[2])
    code = textwrap.dedent(KILLED.format(paths=[root, *sys.path], store=str(tmp_store)))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "half-way"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(30)
    assert not (tmp_store / "runs" / "killed").exists()
    [leftover] = [p for p in tmp_store.iterdir() if p.name.startswith(".import-")]
    [result] = import_runs(iter([_source("killed", 60)]), store=tmp_store)
    assert (result.outcome, result.records) == ("imported", 60)
    assert not leftover.exists()  # the dead import's staging is cleared
    assert tracker.open_store(tmp_store).run("killed").info.status == "finished"


def _finishes_within(seconds: float, fn: Any) -> tuple[float, Any]:
    box: list[Any] = []
    t0 = time.monotonic()
    worker = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds * 5)
    assert not worker.is_alive(), "blocked on a FIFO"
    return time.monotonic() - t0, box[0] if box else None


def test_a_fifo_named_like_an_event_file_is_refused_at_once(tmp_path: Path, tmp_store: Path) -> None:
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    from tracker.integrations.importers.tensorboard import tensorboard_runs

    logdir = tmp_path / "tb"
    with SummaryWriter(str(logdir / "good")) as w:
        w.add_scalar("loss", 1.0, 0)
    (logdir / "fifo").mkdir()
    fifo = logdir / "fifo" / "events.out.tfevents.1700000000.host.1.0"
    os.mkfifo(fifo)
    problems: list[str] = []
    elapsed, runs = _finishes_within(1.0, lambda: list(tensorboard_runs(logdir, problem=problems.append)))
    assert elapsed < 1.0
    assert [r.name for r in runs] == ["good"]
    assert problems == [f"{fifo}: a FIFO, not an event file; skipped"]
    result = invoke(["import", "tensorboard", str(logdir)], timeout=60)
    assert result.returncode == 1 and "a FIFO" in result.stderr and "1 imported" in result.stdout


def test_mlflow_files_that_are_not_regular_are_refused(tmp_path: Path, tmp_store: Path) -> None:
    root = tmp_path / "mlruns"
    ids = _file_store(root)
    [exp] = [p for p in root.iterdir() if p.is_dir() and (p / "meta.yaml").exists() and p.name != "0"]
    param = exp / ids["first"] / "params" / "lr"
    param.unlink()
    os.mkfifo(param)
    metric = exp / ids["third"] / "metrics" / "loss"
    metric.unlink()
    os.mkfifo(metric)
    problems: list[str] = []
    elapsed, results = _finishes_within(1.0, lambda: import_runs(mlflow_runs(root, problem=problems.append),
                                                                 store=tmp_store, report=problems.append))
    assert f"{param}: a FIFO, not a file; skipped" in problems and f"{metric}: a FIFO, not a file; skipped" in problems
    assert sorted((r.name, r.records) for r in results) == [("first", 4), ("second", 4), ("third", 0)]
    db = tmp_path / "mlflow.db"
    os.mkfifo(db)
    result = invoke(["import", "mlflow", str(db)], timeout=60)
    assert result.returncode == 1 and f"{db}: a FIFO, not a file" in result.stderr


def test_mlflow_sqlite_refusals_say_why(tmp_path: Path, tmp_store: Path) -> None:
    import sqlite3

    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    result = invoke(["import", "mlflow", str(other)])
    assert result.returncode == 1 and "without MLflow's tables (missing: experiments" in result.stderr
    (tmp_path / "empty").mkdir()
    result = invoke(["import", "mlflow", str(tmp_path / "empty")])
    assert result.returncode == 1 and "no <experiment id>/meta.yaml folder, and no mlflow.db" in result.stderr
    shutil.rmtree(tmp_path / "empty")
