"""tracker.integrations.raytune.TrackerLoggerCallback: each trial of a real Ray Tune run becomes a run."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracker

tune = pytest.importorskip("ray.tune", reason="the raytune extra (ray[tune]) is not installed")


def trainable(config: dict) -> None:
    for step in range(3):
        if config["x"] == 3 and step == 1:
            raise ValueError("diverged")
        tune.report({"loss": config["x"] * (3 - step), "nested": {"acc": step / 3}, "name": "text"})


def test_each_trial_is_a_run(tmp_store: Path, tmp_path: Path) -> None:
    import sys

    import ray
    import ray.cloudpickle

    from tracker.integrations.raytune import TrackerLoggerCallback

    # Ray's workers do not import the test suite: the trainable travels by value. And the local
    # cluster listens on the loopback address only.
    ray.cloudpickle.register_pickle_by_value(sys.modules[trainable.__module__])
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _node_ip_address="127.0.0.1")
    try:
        tuner = tune.Tuner(trainable, param_space={"x": tune.grid_search([1, 2, 3])},
                           run_config=tune.RunConfig(name="quad", storage_path=str(tmp_path / "ray"), verbose=0,
                                                     callbacks=[TrackerLoggerCallback(tags=["mine"])]))
        tuner.fit()
    finally:
        ray.shutdown()
    runs = {r.config["x"]: r for r in tracker.open_store().runs()}
    assert sorted(runs) == [1, 2, 3]
    assert all(r.project == "quad" and r.tags == ["raytune:quad", "mine"] for r in runs.values())
    assert runs[1].status == runs[2].status == "finished"
    assert runs[3].status == "failed" and "diverged" in runs[3].error["message"]
    m = tracker.open_store().run(runs[2].id).metrics()
    assert list(m["step"]) == [1, 2, 3] and list(m["loss"]) == [6, 4, 2] and "nested/acc" in m
    assert "name" not in m and "trial_id" not in m
