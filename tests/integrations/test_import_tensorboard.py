"""``tracker import tensorboard`` on event files written by a real torch SummaryWriter."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorboard")
torch = pytest.importorskip("torch")

import tracker  # noqa: E402

from .support import hash_tree, invoke  # noqa: E402

LOSS_A = [1.0, 0.8, 0.6, float("nan"), 0.5, 0.45, 0.44, 0.4]


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    root = tmp_path / "tb"
    with SummaryWriter(log_dir=str(root / "run_a")) as w:
        for step, loss in enumerate(LOSS_A):
            w.add_scalar("train/loss", loss, step)
        w.add_scalar("train/loss", 0.39, 7)  # a repeated step
        w.add_scalar("eval/acc", 0.7, 4)
        w.add_histogram("weights", np.arange(10.0), 4)
        w.add_image("sample", np.full((3, 4, 6), 0.25), 2)
        w.add_text("notes", "not a record the tracker has", 1)
        w.add_hparams({"lr": 0.1, "batch_size": 32, "optimizer": "adam", "nesterov": True}, {"hparam/acc": 0.9},
                      run_name="hp")
    with SummaryWriter(log_dir=str(root / "nested" / "run_b")) as w:
        for step in range(5):
            w.add_scalar("train/loss", 2.0 - step / 10, step * 10)
    return root


def test_import_keeps_names_steps_times_hparams_and_adds_nothing_twice(logdir: Path, tmp_store: Path) -> None:
    before = hash_tree(logdir)
    imported_at = time.time()
    result = invoke(["import", "tensorboard", str(logdir), "--project", "tb", "--format", "json"])
    assert result.returncode == 0, result.output
    out = json.loads(result.stdout)
    assert sorted((r["name"], r["outcome"]) for r in out["runs"]) == [("nested/run_b", "imported"),
                                                                     ("run_a", "imported")]
    store = tracker.open_store()
    runs = {r.name: r for r in store.runs(project="tb")}
    assert sorted(runs) == ["nested/run_b", "run_a"]

    a = store.run(runs["run_a"].id)
    assert a.info.status == "finished"
    assert a.info.config["lr"] == pytest.approx(0.1) and a.info.config["batch_size"] == 32
    assert a.info.config["optimizer"] == "adam" and a.info.config["nesterov"] == 1  # torch writes bools as numbers
    assert a.info.config["imported_from"]["format"] == "tensorboard"
    records = list(a.records("metrics"))
    loss = [(r.step, r.data["train/loss"]) for r in records if "train/loss" in r.data]
    assert [s for s, _ in loss] == [0, 1, 2, 3, 4, 5, 6, 7, 7]  # the repeated step is kept
    expected = [float(np.float32(v)) for v in [*LOSS_A, 0.39]]  # TensorBoard keeps float32
    assert math.isnan(loss[3][1]) and [v for i, (_, v) in enumerate(loss) if i != 3] == expected[:3] + expected[4:]
    assert [(r.step, r.data["eval/acc"]) for r in records if "eval/acc" in r.data] == [(4, pytest.approx(0.7))]
    assert any("hparam/acc" in r.data for r in records)  # add_hparams' metric, from its subfolder
    [hist] = a.records("histogram")
    assert (hist.step, hist.data["name"], hist.data["count"]) == (4, "weights", 10)
    assert (hist.data["min"], hist.data["max"]) == (0.0, 9.0) and sum(hist.data["counts"]) == 10
    [image] = a.records("image")
    assert (image.step, image.data["name"], image.data["width"], image.data["height"]) == (2, "sample", 6, 4)
    assert image.time < imported_at  # the event's wall time
    [run_a] = [r for r in out["runs"] if r["name"] == "run_a"]
    assert run_a["skipped"] == {"text": 1}  # what has no home is named, not dropped silently
    # Wall times come from the events: the run's times are the writer's, not the import's.
    times = [r.time for r in records]
    assert a.info.created_at <= min(times) and a.info.ended_at == pytest.approx(max(times))
    assert max(times) < imported_at

    b = store.run(runs["nested/run_b"].id)
    assert b.metrics()["step"].tolist() == [0, 10, 20, 30, 40]

    files = sorted(p.stat().st_size for p in (tmp_store / "runs").rglob("*.jsonl"))
    again = invoke(["import", "tensorboard", str(logdir), "--project", "tb"])
    assert again.returncode == 0, again.output
    assert "0 imported, 2 already there" in again.stdout
    assert sorted(p.stat().st_size for p in (tmp_store / "runs").rglob("*.jsonl")) == files
    assert len(store.runs()) == 2
    assert hash_tree(logdir) == before  # the source is only read


def test_unreadable_event_file_is_reported_and_the_rest_imported(logdir: Path, tmp_store: Path) -> None:
    bad = logdir / "run_c" / "events.out.tfevents.1700000000.host.1.0"
    bad.parent.mkdir()
    bad.write_bytes(b"this is not a TFRecord file at all" * 10)
    result = invoke(["import", "tensorboard", str(logdir)])
    assert result.returncode == 1
    assert str(bad) in result.stderr and "tracker: warning:" in result.stderr
    assert "2 imported" in result.stdout
    names = sorted(r.name for r in tracker.open_store().runs())
    assert names[:2] == ["nested/run_b", "run_a"]


def test_not_a_logdir_is_one_clear_error(tmp_path: Path, tmp_store: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = invoke(["import", "tensorboard", str(tmp_path / "empty")])
    assert result.returncode == 1
    assert result.stderr.startswith("tracker: ") and "no TensorBoard event files" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_lists_the_import_group() -> None:
    result = invoke(["import", "--help"])
    assert result.returncode == 0 and "tensorboard" in result.stdout and "mlflow" in result.stdout
