"""The W&B-style API: a script written for W&B runs after ``import tracker as wandb``."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tracker
from tracker.integrations.wandb.init import UNSUPPORTED, UnsupportedError

from .support import python

WANDB_SCRIPT = """
import argparse
import math
import random

import tracker as wandb

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--epochs", type=int, default=5)
args = parser.parse_args([])

wandb.login()
run = wandb.init(project="mnist", name="baseline", config=args, tags=["baseline", "cnn"],
                 notes="first try", entity="my-team", group="sweep-1", job_type="train")
config = wandb.config
config.update({"batch_size": 64})
random.seed(0)
best_acc = 0.0
for epoch in range(config.epochs):
    loss = 1.0 / (epoch + 1)
    acc = 1.0 - loss / 2
    wandb.log({"loss": loss, "acc": acc})
    if acc > best_acc:
        best_acc = acc
        wandb.run.summary["best_acc"] = best_acc
wandb.log({"val_loss": float("nan")}, step=100)
wandb.summary["final_loss"] = loss
print(run.id, run.name, config.lr, wandb.config["batch_size"], run.summary["loss"])
wandb.finish()

with wandb.init(project="mnist", name="second", config={"lr": 0.1}) as run2:
    for step in range(3):
        run2.log({"loss": 0.5 - step / 10}, step=step * 10)
    run2.config.momentum = 0.9
    run2.summary.best = 0.7
print(run2.id)

