"""Fixtures of the groups and reports tests: a store of two ablations of three seeds, and one run alone."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracker
from tests.ui.support import XSS


def make_ablations(store: Path) -> dict[str, list[str]]:
    """Ablations ``a`` (lr 0.1) and ``b`` (lr 0.01) of three seeds each (b's third stops at step 20), and a run
    without a group named like an HTML attack; returns {group: [run ids]}."""
    ids: dict[str, list[str]] = {"a": [], "b": [], "none": []}
    for group, lr in (("a", 0.1), ("b", 0.01)):
        for seed in range(3):
            # The first run records its environment (command and folder: what a report may show).
            with tracker.start_run(project="abl", name=f"{group}-s{seed}", store=store, group=group,
                                   config={"lr": lr, "seed": seed},
                                   environment=(group, seed) == ("a", 0) or None) as run:
                last = 21 if (group, seed) == ("b", 2) else 40
                for s in range(last):
                    run.log({"loss": 1 / (s + 1) + (lr * 10) + seed / 10, "acc": s / 40 + seed / 100}, step=s)
                    if (group, seed) == ("a", 0) and s % 10 == 0:
                        run.log_histogram("weights", [float(s + k % 7) for k in range(50)], step=s)  # a panel
            ids[group].append(run.id)
    with tracker.start_run(project="abl", name=XSS, store=store, config={"lr": 0.5, "seed": 7},
                           tags=["<script>alert(2)</script>"]) as run:
        for s in range(10):
            run.log({"loss": 2.0 - s / 10}, step=s)
    ids["none"].append(run.id)
    return ids


@pytest.fixture(scope="session")
def ablations(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    store = tmp_path_factory.mktemp("groups") / "store"
    return store, make_ablations(store)
