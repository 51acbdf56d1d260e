"""Lightning's own generic logger checks (tests_pytorch/loggers/test_all.py), applied to TrackerLogger.

Each test is the equivalent of one of the checks Lightning runs on its
built-in loggers: fit and test with the metrics they log, pickling with the
trainer, several loggers at once, ``prefix``, ``log_dir`` before the fit,
ddp_spawn with a no-op experiment on rank 1; then hyperparameters of every
form, LightningCLI with its default arguments, and no thread left behind.
"""

from __future__ import annotations

import pickle
import threading
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

from lightning.pytorch.demos.boring_classes import BoringModel  # noqa: E402
from lightning.pytorch.loggers import CSVLogger  # noqa: E402
from lightning.pytorch.loggers.logger import DummyExperiment  # noqa: E402

import tracker  # noqa: E402
from tracker.integrations.lightning import TrackerLogger  # noqa: E402

from .conftest import run_script  # noqa: E402

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "enable_checkpointing": False}


class HistoryLogger(TrackerLogger):
    """Lightning's StoreHistoryLogger: what the Trainer handed to ``log_metrics``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.history: list[tuple[int | None, dict[str, Any]]] = []

    def log_metrics(self, metrics: Any, step: int | None = None) -> None:
        super().log_metrics(metrics, step)
        self.history.append((step, dict(metrics)))


class CustomModel(BoringModel):
    def training_step(self, batch: Any, batch_idx: int) -> Any:
        loss = self.step(batch)
        self.log("train_some_val", loss)
        return {"loss": loss}

    def on_validation_epoch_end(self) -> None:
        self.log_dict({"early_stop_on": torch.tensor(1), "val_loss": torch.tensor(0.5)})

    def on_test_epoch_end(self) -> None:
        self.log("test_loss", torch.tensor(2))


def tracker_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("tracker"))


def test_fit_and_test_log_what_lightnings_loggers_log(tmp_store: Path, tmp_path: Path) -> None:
    logger = HistoryLogger(project="boring")
    trainer = pl.Trainer(max_epochs=1, logger=logger, limit_train_batches=1, limit_val_batches=1,
                         log_every_n_steps=1, default_root_dir=tmp_path, enable_progress_bar=False,
                         enable_model_summary=False)
    trainer.fit(CustomModel())
    trainer.test()
    assert [(s, sorted(m)) for s, m in logger.history] == [
        (0, ["epoch", "train_some_val"]), (0, ["early_stop_on", "epoch", "val_loss"]), (1, ["epoch", "test_loss"])]
    view = tracker.open_store().run(logger.version)
    rows = [(r.step, sorted(r.data)) for r in view.records("metrics")]
    assert rows == [(s, sorted(m)) for s, m in logger.history]
    assert [r.data["test_loss"] for r in view.records("metrics") if "test_loss" in r.data] == [2]
    assert view.info.status == "finished" and view.info.project == "boring"
    assert tracker_threads() == []  # Lightning's own suite fails on a thread left running


def test_logger_and_trainer_pickle(tmp_store: Path, tmp_path: Path) -> None:
    logger = TrackerLogger(save_dir=tmp_path)
    _ = logger.experiment
    logger.log_metrics({"a": 1})
    logger.save()
    pickle.dumps(logger)
    trainer = pl.Trainer(max_epochs=1, logger=logger, default_root_dir=tmp_path, **QUIET)
    trainer2 = pickle.loads(pickle.dumps(trainer))
    trainer2.logger.log_metrics({"acc": 1.0})
    assert trainer2.logger.name == logger.name and trainer2.logger.save_dir == logger.save_dir
    assert trainer2.logger.version == logger.version
    logger.finalize("success")
    trainer2.logger.finalize("success")
    view = tracker.open_store().run(logger.version)
    assert [r.data for r in view.records("metrics")] == [{"a": 1}, {"acc": 1.0}]  # one run, both processes' objects


def test_prefix_starts_every_metric_name(tmp_store: Path) -> None:
    logger = TrackerLogger(prefix="tmp")
    logger.log_metrics({"test": 1.0}, step=0)
    logger.finalize("success")
    [record] = tracker.open_store().run(logger.version).records("metrics")
    assert (record.step, record.data) == (0, {"tmp-test": 1.0})
    with pytest.raises(TypeError, match="prefix expects a str"):
        TrackerLogger(prefix=3)  # type: ignore[arg-type]


def test_default_name_and_dirs_before_the_fit(tmp_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    logger = TrackerLogger()
    assert logger.name == "lightning_logs"
    # Usable before the run starts (setup-time callbacks ask for them); nothing is created by asking.
    assert logger.root_dir == str(tmp_store.absolute() / "runs")
    assert logger.log_dir == str(tmp_store.absolute() / "runs" / logger.version)
    assert logger.save_dir is None  # none given: Lightning's own default applies
    assert not (tmp_store / "runs").exists()
    trainer = pl.Trainer(logger=logger, default_root_dir=tmp_path / "root", **QUIET)
    assert trainer.log_dir == str(tmp_path / "root")  # as for a Trainer without loggers
    assert TrackerLogger(save_dir=tmp_path / "given").save_dir == str(tmp_path / "given")


def test_checkpoints_go_under_default_root_dir_not_the_current_folder(
        tmp_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lightning's own suite fails a test that leaves files in the current folder (leave_no_artifacts_behind).
    cwd, root = tmp_path / "cwd", tmp_path / "root"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    logger = TrackerLogger(project="ckpt")
    trainer = pl.Trainer(max_steps=2, logger=logger, limit_val_batches=0, default_root_dir=root,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(BoringModel())
    assert sorted(cwd.iterdir()) == []
    [ckpt] = (root / "ckpt" / logger.version / "checkpoints").glob("*.ckpt")
    assert trainer.checkpoint_callback.best_model_path == str(ckpt)


def test_several_loggers_at_once(tmp_store: Path, tmp_path: Path) -> None:
    ours, csv = TrackerLogger(project="multi"), CSVLogger(tmp_path)
    trainer = pl.Trainer(max_epochs=1, logger=[ours, csv], limit_train_batches=2, limit_val_batches=1,
                         log_every_n_steps=1, default_root_dir=tmp_path, **QUIET)
    trainer.fit(CustomModel())
    view = tracker.open_store().run(ours.version)
    assert [r.step for r in view.records("metrics") if "train_some_val" in r.data] == [0, 1]
    assert Path(csv.log_dir, "metrics.csv").read_text().count("\n") >= 3
    assert view.info.status == "finished"


class RankZeroLoggerCheck(pl.Callback):
    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        is_dummy = isinstance(trainer.logger.experiment, DummyExperiment)
        if trainer.is_global_zero:
            assert not is_dummy
        else:
            assert is_dummy
            assert pl_module.logger.experiment.something(foo="bar") is None


DDP_SPAWN = """
import sys
import torch
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel
sys.path.insert(0, {tests!r})
from tests.integrations.test_lightning_contract import RankZeroLoggerCheck
from tracker.integrations.lightning import TrackerLogger

