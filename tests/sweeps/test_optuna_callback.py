"""tracker.integrations.optuna.TrackerCallback: each trial of a user's own Optuna study becomes a run."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

import tracker
from tracker.integrations.optuna import TrackerCallback


def test_each_trial_is_a_run_with_params_values_and_state(tmp_store: Path) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cb = TrackerCallback(metric_name="loss", tags=["mine"])

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", -3, 3)
        kind = trial.suggest_categorical("kind", ["a", "b"])
        if trial.number == 3:
            raise ValueError("diverged")
        for step in range(4):
            trial.report(x * x + step, step)
            if trial.number == 4:
                raise optuna.TrialPruned()
        return x * x + (kind == "b")

    study = optuna.create_study(study_name="quad", sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(objective, n_trials=6, callbacks=[cb], catch=(ValueError,))
    runs = {r.name: r for r in tracker.open_store().runs()}
    assert sorted(runs) == [f"trial-{i}" for i in range(6)]
    assert all(r.project == "quad" and r.tags == ["optuna:quad", "mine"] for r in runs.values())
    t0 = study.trials[0]
    r0 = runs["trial-0"]
    assert r0.status == "finished" and r0.config == t0.params and r0.summary["loss"] == pytest.approx(t0.value)
    m = tracker.open_store().run(r0.id).metrics()
    assert list(m["step"]) == [0, 1, 2, 3, 4] and m["loss"][-1] == pytest.approx(t0.value)
    assert runs["trial-3"].status == "failed" and "Optuna's log" in runs["trial-3"].error["message"]
    assert runs["trial-4"].status == "stopped"


def test_track_in_tracker_logs_live_to_the_trials_run(tmp_store: Path) -> None:
    cb = TrackerCallback(project="live")

    @cb.track_in_tracker()
    def objective(trial: optuna.Trial) -> float:
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        if trial.number == 2:
            raise ValueError("diverged")
        for epoch in range(3):
            tracker.log({"acc": epoch * lr})
        return lr

    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=3, callbacks=[cb], catch=(ValueError,))
    runs = tracker.open_store().runs(project="live")
    failed = [r for r in runs if r.status == "failed"]
    assert len(failed) == 1 and failed[0].name == "trial-2" and failed[0].error["type"] == "ValueError"
    assert "diverged" in failed[0].error["message"]
    runs = [r for r in runs if r.status != "failed"]
    assert len(runs) == 2 and all(r.status == "finished" for r in runs)
    for r in runs:
        m = tracker.open_store().run(r.id).metrics()
        assert len(m["acc"]) == 4 and r.config["lr"] == pytest.approx(r.summary["value"])
