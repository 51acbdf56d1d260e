"""A W&B script pair after ``import tracker as wandb``: one logs artifacts (``wandb.Artifact``, ``add_file``,
``add_dir``, ``new_file``, ``add_reference``), the next uses the model by alias and downloads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tracker

PRODUCE = r"""
import json, os, sys
import tracker as wandb

run = wandb.init(project="mnist", name="train", config={"lr": 0.1})
os.makedirs("data/images", exist_ok=True)
open("data/labels.csv", "w").write("id,label\n1,7\n")
open("data/images/1.png", "wb").write(b"\x89PNG fake")
ds = wandb.Artifact("mnist", type="dataset", description="MNIST, small", metadata={"rows": 1})
ds.add_dir("data")
run.log_artifact(ds)
used = run.use_artifact(ds.name + ":latest")        # as W&B scripts do right after logging
open("model.pt", "wb").write(b"weights 1")
art = wandb.Artifact("mnist-cnn", type="model")
art.add_file("model.pt")
with art.new_file("notes.txt") as f:
    f.write("lr 0.1")
run.log_artifact(art, aliases=["best", "prod"])
art.wait()
open("model.pt", "wb").write(b"weights 2")
second = wandb.Artifact("mnist-cnn", type="model")
second.add_file("model.pt")
wandb.log_artifact(second, aliases=["best"])            # moves best; prod stays on v0
ref = wandb.Artifact("raw", type="dataset")
ref.add_reference("file://" + os.path.abspath("data/labels.csv"))
run.log_artifact(ref)
wandb.log_model("model.pt", name="cnn-model", aliases=["staging"])
print(json.dumps({"run": run.id, "v_first": art.version, "aliases_first": art.aliases,
                  "v_second": second.version, "aliases_second": second.aliases, "ds": used.version,
                  "ref": ref.reference}))
wandb.finish()
"""

CONSUME = r"""
import json, os, sys
import tracker as wandb

run = wandb.init(project="mnist", name="eval")
model = run.use_artifact("my-team/mnist/mnist-cnn:prod", type="model")
root = model.download()
single = model.get_path("model.pt").download()
notes = open(os.path.join(root, "notes.txt")).read()
api = wandb.Api()
best = api.artifact("mnist/mnist-cnn:best")
with best.open("model.pt") as f:
    best_bytes = f.read().decode()
ds = run.use_artifact("mnist")
path = wandb.use_model("cnn-model:staging")
print(json.dumps({"run": run.id, "version": model.version, "aliases": model.aliases, "root": str(root),
                  "files": sorted(os.listdir(root)), "single": str(single), "notes": notes,
                  "best": [best.version, best_bytes], "ds": [ds.version, ds.description, ds.metadata,
                  [f.path for f in ds.files()]], "model_path": str(path),
                  "exists": api.artifact_exists("mnist/nope"), "producer": model.producer}))
wandb.finish()
"""


def _script(text: str, cwd: Path, store: Path) -> dict:
    env = {**os.environ, "WANDB_DIR": str(store), "TRACKER_STORE": str(store)}
    for k in ("TRACKER_CONFIG", "TRACKER_RUN_ID", "WANDB_MODE", "WANDB_PROJECT", "WANDB_RUN_ID"):
        env.pop(k, None)
    res = subprocess.run([sys.executable, "-c", text], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_log_then_use_by_alias(tmp_path: Path) -> None:
    store = tmp_path / "store"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    made = _script(PRODUCE, a, store)
    assert made["v_first"] == "v0" and made["aliases_first"] == ["prod"]  # best moved on to v1
    assert made["v_second"] == "v1" and made["aliases_second"] == ["latest", "best"]
    assert made["ds"] == "v0" and made["ref"] is True
    used = _script(CONSUME, b, store)
    assert used["version"] == "v0" and used["aliases"] == ["prod"] and used["producer"] == made["run"]
    assert Path(used["root"]) == b / "artifacts" / "mnist-cnn:v0"
    assert used["files"] == ["model.pt", "notes.txt"] and used["notes"] == "lr 0.1"
    assert Path(used["single"]).read_bytes() == b"weights 1"
    assert used["best"] == ["v1", "weights 2"]
    assert used["ds"] == ["v0", "MNIST, small", {"rows": 1}, ["images/1.png", "labels.csv"]]
    assert Path(used["model_path"]).read_bytes() == b"weights 2" and used["exists"] is False
    s = tracker.open_store(store)
    assert s.artifact("mnist-cnn:v0").consumers == [used["run"]]
    assert set(s.artifact("mnist:v0").consumers) == {made["run"], used["run"]}
    raw = s.artifact("raw")
    assert raw.reference and raw.path == a / "data" / "labels.csv"


def test_what_is_not_offered_names_the_limitation(tmp_path: Path) -> None:
    art = tracker.Artifact("x", type="dataset")
    with pytest.raises(tracker.UnsupportedError, match=r"s3:// is not read by tracker.*add_file"):
        art.add_reference("s3://bucket/key")
    with pytest.raises(tracker.UnsupportedError, match="add_file"):
        art.add(object(), "obj")
    with pytest.raises(tracker.TrackerError, match="stays inside it"):
        (tmp_path / "f").write_text("x")
        art.add_file(tmp_path / "f", name="../f")
    with pytest.raises(tracker.TrackerError, match="not logged yet"):
        art.download()
    with pytest.raises(tracker.TrackerError, match="must not be a path"):
        tracker.Artifact("../x", type="model")
    assert not hasattr(tracker, "link_artifact")
