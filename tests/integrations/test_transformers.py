"""TrackerCallback with a real Transformers Trainer on CPU and a tiny BERT made from a config."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

import tracker  # noqa: E402
from tracker.integrations.transformers import TrackerCallback, metric_name  # noqa: E402


class Tokens(torch.utils.data.Dataset):
    """Random token sequences; the label says whether the first token is in the upper half."""

    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, 32, (n, 8), generator=g)
        self.y = (self.x[:, 0] >= 16).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"input_ids": self.x[i], "labels": self.y[i]}


def tiny_bert() -> Any:
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=32, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=16, max_position_embeddings=16, num_labels=2)
    return transformers.BertForSequenceClassification(config)


def arguments(out: Path, **kwargs: Any) -> Any:
    options = {"output_dir": str(out), "max_steps": 6, "per_device_train_batch_size": 4, "logging_steps": 2,
               "eval_strategy": "steps", "eval_steps": 3, "report_to": [], "save_strategy": "no",
               "learning_rate": 1e-3, "use_cpu": True, "disable_tqdm": True, "seed": 0}
    return transformers.TrainingArguments(**{**options, **kwargs})


def test_train_logs_config_steps_and_values(tmp_store: Path, tmp_path: Path) -> None:
    cb = TrackerCallback(project="hf", name="tiny-bert", config={"dataset": "random tokens"})
    model = tiny_bert()
    trainer = transformers.Trainer(model=model, args=arguments(tmp_path / "out"), train_dataset=Tokens(16, 1),
                                   eval_dataset=Tokens(8, 2), callbacks=[cb])
    trainer.train()

    view = tracker.open_store().run(cb.run.id)
    info = view.info
    assert info.status == "finished" and (info.project, info.name) == ("hf", "tiny-bert")
    config = info.config
    assert config["learning_rate"] == 1e-3 and config["max_steps"] == 6 and config["logging_steps"] == 2
    assert config["train_batch_size"] == 4 and config["dataset"] == "random tokens"
    assert config["model"]["hidden_size"] == 8 and config["model"]["vocab_size"] == 32
    assert config["num_parameters"] == sum(p.numel() for p in model.parameters())
    assert config["model_class"].endswith("BertForSequenceClassification")

    # One record per Trainer log, at its global step, every value under its prefixed name.
    history = trainer.state.log_history
    m = view.metrics()
    assert m["step"].tolist() == [h["step"] for h in history] == [2, 3, 4, 6, 6, 6]
    for i, entry in enumerate(history):
        for key, value in entry.items():
            if key != "step":
                assert m[metric_name(key)][i] == pytest.approx(value, rel=1e-6), (i, key)
    assert "train/loss" in m and "eval/loss" in m and "train/train_loss" in m and "epoch" in m
    assert math.isnan(m["eval/loss"][0]) and not math.isnan(m["eval/loss"][1])


def test_evaluate_after_training_appends_to_the_run(tmp_store: Path, tmp_path: Path) -> None:
    cb = TrackerCallback(project="hf")
    trainer = transformers.Trainer(model=tiny_bert(), args=arguments(tmp_path / "out", eval_strategy="no"),
                                   train_dataset=Tokens(16, 1), callbacks=[cb])
    trainer.train()
    result = trainer.evaluate(Tokens(8, 3))
    view = tracker.open_store().run(cb.run.id)
    assert view.info.status == "finished" and view.info.writers == 2
    m = view.metrics()
    assert m["step"][-1] == 6 and m["eval/loss"][-1] == pytest.approx(result["eval_loss"], rel=1e-6)


class Exploding:
    """Raises in the forward pass of the third training batch."""

    def __init__(self, calls: list[int]) -> None:
        self.calls = calls

    def __call__(self, module: Any, args: Any, output: Any) -> None:
        if module.training:
            self.calls.append(1)
            if len(self.calls) == 3:
                raise FloatingPointError("loss is NaN")


def test_failing_training_marks_the_run_failed(tmp_store: Path, tmp_path: Path) -> None:
    cb = TrackerCallback(project="hf")
    model = tiny_bert()
    model.register_forward_hook(Exploding([]))
    trainer = transformers.Trainer(model=model, args=arguments(tmp_path / "out", logging_steps=1, eval_strategy="no"),
                                   train_dataset=Tokens(16, 1), callbacks=[cb])
    with pytest.raises(FloatingPointError, match="loss is NaN"):
        trainer.train()
    info = tracker.open_store().run(cb.run.id).info
    assert info.status == "failed"
    assert info.error["type"] == "FloatingPointError" and "loss is NaN" in info.error["message"]
    assert info.last_step == 2
    # The Trainer's own method is back once training ended.
    assert "training_step" not in vars(trainer)


def test_only_the_main_process_logs(tmp_store: Path, tmp_path: Path) -> None:
    cb = TrackerCallback(project="hf")
    args = arguments(tmp_path / "out")
    state = transformers.TrainerState(is_world_process_zero=False, is_local_process_zero=False)
    control = transformers.TrainerControl()
    cb.on_train_begin(args, state, control, model=tiny_bert())
    state.global_step = 2
    cb.on_log(args, state, control, logs={"loss": 0.5})
    cb.on_train_end(args, state, control)
    assert cb.run is None
    assert tracker.open_store().runs() == []


def test_checkpoint_folders_logged_only_when_asked(tmp_store: Path, tmp_path: Path) -> None:
    logged, plain_cb = TrackerCallback(log_checkpoints=True), TrackerCallback()
    out = tmp_path / "out"
    trainer = transformers.Trainer(model=tiny_bert(), args=arguments(out, save_strategy="steps", save_steps=3,
                                                                      eval_strategy="no"),
                                   train_dataset=Tokens(16, 1), callbacks=[logged, plain_cb])
    trainer.train()

    store = tracker.open_store()
    assert store.run(plain_cb.run.id).artifacts() == []  # the default: nothing logged
    view = store.run(logged.run.id)
    arts = view.artifacts()
    assert [(a.name, a.kind, a.step, a.folder) for a in arts] == [
        ("checkpoint-3", "checkpoint", 3, True), ("checkpoint-6", "checkpoint", 6, True)]
    from tracker.capture.blobs import BlobStore

    for a in arts:
        folder = out / a.name
        files = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
        assert "model.safetensors" in files and "trainer_state.json" in files
        manifest = BlobStore(tmp_store).read_manifest(a.sha256)
        assert {e.path: e.sha256 for e in manifest.files} == {
            rel: hashlib.sha256(p.read_bytes()).hexdigest() for rel, p in files.items()}
        restored = view.copy_artifact(a.name, tmp_path / "restored" / a.name)
        assert (restored / "model.safetensors").read_bytes() == files["model.safetensors"].read_bytes()


def test_report_to_tracker_makes_the_callback(tmp_store: Path, tmp_path: Path) -> None:
    """A W&B script's ``report_to="wandb"`` becomes ``report_to="tracker"`` (docs/wandb.md)."""
    args = arguments(tmp_path / "out", report_to="tracker", run_name="from-report-to", eval_strategy="no")
    trainer = transformers.Trainer(model=tiny_bert(), args=args, train_dataset=Tokens(16, 1))
    [cb] = [c for c in trainer.callback_handler.callbacks if isinstance(c, TrackerCallback)]
    trainer.train()
    [run] = tracker.open_store().runs()
    assert (run.name, run.status, run.id) == ("from-report-to", "finished", cb.run.id)
    assert tracker.open_store().run(run.id).metrics()["step"].tolist() == [2, 4, 6, 6]
