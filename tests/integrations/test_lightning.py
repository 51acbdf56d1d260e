"""TrackerLogger with a real Lightning Trainer on CPU and a tiny model built here."""

from __future__ import annotations

import math
from argparse import Namespace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

import tracker  # noqa: E402
from tracker.integrations.lightning import TrackerLogger  # noqa: E402

from .conftest import metric_rows, run_script  # noqa: E402
from .support import invoke  # noqa: E402


class Recorder(pl.loggers.Logger):
    """A second logger that keeps what Lightning reported, to compare the run with."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int | None, dict[str, float]]] = []
        self.hparams: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return "recorder"

    @property
    def version(self) -> str:
        return "0"

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        self.hparams.update(vars(params) if isinstance(params, Namespace) else dict(params))

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.calls.append((step, dict(metrics)))


class Tiny(pl.LightningModule):
    """A linear regression on 4 features; raises in training step ``fail_at`` if given."""

    def __init__(self, lr: float = 0.05, optim: dict | None = None, fail_at: int | None = None) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.lin = torch.nn.Linear(4, 1)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        if self.hparams.fail_at is not None and self.global_step == self.hparams.fail_at:
            raise RuntimeError("loss exploded")
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.lin(x), y)
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val/loss", torch.nn.functional.mse_loss(self.lin(x), y))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def loader() -> Any:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=g)
    y = x.sum(1, keepdim=True)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)


def trainer(loggers: list[Any], root: Path, **kwargs: Any) -> Any:
    options = {"max_epochs": 2, "log_every_n_steps": 1, "enable_progress_bar": False,
               "enable_model_summary": False, "accelerator": "cpu", "devices": 1, "default_root_dir": root}
    return pl.Trainer(logger=loggers, **{**options, **kwargs})


def test_fit_logs_config_steps_and_values(tmp_store: Path, tmp_path: Path) -> None:
    logger = TrackerLogger(project="lit", name="tiny", tags=["cpu"], config={"seed": 0})
    rec = Recorder()
    model = Tiny(lr=0.05, optim={"name": "sgd", "nesterov": False, "betas": (0.9, 0.99)})
    trainer([logger, rec], tmp_path, enable_checkpointing=False).fit(model, loader(), loader())

    view = tracker.open_store().run(logger.version)
    info = view.info
    assert info.status == "finished"
    assert (info.project, info.name, info.tags) == ("lit", "tiny", ["cpu"])
    assert info.config["lr"] == 0.05
    assert info.config["optim"] == {"name": "sgd", "nesterov": False, "betas": [0.9, 0.99]}
    assert info.config["fail_at"] is None and info.config["seed"] == 0
    assert info.config["num_parameters"] == 5
    assert info.config["model_class"].endswith("Tiny")
    # name, version, log_dir as Lightning expects them.
    assert logger.name == "lit" and logger.version == view.id
    assert Path(logger.log_dir) == tmp_store.absolute() / "runs" / view.id
    assert logger.save_dir is None  # none given: Lightning's default_root_dir applies

    # Every log_metrics call of Lightning, at its step, with its values.
    m = view.metrics()
    assert len(rec.calls) == len(m["step"]) and len(rec.calls) > 16
    for i, (step, values) in enumerate(rec.calls):
        assert m["step"][i] == step
        for key, value in values.items():
            assert m[key][i] == pytest.approx(float(value), rel=1e-6), (i, key)
    assert int(np.sum(~np.isnan(m["train/loss"]))) == 16  # 2 epochs of 8 batches
    assert int(np.sum(~np.isnan(m["val/loss"]))) == 2


def test_hyperparams_namespace_and_metric_types(tmp_store: Path) -> None:
    logger = TrackerLogger(project="lit")
    logger.log_hyperparams(Namespace(lr=0.1, layers=[4, 1], data=Namespace(path=Path("x/y"), shuffle=True)))
    logger.log_hyperparams({"sched": {"name": "cos", "warmup": np.int64(5)}, "dtype": torch.float32})
    logger.log_metrics({"a": torch.tensor(1.5), "b": np.float32(2.5), "c": 3, "d": torch.tensor([float("nan")]),
                        "label": "text is left out"}, step=7)
    logger.log_metrics({"a": np.float64(0.25)}, step=8)
    logger.finalize("success")
    view = tracker.open_store().run(logger.version)
    assert view.info.config == {"lr": 0.1, "layers": [4, 1], "data": {"path": "x/y", "shuffle": True},
                                "sched": {"name": "cos", "warmup": 5}, "dtype": "torch.float32"}
    m = view.metrics()
    assert m["step"].tolist() == [7, 8]
    assert m["a"].tolist() == [1.5, 0.25] and m["b"][0] == 2.5 and m["c"][0] == 3
    assert math.isnan(m["d"][0]) and "label" not in m
    assert view.info.status == "finished"


def test_failed_fit_marks_the_run_failed(tmp_store: Path, tmp_path: Path) -> None:
    logger = TrackerLogger(project="lit")
    with pytest.raises(RuntimeError, match="loss exploded"):
        trainer([logger], tmp_path, enable_checkpointing=False).fit(Tiny(fail_at=3), loader())
    info = tracker.open_store().run(logger.version).info
    assert info.status == "failed"
    assert info.error["type"] == "RuntimeError" and "loss exploded" in info.error["message"]
    assert info.last_step == 2  # three steps logged before the failure


def test_resumed_fit_continues_the_run(tmp_store: Path, tmp_path: Path) -> None:
    first = TrackerLogger(project="lit", run_id="resumable")
    t1 = trainer([first], tmp_path, max_epochs=1)
    t1.fit(Tiny(), loader())
    ckpt = t1.checkpoint_callback.best_model_path
    # no save_dir: under the Trainer's default_root_dir, as Lightning puts them without a logger's folder
    assert Path(ckpt).is_file() and Path(ckpt).is_relative_to(tmp_path / "lit" / "resumable")

    second = TrackerLogger(project="lit", run_id="resumable")
    rec = Recorder()
    trainer([second, rec], tmp_path, max_epochs=2).fit(Tiny(), loader(), ckpt_path=ckpt)

    runs = tracker.open_store().runs()
    assert [r.id for r in runs] == ["resumable"]
    view = tracker.open_store().run("resumable")
    assert view.info.status == "finished" and view.info.writers == 2
    steps = view.metrics()["step"].tolist()
    assert steps == sorted(steps) and steps[:8] == list(range(8))
    # The resumed fit logs after the restored global step, as Lightning reported it.
    assert [s for s, _ in rec.calls] == steps[8:] and steps[8] >= 8


DDP_SCRIPT = """
    import sys
    import torch
    import lightning.pytorch as pl
    from tracker.integrations.lightning import TrackerLogger

    torch.set_num_threads(1)

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)
        def training_step(self, batch, i):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.lin(x), y)
            self.log("loss", loss)
            self.log("rank", float(self.global_rank))
            return loss
        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=g)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=4)
    loggers = [TrackerLogger(project="ddp-default", config={"mode": "rank zero"}),
               TrackerLogger(project="ddp-all", all_ranks=True)]
    trainer = pl.Trainer(strategy="ddp", accelerator="cpu", devices=2, max_epochs=1, logger=loggers,
                         log_every_n_steps=1, enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    trainer.fit(Tiny(), data)
"""


def test_ddp_logs_once_or_per_rank(tmp_store: Path, tmp_path: Path) -> None:
    proc = run_script(DDP_SCRIPT, tmp_path, env={"TRACKER_STORE": str(tmp_store)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    store = tracker.open_store()
    by_project = {r.project: r for r in store.runs()}
    assert sorted(by_project) == ["ddp-all", "ddp-default"]

    # Default: rank zero only, one segment; 32 samples over 2 ranks in batches of 4: 4 steps.
    default = store.run(by_project["ddp-default"].id)
    assert default.info.status == "finished" and default.info.config["mode"] == "rank zero"
    [seg] = default.segment_paths()
    rows = metric_rows(seg)
    assert [s for s, _ in rows] == [0, 1, 2, 3] and {d["rank"] for _, d in rows} == {0.0}

    # all_ranks: one run, a segment per rank, each with its own rank's values.
    both = store.run(by_project["ddp-all"].id)
    assert both.info.status == "finished" and both.info.writers == 2
    segs = both.segment_paths()
    assert len(segs) == 2
    per_rank = {}
    for seg in segs:
        rows = metric_rows(seg)
        assert [s for s, _ in rows] == [0, 1, 2, 3]
        [rank] = {d["rank"] for _, d in rows}
        per_rank[rank] = [d["loss"] for _, d in rows]
    assert sorted(per_rank) == [0.0, 1.0]
    assert per_rank[0.0] == [d["loss"] for _, d in metric_rows(default.segment_paths()[0])]
    assert per_rank[0.0] != per_rank[1.0]


def _ckpt_trainer(loggers: list[Any], root: Path, **checkpoint: Any) -> Any:
    callback = pl.callbacks.ModelCheckpoint(dirpath=root / "ckpt", **checkpoint)
    return trainer(loggers, root, callbacks=[callback], limit_val_batches=2)


def test_checkpoints_logged_as_artifacts_only_when_asked(tmp_store: Path, tmp_path: Path) -> None:
    logged, plain_logger = TrackerLogger(project="lit", log_checkpoints=True), TrackerLogger(project="lit")
    _ckpt_trainer([logged, plain_logger], tmp_path, monitor="val/loss", save_top_k=1,
                  save_last=True).fit(Tiny(), loader(), loader())

    store = tracker.open_store()
    assert store.run(plain_logger.version).artifacts() == []  # the default: nothing logged
    view = store.run(logged.version)
    arts = view.artifacts()
    assert {a.kind for a in arts} == {"checkpoint"} and not any(a.reference for a in arts)
    # A file logged once per content: an unchanged best checkpoint is not logged again.
    assert len({(a.name, a.sha256) for a in arts}) == len(arts)
    # The files left on disk (the best and last.ckpt) are the latest artifacts of their names, byte for byte.
    on_disk = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    assert "last.ckpt" in on_disk and len(on_disk) == 2
    for name in on_disk:
        with view.open_artifact(name) as f:
            assert f.read() == (tmp_path / "ckpt" / name).read_bytes(), name
    # Each at the global step of its save (8 batches an epoch).
    assert {a.step for a in arts} == {8, 16}
    for a in arts:
        if a.name != "last.ckpt":
            assert a.name.endswith(f"step={a.step}.ckpt")
    assert [a.step for a in arts if a.name == "last.ckpt"] == [8, 16]


def test_checkpoint_references_copy_nothing_and_verify(tmp_store: Path, tmp_path: Path) -> None:
    logger = TrackerLogger(log_checkpoints=True, checkpoint_copy=False)
    _ckpt_trainer([logger], tmp_path, save_top_k=-1).fit(Tiny(), loader(), loader())

    arts = tracker.open_store().run(logger.version).artifacts()
    files = sorted((tmp_path / "ckpt").iterdir())
    assert sorted(a.name for a in arts) == sorted(p.name for p in files) and len(files) == 2
    for a in arts:
        assert a.reference and a.kind == "checkpoint"
        assert a.path == (tmp_path / "ckpt" / a.name).absolute()
    blobs = tmp_store / "blobs" / "sha256"
    assert not blobs.exists() or not [p for p in blobs.rglob("*") if p.is_file()]  # no bytes copied
    res = invoke(["verify"])
    assert res.returncode == 0, res.stdout + res.stderr


def test_log_checkpoints_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="log_checkpoints expects a bool, given str 'yes'"):
        TrackerLogger(log_checkpoints="yes")  # type: ignore[arg-type]
