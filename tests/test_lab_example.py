"""examples/lab.py end to end: a dataset, two groups of seeds, a model promoted to prod, its evaluation.

The example runs as a newcomer runs it (capture on: the suite's defaults are dropped from its
environment), then the store is read back: the lineage from the dataset to the evaluation, the groups,
the console of the evaluation, and the report file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tracker
from tracker.read.console import console_lines

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "lab.py"


def test_the_lab_example_leaves_lineage_groups_console_and_a_report(tmp_path: Path) -> None:
    store = tmp_path / "store"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env["TRACKER_STORE"] = str(store)
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--epochs", "25"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    s = tracker.open_store(store)
    runs = {r.name: r for r in s.runs(project="rings-lab")}
    assert len(runs) == 8 and {r.status for r in runs.values()} == {"finished"}
    assert sorted(r.group for r in runs.values() if r.group) == ["hidden-16"] * 3 + ["hidden-4"] * 3

    prod = s.artifact("rings-mlp:prod")
    evaluation = runs["evaluate prod"]
    assert prod.consumers == [evaluation.id]
    assert s.run(prod.producer).info.group in {"hidden-4", "hidden-16"}
    assert s.artifact("rings:v0").producer == runs["prepare rings"].id
    assert len(s.artifact("rings:v0").consumers) == 6
    assert len({s.artifact(f"rings-mlp:v{i}").sha256 for i in range(6)}) == 6

    printed = [ln.text for ln in console_lines(s.run(evaluation.id))]
    assert any(t.startswith(f"holdout accuracy of rings-mlp:{prod.version}") for t in printed)
    assert "hidden-16  3" in proc.stdout and "used by" in proc.stdout and "~ hidden = " in proc.stdout
    # The evaluation's media, for the Media panel: a clip, and a video when PyAV or Pillow can encode one.
    view = s.run(evaluation.id)
    (clip,) = [r.data for r in view.records("audio")]
    assert clip["name"] == "ray" and clip["duration_s"] == 1.5 and clip["sample_rate"] == 8000
    videos = [r.data for r in view.records("video")]
    import importlib.util

    if importlib.util.find_spec("av") is not None or importlib.util.find_spec("PIL") is not None:
        assert [(v["name"], v["frames"]) for v in videos] == [("boundary", 12)]
    report = (tmp_path / "rings-report.html").read_text()
    assert "data:audio/wav;base64," in report  # the clip travels inside the report
    assert "Rings: hidden size, three seeds each" in report and "hidden-16" in report