run3 = wandb.init(project="mnist", name="crashing")
wandb.log({"loss": 1.0})
wandb.finish(exit_code=3)
print(run3.id)
"""


def test_a_wandb_script_runs_unchanged_and_reads_back(store: Path, cmd: Callable[..., Any]) -> None:
    out = python(store, WANDB_SCRIPT).stdout.split()
    rid, name, lr, bs, last_loss, rid2, rid3 = out
    assert (name, lr, bs, last_loss) == ("baseline", "0.01", "64", "0.2")
    s = tracker.open_store(store)
    info = s.run(rid).info
    assert info.project == "mnist" and info.name == "baseline" and info.status == "finished"
    assert info.config == {"lr": 0.01, "epochs": 5, "batch_size": 64}
    assert info.tags == ["baseline", "cnn"]
    assert (info.group, info.job_type) == ("sweep-1", "train")
    assert info.notes == "first try"
    assert info.summary == {"best_acc": 0.9, "final_loss": 0.2}
    m = s.run(rid).metrics()
    assert list(m["step"]) == [0, 1, 2, 3, 4, 100]
    assert list(m["loss"][:5]) == [1.0, 0.5, 1 / 3, 0.25, 0.2] and math.isnan(m["val_loss"][5])
    assert list(m["acc"][:5]) == [1.0 - (1.0 / (e + 1)) / 2 for e in range(5)]
    info2 = s.run(rid2).info
    assert info2.status == "finished" and info2.config == {"lr": 0.1, "momentum": 0.9}
    assert info2.summary == {"best": 0.7} and list(s.run(rid2).metrics()["step"]) == [0, 10, 20]
    info3 = s.run(rid3).info
    assert info3.status == "failed" and "3" in info3.error["message"]
    # The summary is a column of `tracker runs`, and part of `tracker show`.
    proc = cmd("runs", "--columns", "summary.best_acc", "--format", "json")
    docs = {d["id"]: d for d in json.loads(proc.stdout)}
    assert docs[rid]["summary.best_acc"] == 0.9 and docs[rid2]["summary.best_acc"] is None
    table = cmd("runs", "--columns", "summary.best_acc,config.lr").stdout
    assert "summary.best_acc" in table.splitlines()[0] and "0.9" in table
    show = cmd("show", rid, "--format", "json")
    doc = json.loads(show.stdout)
    assert doc["info"]["summary"] == {"best_acc": 0.9, "final_loss": 0.2} and doc["info"]["notes"] == "first try"
    text = cmd("show", rid).stdout
    assert "first try" in text and "best_acc" in text


def test_init_resume_modes(store: Path) -> None:
    with tracker.init(project="p", id="fixed", config={"a": 1}) as run:
        run.log({"loss": 1.0})
    with pytest.raises(tracker.TrackerError, match="exists.*resume='allow'"):
        tracker.init(id="fixed")
    with pytest.raises(tracker.TrackerError, match="exists"):
        tracker.init(id="fixed", resume="never")
    with pytest.raises(tracker.TrackerError, match="no run nothere"):
        tracker.init(id="nothere", resume="must")
    assert not (store / "runs" / "nothere").exists()
    with tracker.init(id="fixed", resume="must", config={"b": 2}) as run:
        assert run.config.a == 1 and run.config.b == 2
        run.log({"loss": 0.5})
    with tracker.init(id="fresh", resume="allow") as run:
        run.log({"loss": 0.1})
    with tracker.init(id="fixed", resume=True) as run:
        run.log({"loss": 0.25})
    view = tracker.open_store(store).run("fixed")
    assert list(view.metrics()["step"]) == [0, 1, 2] and view.info.config == {"a": 1, "b": 2}
    with pytest.raises(tracker.TrackerError, match="resume='sometimes'"):
        tracker.init(resume="sometimes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        tracker.init(colour="red")
    with pytest.raises(UnsupportedError, match="mode='cloud'"):
        tracker.init(mode="cloud")


def test_finish_status_and_exit_codes(store: Path) -> None:
    run = tracker.init(name="a")
    run.finish(exit_code=0)
    run2 = tracker.init(name="b")
    run2.finish(exit_code=1)
    run3 = tracker.init(name="c")
    run3.finish("crashed")
    run4 = tracker.init(name="d")
    tracker.finish(2)  # W&B's first positional argument is the exit code
    s = tracker.open_store(store)
    assert [s.run(r.id).info.status for r in (run, run2, run3, run4)] == ["finished", "failed", "crashed", "failed"]
    assert tracker.run is None and tracker.current_run() is None


def test_a_second_init_finishes_the_first(store: Path) -> None:
    first = tracker.init(name="first")
    second = tracker.init(name="second")
    assert first.status == "finished" and tracker.run is second
    second.finish()


def test_config_and_summary_access(store: Path) -> None:
    with tracker.init(config={"lr": 0.1, "optim": {"name": "adam"}}) as run:
        assert run.config.lr == run.config["lr"] == 0.1 and run.config.optim["name"] == "adam"
        assert "lr" in run.config and sorted(run.config) == ["lr", "optim"] and len(run.config) == 2
        assert run.config.get("nope", 3) == 3 and run.config.as_dict()["lr"] == 0.1
        with pytest.raises(AttributeError, match="no key 'lrr'.*keys: lr, optim"):
            run.config.lrr  # noqa: B018 - the typo is the test
        with pytest.raises(KeyError):
            run.config["lrr"]  # noqa: B018
        run.config.setdefaults({"lr": 5, "wd": 0.01})
        assert run.config.lr == 0.1 and run.config.wd == 0.01
        with pytest.raises(tracker.SchemaError, match="config.*bad: expected a JSON value"):
            run.config.update({"bad": object()})
        run.log({"loss": 2.0})
        run.log({"loss": 1.5})
        assert run.summary["loss"] == 1.5 and "loss" in run.summary
        run.summary["loss"] = 1.0  # an explicit value wins over the last logged one
        assert run.summary["loss"] == 1.0 and run.summary.get("missing") is None
        with pytest.raises(AttributeError, match="no key 'nope'"):
            run.summary.nope  # noqa: B018
        assert tracker.config.lr == 0.1 and tracker.config["wd"] == 0.01 and tracker.summary["loss"] == 1.0
    info = tracker.open_store(store).run(run.id).info
    assert info.config == {"lr": 0.1, "optim": {"name": "adam"}, "wd": 0.01} and info.summary == {"loss": 1.0}
    with pytest.raises(tracker.TrackerError, match="no active run"):
        tracker.config.lr  # noqa: B018
    # The modules of the same names still answer for their own contents.
    assert tracker.core.config.load_config is tracker.load_config and tracker.core.summary.Summary is tracker.Summary


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_wandb_calls_say_what_to_use(store: Path, name: str) -> None:
    if name not in tracker.__all__:  # tracker.Artifact is tracker's own class (docs/wandb.md)
        with pytest.raises(UnsupportedError) as exc:
            getattr(tracker, name)
        assert f"tracker.{name}()" in str(exc.value) and UNSUPPORTED[name] in str(exc.value)
    with tracker.init() as run:
        if not hasattr(type(run), name):
            with pytest.raises(UnsupportedError, match=f"run.{name}"):
                getattr(run, name)


def test_typos_are_ordinary_attribute_errors(store: Path) -> None:
    with pytest.raises(AttributeError, match="has no attribute 'inti'"):
        tracker.inti  # noqa: B018
    with tracker.init() as run, pytest.raises(AttributeError, match="no attribute 'lgo'"):
        run.lgo  # noqa: B018
