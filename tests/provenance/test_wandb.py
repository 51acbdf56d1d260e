"""The W&B drop-in: ``wandb.Settings(console=...)``, ``WANDB_CONSOLE`` and ``save_code=True`` map onto provenance."""

from __future__ import annotations

from pathlib import Path

import tracker

from .conftest import child_env, run_py, script, texts

WANDB = """
import os, sys
import tracker as wandb
wandb.init(project="p", name="off", settings=wandb.Settings(console="off"), save_code=True)
print("not kept")
wandb.init(project="p", name="redirect", settings=wandb.Settings(console="redirect"))
os.write(1, b"written to descriptor 1\\n")
wandb.init(project="p", name="env")  # WANDB_CONSOLE=wrap
os.write(1, b"not seen by the streams\\n")
print("seen by the streams")
wandb.finish()
try:
    wandb.init(project="p", settings=wandb.Settings(console="loud"))
except wandb.TrackerError as exc:
    print("refused:", exc, file=sys.stderr)
"""


def test_settings_console_and_save_code(tmp_path: Path, store: Path) -> None:
    proc = run_py(script(tmp_path, WANDB), store, env=child_env(store, WANDB_CONSOLE="wrap"))
    assert proc.returncode == 0, proc.stderr
    assert b"refused: Settings(console='loud'): expected one of auto, off, wrap" in proc.stderr
    opened = tracker.Store(store)
    runs = {r.name: r.id for r in opened.runs()}
    assert "console" not in opened.run(runs["off"]).schemas()
    assert texts(opened.run(runs["redirect"])) == ["written to descriptor 1"]
    assert texts(opened.run(runs["env"])) == ["seen by the streams"]
    code = [a for a in opened.run(runs["off"]).artifacts() if a.name == "code"]
    assert len(code) == 1
    out = tmp_path / "code"
    opened.run(runs["off"]).copy_artifact("code", out)
    assert (out / "train.py").read_text() == (tmp_path / "train.py").read_text()
