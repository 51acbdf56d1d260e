"""`tracker sweep show` prints parameters as `tracker runs` prints numbers; `--format json` keeps them whole."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import tracker
from tracker.cli import make_cli
from tracker.cli.numbers import number


def test_sweep_show_prints_parameters_as_runs_prints_numbers(tmp_store: Path) -> None:
    def train() -> None:
        with tracker.init() as run:
            tracker.log({"loss": run.config["lr"] * 1000 + run.config["width"]})

    sweep_id = tracker.sweep({"method": "random", "metric": {"name": "loss"},
                              "parameters": {"lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-2},
                                             "width": {"values": [12345, 64]}, "opt": {"values": ["adam"]}}},
                             project="nums")
    assert tracker.agent(sweep_id, function=train, count=3) == 3
    cli = make_cli()
    doc = json.loads(CliRunner().invoke(cli, ["sweep", "show", sweep_id, "--format", "json"],
                                        catch_exceptions=False).stdout)
    trials = doc["trials"]
    # JSON: the values as sampled, to the last digit
    runs = {r.id: r.config for r in tracker.open_store().runs(project="nums")}
    assert all(t["params"]["lr"] == runs[t["run_id"]]["lr"] for t in trials)
    assert any(len(repr(t["params"]["lr"])) > 10 for t in trials)  # e.g. 0.003953909521627359
    table = CliRunner().invoke(cli, ["sweep", "show", sweep_id], catch_exceptions=False).stdout
    for t in trials:
        p = t["params"]
        line = next(ln for ln in table.splitlines() if t["run_id"] and t["run_id"] in ln)
        # 4 significant digits (0.003954), whole numbers grouped (12 345), as `tracker runs` prints them
        assert line.rstrip().endswith(f"lr={number(p['lr'])} width={number(p['width'])} opt=adam"), line
        assert repr(p["lr"]) not in line or repr(p["lr"]) == number(p["lr"])
    runs_table = CliRunner().invoke(cli, ["runs", "--project", "nums", "--columns", "config.lr"],
                                    catch_exceptions=False).stdout
    assert all(number(t["params"]["lr"]) in runs_table for t in trials)
    best = doc["sweep"]["best"]
    assert f"best loss {number(best)} (minimize)" in table.splitlines()[0]
