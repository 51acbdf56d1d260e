"""`tracker report --sweep ID` names the sweep's best value, the trial that reached it and its parameters."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

import tracker
from tracker.cli import make_cli


def report_doc(text: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def test_a_sweep_report_names_the_best_value_its_trial_and_parameters(tmp_store: Path, tmp_path: Path) -> None:
    def train() -> None:
        with tracker.init() as run:
            for step in range(3):
                tracker.log({"acc": run.config["lr"] * 10 + run.config["width"] / 100 - step / 10})

    sweep_id = tracker.sweep({"method": "grid", "metric": {"name": "acc", "goal": "maximize"},
                              "parameters": {"lr": {"values": [0.01, 0.03, 0.02]}, "width": {"values": [8, 64]}}},
                             project="rep")
    assert tracker.agent(sweep_id, function=train, count=4) == 4
    out = tmp_path / "sweep.html"
    res = CliRunner().invoke(make_cli(), ["report", "--sweep", sweep_id, "-o", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = report_doc(out.read_text())
    # The best by the trials themselves: each trial's run logged acc; the sweep maximizes its last value.
    runs = {i.id: i for i in tracker.open_store().runs(project="rep")}
    assert len(runs) == 4 and {r["id"] for r in doc["runs"]} == set(runs)
    best_id = max(runs, key=lambda rid: runs[rid].last_metrics["acc"])
    shown = json.loads(CliRunner().invoke(make_cli(), ["sweep", "show", sweep_id, "--format", "json"],
                                          catch_exceptions=False).stdout)
    trial = next(t for t in shown["trials"] if t["run_id"] == best_id)
    s = doc["sweep"]
    assert (s["id"], s["metric"], s["goal"], s["trials"]) == (sweep_id, "acc", "maximize", 4)
    assert s["best"] == {"value": runs[best_id].last_metrics["acc"], "trial": trial["number"], "run_id": best_id,
                         "params": {"lr": runs[best_id].config["lr"], "width": runs[best_id].config["width"]}}
    assert s["best"]["value"] == shown["sweep"]["best"]
    # A sweep whose study is gone: the report of its runs is still written, and says why it names no best.
    shutil.rmtree(tmp_store / "sweeps" / sweep_id)
    res = CliRunner().invoke(make_cli(), ["report", "--sweep", sweep_id, "-o", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    gone = report_doc(out.read_text())["sweep"]
    assert gone["id"] == sweep_id and sweep_id in gone["error"] and "best" not in gone
