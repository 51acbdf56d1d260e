"""W&B scripts, written as W&B users write them, run after ``import tracker as wandb`` and read back.

Each test is a training loop of a public W&B example in miniature (a tiny
torch model built here, synthetic data); it reads the run back and checks
values, steps, config types, summary and status.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import threading
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

import tracker  # noqa: E402
import tracker as wandb  # noqa: E402 - what a migrated script writes
from tracker.cli import make_cli  # noqa: E402
from tracker.host.host import get_host  # noqa: E402

from .conftest import run_script  # noqa: E402


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


def test_a_loop_logging_0d_tensors_as_nanogpt_does(store: Path) -> None:
    model = _model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    config = {"learning_rate": torch.tensor(1e-3), "block_size": np.int64(64), "dropout": 0.0}
    wandb.init(project="owt", name="gpt2-124M", config=config)
    losses = []
    for it in range(5):
        x = torch.randn(16, 4)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        # nanoGPT logs the loss tensor itself (estimate_loss returns 0-d tensors)
        wandb.log({"iter": it, "train/loss": loss.detach(), "lr": torch.tensor(1e-3), "mfu": 12.5})
    wandb.run.summary["best_val_loss"] = torch.tensor(min(losses))
    run_id = wandb.run.id
    wandb.finish()
    view = tracker.open_store(store).run(run_id)
    m = view.metrics()
    assert m["step"].tolist() == [0, 1, 2, 3, 4]
    assert m["iter"].tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(m["train/loss"], losses, rtol=1e-6)
    info = view.info
    assert info.status == "finished"
    lr = info.config["learning_rate"]
    assert type(lr) is float and math.isclose(lr, 1e-3, rel_tol=1e-6)
    assert info.config["block_size"] == 64 and type(info.config["block_size"]) is int
    assert math.isclose(info.summary["best_val_loss"], min(losses), rel_tol=1e-6)


def test_commit_false_accumulates_into_one_step(store: Path) -> None:
    run = wandb.init(project="p")
    for epoch in range(3):
        wandb.log({"train/loss": 1.0 / (epoch + 1)}, commit=False)
        wandb.log({"train/acc": 0.5 + epoch / 10}, commit=False)
        wandb.log({"val": {"loss": 2.0 / (epoch + 1), "acc": 0.4}})  # nested dict, flattened with "/"
    wandb.log({"late": 1.0}, commit=False)  # pending at finish: written then
    wandb.finish()
    records = [r for r in tracker.open_store(store).run(run.id).records(schema="metrics")]
    assert [r.step for r in records] == [0, 1, 2, 3]
    assert records[1].data == {"train/loss": 0.5, "train/acc": 0.6, "val/loss": 1.0, "val/acc": 0.4}
    assert records[3].data == {"late": 1.0}


def test_commit_false_with_explicit_steps(store: Path) -> None:
    run = wandb.init(project="p")
    wandb.log({"a": 1.0}, step=5, commit=False)
    wandb.log({"b": 2.0}, step=5, commit=False)
    wandb.log({"c": 3.0}, step=7, commit=False)  # another step: step 5 is written first
    wandb.log({"d": 4.0}, step=7)
    wandb.log({"e": 5.0})
    wandb.finish()
    rows = [(r.step, r.data) for r in tracker.open_store(store).run(run.id).records(schema="metrics")]
    assert rows == [(5, {"a": 1.0, "b": 2.0}), (7, {"c": 3.0, "d": 4.0}), (8, {"e": 5.0})]


def test_define_metric_summaries_everywhere_summaries_are(store: Path) -> None:
    run = wandb.init(project="p")
    wandb.define_metric("val/loss", summary="min,max")
    wandb.define_metric("val/acc", summary="best", goal="maximize")
    wandb.define_metric("train/*", step_metric="epoch", summary="mean")
    for i, (loss, acc) in enumerate([(0.9, 0.5), (0.4, 0.8), (0.6, 0.7)]):
        wandb.log({"val/loss": loss, "val/acc": acc, "train/x": float(i), "epoch": i})
    wandb.finish()
    info = tracker.open_store(store).run(run.id).info
    assert info.summary["val/loss"] == {"min": 0.4, "max": 0.9}
    assert info.summary["val/acc"] == {"best": 0.8}
    assert info.summary["train/x"] == {"mean": 1.0}
    assert "epoch" not in info.summary  # not defined: its last value shows as the metric's last
    api_run = wandb.Api().run(f"p/{run.id}")
    assert api_run.summary["val/loss"] == {"min": 0.4, "max": 0.9} and api_run.summary["epoch"] == 2
    shown = CliRunner().invoke(make_cli(get_host()), ["show", run.id], catch_exceptions=False).stdout
    assert "0.4" in shown and "0.9" in shown


def test_media_objects_become_records(store: Path) -> None:
    run = wandb.init(project="p")
    chw = torch.rand(3, 6, 5)  # a CHW float tensor, as torchvision gives
    wandb.log({"examples": [wandb.Image(chw, caption="first"), wandb.Image(np.zeros((4, 4), np.uint8))],
               "weights": wandb.Histogram(np.arange(100.0), num_bins=10),
               "acts": wandb.Histogram(np_histogram=np.histogram([1, 2, 2, 3], bins=3)),
               "preds": wandb.Table(columns=["id", "label", "score"], data=[[0, "cat", 0.9], [1, "dog", 0.2]]),
               "loss": 0.5})
    table = wandb.Table(columns=["x"])
    table.add_data(1)
    table.add_data(2)
    wandb.log({"grow": table})
    wandb.finish()
    view = tracker.open_store(store).run(run.id)
    images = list(view.records(schema="image"))
    assert [(r.step, r.data["name"], r.data["width"], r.data["height"], r.data["mode"], r.data["caption"])
            for r in images] == [(0, "examples", 5, 6, "RGB", "first"), (0, "examples", 4, 4, "L", "")]
    hists = {r.data["name"]: r for r in view.records(schema="histogram")}
    assert hists["weights"].step == 0 and hists["weights"].data["count"] == 100
    assert len(hists["weights"].data["counts"]) == 10 and hists["weights"].data["max"] == 99.0
    assert hists["acts"].data["counts"] == [1, 2, 1]
    tables = list(view.records(schema="table"))
    assert tables[0].step == 0 and tables[0].data["columns"] == ["id", "label", "score"]
    assert tables[0].data["data"] == [[0, "cat", 0.9], [1, "dog", 0.2]]
    assert tables[1].step == 1 and tables[1].data == {"name": "grow", "columns": ["x"], "data": [[1], [2]]}
    assert [r.step for r in view.records(schema="metrics")] == [0]


def test_media_objects_refuse_what_cannot_be_stored(store: Path) -> None:
    with pytest.raises(tracker.SchemaError, match=r"data\[0\]\.obj.*object"):
        wandb.Table(columns=["obj"], data=[[object()]])
    with pytest.raises(tracker.SchemaError, match="boxes"):
        wandb.Image(np.zeros((2, 2), np.uint8), boxes={"predictions": {}})


def test_save_logs_a_checkpoint_as_an_artifact(store: Path, tmp_path: Path) -> None:
    run = wandb.init(project="p")
    model = _model()
    ckpt = tmp_path / "model.pt"
    torch.save(model.state_dict(), ckpt)
    assert wandb.save(str(ckpt)) == [str(ckpt)]
    wandb.save(str(tmp_path / "later-*.txt"))  # nothing yet: logged at finish when it exists
    (tmp_path / "later-1.txt").write_text("written after save()")
    os.mkfifo(tmp_path / "later-2.txt")
    with pytest.warns(tracker.TrackerWarning, match="later-2.txt is a FIFO, not a file; not logged"):
        wandb.finish()
    view = tracker.open_store(store).run(run.id)
    arts = {a.name: a for a in view.artifacts()}
    assert set(arts) == {"model.pt", "later-1.txt"}
    state = torch.load(view.open_artifact("model.pt"), weights_only=True)
    assert torch.equal(state["0.weight"], model.state_dict()["0.weight"])


def test_watch_logs_gradient_and_parameter_histograms_and_unhooks(store: Path) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    run = wandb.init(project="p")
    wandb.watch(model, log="all", log_freq=2)
    for _ in range(4):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        wandb.log({"loss": loss})
    wandb.finish()
    view = tracker.open_store(store).run(run.id)
    by_name: dict[str, list[int]] = {}
    for r in view.records(schema="histogram"):
        by_name.setdefault(r.data["name"], []).append(r.step)
    assert by_name == {f"{kind}/{p}": [1, 3] for kind in ("parameters", "gradients")
                       for p in ("0.weight", "0.bias", "2.weight", "2.bias")}
    grads = [r for r in view.records(schema="histogram") if r.data["name"] == "gradients/0.weight"]
    assert grads[0].data["count"] == 32
    assert not model._forward_hooks and all(not p._backward_hooks for p in model.parameters())


def test_sync_tensorboard_records_what_summarywriter_logs(store: Path, tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    run = wandb.init(project="cleanrl", config={"env_id": "CartPole-v1"}, sync_tensorboard=True)
    writer = SummaryWriter(str(tmp_path / "runs" / "exp"))
    for global_step in range(0, 400, 100):
        writer.add_scalar("charts/episodic_return", global_step / 10, global_step)
        writer.add_scalar("losses/value_loss", 1.0 / (global_step + 1), global_step)
    writer.add_scalars("returns", {"mean": 1.0, "max": 2.0}, 300)
    writer.add_histogram("weights", np.arange(50.0), 300)
    writer.add_image("frame", np.full((3, 4, 6), 0.5), 300)
    writer.close()
    wandb.finish()
    view = tracker.open_store(store).run(run.id)
    m = view.metrics()
    steps = sorted(set(m["step"].tolist()))
    assert steps == [0, 100, 200, 300]
    returns = {int(s): v for s, v in zip(m["step"], m["charts/episodic_return"], strict=True) if not math.isnan(v)}
    assert returns == {0: 0.0, 100: 10.0, 200: 20.0, 300: 30.0}
    pairs = {k: v[~np.isnan(v)].tolist() for k, v in m.items() if k.startswith("returns/")}
    assert pairs == {"returns/mean": [1.0], "returns/max": [2.0]}  # add_scalars' subfolders, named as W&B does
    (hist,) = view.records(schema="histogram")
    assert hist.step == 300 and hist.data["name"] == "weights" and hist.data["count"] == 50
    assert hist.data["min"] == 0.0 and hist.data["max"] == 49.0
    (image,) = view.records(schema="image")
    assert image.step == 300 and (image.data["width"], image.data["height"]) == (6, 4)
    # After finish the writers are left alone.
    from torch.utils.tensorboard.writer import FileWriter

    assert FileWriter.add_event.__qualname__ == "FileWriter.add_event"


RESUMABLE = """
import os, sys
import tracker as wandb
run = wandb.init(project="preempt", config={"lr": 0.1})
for i in range(int(sys.argv[1])):
    wandb.log({"loss": 1.0 / (i + 1)})
