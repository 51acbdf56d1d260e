"""What real W&B client scripts do that tracker used to refuse, run after ``import tracker as wandb``.

Each test is a pattern of public W&B scripts (W&B's quickstart and launch
examples, wandb/examples, nanoGPT-style configs) on a tiny torch model built
here, read back through the store, the CLI and ``tracker.Api()``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

import tracker  # noqa: E402
import tracker as wandb  # noqa: E402 - what a migrated script writes
from tracker.cli import make_cli  # noqa: E402
from tracker.host import get_host  # noqa: E402

from .conftest import run_script  # noqa: E402


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 10))


def test_array_likes_in_config_are_stored_as_lists(store: Path) -> None:
    pd = pytest.importorskip("pandas")
    config = {"optim": {"betas": torch.tensor([0.9, 0.99]), "eps": torch.tensor(1e-8)},
              "mean": np.array([0.485, 0.456, 0.406]), "grid": np.arange(4).reshape(2, 2),
              "weights": torch.ones(3, requires_grad=True), "input_shape": torch.Size([1, 28, 28]),
              "classes": pd.Series(["cat", "dog"])}
    run = wandb.init(project="cfg", config=config)
    assert run.config.optim["betas"] == pytest.approx([0.9, 0.99])
    wandb.config.update({"ema": torch.tensor([0.5, 0.25])})
    wandb.finish()
    stored = tracker.open_store(store).run(run.id).info.config
    assert stored["optim"]["betas"] == pytest.approx([0.9, 0.99]) and type(stored["optim"]["betas"]) is list
    assert stored["optim"]["eps"] == pytest.approx(1e-8)
    assert stored["mean"] == [0.485, 0.456, 0.406] and stored["grid"] == [[0, 1], [2, 3]]
    assert stored["weights"] == [1.0, 1.0, 1.0] and stored["input_shape"] == [1, 28, 28]
    assert stored["classes"] == ["cat", "dog"] and stored["ema"] == [0.5, 0.25]
    assert wandb.Api().run(f"cfg/{run.id}").config["optim"]["betas"] == pytest.approx([0.9, 0.99])
    # What is still not a JSON value is named by its dotted key.
    with pytest.raises(tracker.SchemaError, match=r"when\[0\]|when.*datetime64"):
        wandb.init(project="cfg", config={"when": np.array(["2025-03-14"], dtype="datetime64[D]")})


def test_a_table_of_images_as_the_quickstart_logs_it(store: Path) -> None:
    from PIL import Image as PILImage

    model = _model()
    images = torch.rand(4, 1, 4, 4)
    labels = torch.tensor([3, 1, 4, 1])
    run = wandb.init(project="quickstart")
    with torch.no_grad():
        probs = model(images).softmax(dim=1)
    predicted = probs.argmax(dim=1)
    table = wandb.Table(columns=["image", "pred", "target"] + [f"score_{i}" for i in range(10)])
    for img, pred, targ, prob in zip(images, predicted, labels, probs, strict=True):
        table.add_data(wandb.Image(img[0].numpy() * 255), pred, targ, *prob.numpy())
    wandb.log({"predictions_table": table}, commit=False)
    wandb.log({"loss": 0.5})
    wandb.finish()
    view = tracker.open_store(store).run(run.id)
    [rec] = view.records("table")
    assert rec.step == 0 and rec.data["columns"][:3] == ["image", "pred", "target"]
    for row, img, pred, targ in zip(rec.data["data"], images, predicted, labels, strict=True):
        cell = row[0]
        assert cell["_type"] == "image-file" and (cell["width"], cell["height"]) == (4, 4)
        assert row[1] == int(pred) and row[2] == int(targ) and type(row[3]) is float
        # The cell names a blob holding the image, byte for byte what W&B would show.
        blob = store / "blobs" / "sha256" / cell["sha256"][:2] / cell["sha256"][2:]
        pixels = np.asarray(PILImage.open(io.BytesIO(blob.read_bytes())))
        assert np.array_equal(pixels, np.clip(img[0].numpy() * 255, 0, 255).astype(np.uint8))
    shas = {row[0]["sha256"] for row in rec.data["data"]}
    # tracker gc keeps the blobs the cells name (even past the grace period), tracker verify checks them.
    from tracker.capture.blobs import references

    assert shas <= references(view)
    cli = make_cli(get_host())
    verified = CliRunner().invoke(cli, ["--store", str(store), "verify"], catch_exceptions=False)
    assert verified.exit_code == 0 and "4 stored files checked: ok" in verified.stdout, verified.output
    damaged = store / "blobs" / "sha256" / next(iter(shas))[:2] / next(iter(shas))[2:]
    os.chmod(damaged, 0o644)
    damaged.write_bytes(b"not a png")
    verified = CliRunner().invoke(cli, ["--store", str(store), "verify"])
    assert verified.exit_code == 1 and "table 'predictions_table' row" in verified.output


def test_log_without_arguments_commits_the_step(store: Path) -> None:
    # wandb/examples' "log metrics at different steps": values gathered with commit=False, then wandb.log().
    run = wandb.init(project="steps")
    model = _model()
    for epoch in range(3):
        loss = model(torch.rand(2, 16)).pow(2).mean()
        wandb.log({"train/loss": loss}, commit=False)
        wandb.log({"epoch": epoch}, commit=False)
        wandb.log()
    wandb.log()  # nothing pending: an empty step, as W&B's history gets a row
    wandb.log({"after": 1.0})
    wandb.finish()
    rows = [(r.step, sorted(r.data)) for r in tracker.open_store(store).run(run.id).records("metrics")]
    assert rows == [(0, ["epoch", "train/loss"]), (1, ["epoch", "train/loss"]), (2, ["epoch", "train/loss"]),
                    (3, []), (4, ["after"])]


def test_strings_in_log_are_stored_as_text_beside_the_metrics(store: Path) -> None:
    run = wandb.init(project="text")
    wandb.log({"loss": 0.5, "phase": "warmup", "val": {"sample": "the cat sat"}})
    wandb.log({"phase": "main"}, commit=False)
    wandb.log({"loss": 0.25})
    run.log({"note": "plain run.log too"}, step=9)
    with pytest.raises(tracker.SchemaError, match="step"):
        wandb.log({"step": "reserved"})
    wandb.finish()
    view = tracker.open_store(store).run(run.id)
    assert [(r.step, r.data) for r in view.records("metrics")] == [(0, {"loss": 0.5}), (1, {"loss": 0.25})]
    assert [(r.step, r.data["name"], r.data["value"]) for r in view.records("text")] == [
        (0, "phase", "warmup"), (0, "val/sample", "the cat sat"), (1, "phase", "main"),
        (9, "note", "plain run.log too")]
    shown = CliRunner().invoke(make_cli(get_host()), ["--store", str(store), "show", run.id],
                               catch_exceptions=False).stdout
    assert "Text values" in shown and "plain run.log too" in shown
    rows = tracker.open_store(store).sql('SELECT name, value FROM "text" ORDER BY step, name').fetchall()
    assert rows[0] == ("phase", "warmup")
    history = wandb.Api().run(f"text/{run.id}").history()  # W&B's history table has the strings too
    assert history["_step"].tolist() == [0, 1, 9] and history["phase"].tolist()[:2] == ["warmup", "main"]
    assert history.set_index("_step").loc[9, "note"] == "plain run.log too"


def test_define_metric_step_metric_is_stored_as_the_axis(store: Path) -> None:
    run = wandb.init(project="axes")
    wandb.define_metric("epoch")
    wandb.define_metric("val/*", step_metric="epoch")
    wandb.define_metric("val/*", step_metric="epoch")  # said twice: stored once
    for epoch in range(2):
        wandb.log({"epoch": epoch, "val/acc": 0.5})
    wandb.finish()
    view = tracker.open_store(store).run(run.id)
    assert [r.data for r in view.records("metric_axis")] == [{"name": "val/*", "step_metric": "epoch"}]
    assert view.metrics()["step"].tolist() == [0, 1]  # the definition took no step


def test_run_dir_files_are_logged_at_finish(store: Path) -> None:
    run = wandb.init(project="files")
    path = Path(wandb.run.dir)
    assert path.is_dir() and path == run.path / "files"
    torch.save(_model().state_dict(), os.path.join(wandb.run.dir, "model.pt"))
    (path / "eval").mkdir()
    (path / "eval" / "report.txt").write_text("acc 0.9")
    wandb.log({"loss": 0.1})
    wandb.finish()
    view = tracker.open_store(store).run(run.id)
    assert sorted(a.name for a in view.artifacts()) == ["eval/report.txt", "model.pt"]
    out = CliRunner().invoke(make_cli(get_host()), ["--store", str(store), "verify", run.id], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    with wandb.init(mode="disabled") as off:
        assert os.path.isdir(off.dir)


WATCH_WITHOUT_TORCH = """
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
import tracker as wandb
wandb.init(project="nt")
try:
    wandb.watch(object())
except TypeError as exc:
    print("TypeError:", exc)
wandb.finish()
"""


def test_watch_without_torch_says_it_needs_a_torch_module(tmp_path: Path, store: Path) -> None:
    proc = run_script(WATCH_WITHOUT_TORCH, tmp_path, env={"TRACKER_STORE": str(store)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "TypeError: watch: expected a torch.nn.Module: watch needs torch" in proc.stdout, proc.stdout
    assert "given object" in proc.stdout
