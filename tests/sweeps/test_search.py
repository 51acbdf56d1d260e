"""Bayes (TPE) finds a known function's minimum clearly better than random search, given the same budget."""

from __future__ import annotations

import statistics
from pathlib import Path

import tracker
from tracker.sweeps.study import open_sweep

BUDGET = 30


def _best(tmp_store: Path, method: str, seed: int) -> float:
    def train() -> None:
        run = tracker.init()
        x, y = run.config["x"], run.config["y"]
        tracker.log({"f": (x - 1.3) ** 2 + (y + 0.7) ** 2})

    sweep_id = tracker.sweep({"method": method, "metric": {"name": "f", "goal": "minimize"},
                              "parameters": {"x": {"min": -5.0, "max": 5.0}, "y": {"min": -5.0, "max": 5.0}}},
                             project=method, seed=seed)
    assert tracker.agent(sweep_id, function=train, count=BUDGET) == BUDGET
    return open_sweep(tmp_store.absolute(), sweep_id).info()["best"]


def test_bayes_beats_random_on_a_quadratic(tmp_store: Path) -> None:
    bayes = [_best(tmp_store, "bayes", seed) for seed in (1, 2, 3)]
    random = [_best(tmp_store, "random", seed) for seed in (1, 2, 3)]
    # Over 100 square units, 30 random points leave the minimum about 0.7 away (squared); TPE gets
    # well under a tenth of that. The margin asked is a factor of three on the medians.
    assert statistics.median(bayes) * 3 < statistics.median(random), (bayes, random)
    assert min(bayes) < 0.2