if __name__ == "__main__":  # ddp_spawn starts its processes from this file
    torch.set_num_threads(1)
    logger = TrackerLogger(project="spawn", run_id="spawned")
    trainer = pl.Trainer(logger=logger, strategy="ddp_spawn", accelerator="cpu", devices=2, max_steps=1,
                         callbacks=[RankZeroLoggerCheck()], enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False, default_root_dir=".")
    trainer.fit(BoringModel())
    print("done")
"""


def test_ddp_spawn_gives_rank_one_a_no_op_experiment(tmp_store: Path, tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parents[2])
    proc = run_script(DDP_SPAWN.format(tests=root), tmp_path, env={"TRACKER_STORE": str(tmp_store)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("done")
    view = tracker.open_store(tmp_store).run("spawned")
    assert view.info.status == "finished" and view.info.writers == 1  # rank 0 only
    assert view.info.config["model_class"].endswith("BoringModel")


def test_hyperparameters_of_every_form_are_plain_values(tmp_store: Path) -> None:
    omegaconf = pytest.importorskip("omegaconf")
    logger = TrackerLogger()
    logger.log_hyperparams(Namespace(lr=0.1, nested=Namespace(depth=2)))
    logger.log_hyperparams({"none": None, "tensor": torch.tensor(3), "vector": torch.tensor([1.0, 2.0]),
                            "nested": {"a": {"b": 1}}, "tuple": (1, 2)})
    logger.log_hyperparams(omegaconf.OmegaConf.create({"model": {"sizes": [32, 32], "width": "${model.sizes[0]}"}}))
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.finalize("success")
    config = tracker.open_store().run(logger.version).info.config
    assert config == {"lr": 0.1, "nested": {"a": {"b": 1}}, "none": None, "tensor": 3, "vector": [1.0, 2.0],
                      "tuple": [1, 2], "model": {"sizes": [32, 32], "width": 32}}


class CliModel(BoringModel):
    def __init__(self, hidden: int = 8, sizes: list[int] | None = None) -> None:
        super().__init__()
        self.save_hyperparameters()


LIGHTNING_CLI = """
import sys
import torch
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.demos.boring_classes import BoringDataModule
sys.path.insert(0, {tests!r})
from tests.integrations.test_lightning_contract import CliModel

torch.set_num_threads(1)
LightningCLI(CliModel, BoringDataModule)
"""


def test_lightning_cli_with_default_arguments(tmp_store: Path, tmp_path: Path) -> None:
    pytest.importorskip("jsonargparse")
    root = str(Path(__file__).resolve().parents[2])
    proc = run_script(LIGHTNING_CLI.format(tests=root), tmp_path, "fit",
                      "--trainer.logger=tracker.integrations.lightning.TrackerLogger",
                      "--trainer.logger.project=cli", "--trainer.max_steps=2", "--trainer.limit_val_batches=1",
                      "--trainer.enable_progress_bar=false", "--model.sizes=[32, 32]",
                      env={"TRACKER_STORE": str(tmp_store)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    [run] = tracker.open_store(tmp_store).runs(project="cli")
    assert run.status == "finished"
    assert run.config["hidden"] == 8 and run.config["sizes"] == [32, 32]
    assert (tmp_path / "config.yaml").is_file()  # LightningCLI's config callback found a log_dir
    checkpoints = list((tmp_path / "cli" / run.id / "checkpoints").glob("*.ckpt"))
    assert checkpoints, sorted(str(p) for p in tmp_path.rglob("*"))


def test_save_hyperparameters_with_omegaconf_values_through_a_fit(tmp_store: Path, tmp_path: Path) -> None:
    omegaconf = pytest.importorskip("omegaconf")
    cfg = omegaconf.OmegaConf.create({"optim": {"lr": 0.1, "betas": [0.9, 0.99]}, "sizes": [32, 32]})
    logger = TrackerLogger(project="omega")
    trainer = pl.Trainer(max_steps=1, logger=logger, limit_val_batches=0, default_root_dir=tmp_path, **QUIET)
    trainer.fit(CliModel(hidden=4, sizes=cfg.sizes))
    config = tracker.open_store().run(logger.version).info.config
    assert config["sizes"] == [32, 32] and config["hidden"] == 4  # not the string '[32, 32]'