print(run.id)
wandb.finish()
"""


def test_a_job_resumed_through_wandb_run_id_keeps_one_run_with_continuous_steps(store: Path, tmp_path: Path) -> None:
    env = {"TRACKER_STORE": str(store), "WANDB_RUN_ID": "job-42", "WANDB_RESUME": "allow"}
    first = run_script(RESUMABLE, tmp_path, "3", env=env)
    assert first.returncode == 0, first.stderr
    second = run_script(RESUMABLE, tmp_path, "2", env=env)
    assert second.returncode == 0, second.stderr
    assert first.stdout.split() == second.stdout.split() == ["job-42"]
    s = tracker.open_store(store)
    assert [r.id for r in s.runs()] == ["job-42"]
    view = s.run("job-42")
    assert view.metrics()["step"].tolist() == [0, 1, 2, 3, 4]
    assert view.info.status == "finished" and view.info.config == {"lr": 0.1}


def test_wandb_env_vars_name_the_run(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_PROJECT", "envproj")
    monkeypatch.setenv("WANDB_NAME", "envname")
    monkeypatch.setenv("WANDB_TAGS", "a, b")
    monkeypatch.setenv("WANDB_NOTES", "from the env")
    run = wandb.init()
    wandb.finish()
    info = tracker.open_store(store).run(run.id).info
    assert (info.project, info.name, info.tags, info.notes) == ("envproj", "envname", ["a", "b"], "from the env")


def test_wandb_mode_disabled_writes_nothing(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "disabled")
    run = wandb.init(project="p", config={"lr": 0.1})
    wandb.log({"loss": torch.tensor(1.0)})
    wandb.log({"img": wandb.Image(np.zeros((2, 2), np.uint8))}, commit=False)
    wandb.config.update({"bs": 4})
    wandb.summary["best"] = 1
    wandb.define_metric("loss", summary="min")
    wandb.watch(_model())
    assert wandb.config.lr == 0.1 and run.config["bs"] == 4
    wandb.finish()
    assert tracker.current_run() is None
    assert not store.exists() or not any(store.rglob("*"))


@dataclasses.dataclass
class Optim:
    name: str = "adamw"
    betas: tuple[float, float] = (0.9, 0.95)


@dataclasses.dataclass
class TrainConfig:
    lr: float = 3e-4
    layers: list[int] = dataclasses.field(default_factory=lambda: [32, 32])
    optim: Optim = dataclasses.field(default_factory=Optim)


def test_omegaconf_argparse_and_dataclass_configs_are_plain_values(store: Path) -> None:
    omegaconf = pytest.importorskip("omegaconf")
    cfg = omegaconf.OmegaConf.create({"model": {"layers": [32, 32], "width": "${model.layers[0]}"},
                                      "lr": 0.1})
    run = wandb.init(project="p", config=cfg)
    wandb.config.update(argparse.Namespace(batch_size=64, sizes=omegaconf.ListConfig([1, 2])))
    wandb.finish()
    run2 = wandb.init(project="p", config=TrainConfig())
    wandb.finish()
    s = tracker.open_store(store)
    assert s.run(run.id).info.config == {"model": {"layers": [32, 32], "width": 32}, "lr": 0.1, "batch_size": 64,
                                         "sizes": [1, 2]}
    assert s.run(run2.id).info.config == {"lr": 3e-4, "layers": [32, 32],
                                          "optim": {"name": "adamw", "betas": [0.9, 0.95]}}


def test_a_config_value_that_is_not_plain_is_named(store: Path) -> None:
    with pytest.raises(tracker.SchemaError, match=r"optim\.path.*PosixPath"):
        wandb.init(project="p", config={"optim": {"path": Path("/x"), "lr": 1}})
    with pytest.raises(tracker.SchemaError, match=r"\bk\b.*object"):
        tracker.start_run(config={"a": 1, "k": object()})
    assert tracker.current_run() is None


def test_api_reads_runs_back_as_wandbs_public_api(store: Path) -> None:
    ids = []
    for lr in (0.1, 0.01):
        run = wandb.init(project="sweep", config={"lr": lr}, tags=["t"])
        for step in range(3):
            wandb.log({"loss": lr * (3 - step)}, commit=False)
            wandb.log({"acc": step / 3})
        ids.append(run.id)
        wandb.finish()
    api = wandb.Api()
    runs = api.runs("my-team/sweep")
    assert [r.id for r in runs] == ids[::-1]
    assert [r.id for r in api.runs("sweep", filters={"config.lr": 0.01})] == [ids[1]]
    r = api.run(f"my-team/sweep/{ids[0]}")
    assert (r.state, r.config, r.tags) == ("finished", {"lr": 0.1}, ["t"])
    hist = r.history()
    assert hist["_step"].tolist() == [0, 1, 2]
    np.testing.assert_allclose(hist["loss"], [0.3, 0.2, 0.1])
    assert r.summary["acc"] == pytest.approx(2 / 3)
    assert [row["loss"] for row in r.scan_history(keys=["loss"])] == pytest.approx([0.3, 0.2, 0.1])
    with pytest.raises(tracker.RunNotFound):
        api.run(f"otherproject/{ids[0]}")


def test_no_tracker_thread_outlives_the_last_run(store: Path, tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    def tracker_threads() -> list[str]:
        return sorted(t.name for t in threading.enumerate() if t.name.startswith("tracker"))

    assert tracker_threads() == []
    first = tracker.start_run(project="p", system_metrics=0.05)
    second = wandb.init(project="p", sync_tensorboard=True)
    wandb.watch(_model())
    SummaryWriter(str(tmp_path / "tb")).add_scalar("x", 1.0, 0)
    assert "tracker-heartbeat" in tracker_threads()
    second.finish()
    assert "tracker-heartbeat" in tracker_threads()  # the first run is still open
    first.finish()
    assert tracker_threads() == []
    third = tracker.start_run(project="p")  # and a later run starts its heartbeat again
    assert "tracker-heartbeat" in tracker_threads()
    third.finish()
    assert tracker_threads() == []


def test_the_embedded_api_never_imports_the_wandb_layer() -> None:
    import ast

    import tracker.write.api
    import tracker.write.runfiles
    import tracker.write.start

    # The run API and the modules Run and start_run are made of.
    source = "\n".join(Path(m.__file__).read_text(encoding="utf-8") for m in (
        tracker.write.api, tracker.write.runfiles, tracker.write.start))
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            imported.add(("." * node.level) + (node.module or ""))
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert not {m for m in imported if m.startswith(("tracker.integrations", ".wandb", "..integrations"))}


def test_tracker_table_takes_wandbs_arguments_in_a_fresh_interpreter(tmp_path: Path) -> None:
    proc = run_script("""
        import tracker as wandb
        t = wandb.Table(columns=["a"], data=[[1]])
        print(type(t).__module__, t.columns, t.data)
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["tracker.write.wandb.media", "['a']", "[[1]]"]


def test_a_bad_image_is_refused_where_it_is_made(store: Path) -> None:
    run = wandb.init(project="p")
    with pytest.raises(tracker.SchemaError, match="image"):
        wandb.Image(np.full((4, 4), np.nan))
    wandb.log({"ok": 1.0})
    wandb.finish()
    assert [r.data for r in tracker.open_store(store).run(run.id).records()] == [{"ok": 1.0}]


def test_sync_tensorboard_records_tensorboardx_too(store: Path, tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    run = wandb.init(project="p", sync_tensorboard=True)
    with tbx.SummaryWriter(str(tmp_path / "tbx")) as writer:
        for step in range(3):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_scalars("pair", {"a": 1.0, "b": 2.0}, 3)
        writer.add_histogram("w", np.arange(20.0), 3)
    wandb.finish()
    view = tracker.open_store(store).run(run.id)
    rows = [(r.step, r.data) for r in view.records(schema="metrics")]
    assert rows[:3] == [(0, {"loss": 1.0}), (1, {"loss": 0.5}), (2, {"loss": pytest.approx(1 / 3)})]
    assert sorted((s, k) for s, d in rows[3:] for k in d) == [(3, "pair/a"), (3, "pair/b")]
    [hist] = view.records(schema="histogram")
    assert (hist.step, hist.data["name"], hist.data["count"]) == (3, "w", 20)
