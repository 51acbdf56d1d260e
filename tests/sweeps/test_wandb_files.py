"""Public W&B sweep files run unchanged; only their programs are replaced by a tiny script.

The files restate sweep files published in the wandb/examples repository
(their paths there are named on each), keys and values as published.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import tracker

from .conftest import tracker_cmd, trials_log, write_yaml

FILES = {
    # examples/pytorch/pytorch-cnn-fashion/sweep-grid-hyperband.yaml
    "grid-hyperband": ("train.py", "loss", 2, """
        program: train.py
        method: grid
        metric:
          goal: minimize
          name: loss
        parameters:
          dropout:
            values: [0.1, 0.2, 0.4, 0.5, 0.7]
          channels_one:
            values: [10, 12, 14, 16, 18, 20]
          channels_two:
            values: [24, 28, 32, 36, 40, 44]
          learning_rate:
            values: [0.001, 0.005, 0.0005]
          epochs:
            value: 27
        early_terminate:
          type: hyperband
          s: 2
          eta: 3
          max_iter: 27
        """),
    # keras/keras-cnn-fashion/sweep-bayes-hyperband.yaml
    "bayes-hyperband": ("train.py", "val_loss", 3, """
        program: train.py
        method: bayes
        metric:
          goal: minimize
          name: val_loss
        parameters:
          dropout:
            values: [0.15, 0.2, 0.25, 0.3, 0.4]
          hidden_layer_size:
            values: [96, 128, 148]
          layer_1_size:
            values: [10, 12, 14, 16, 18, 20]
          layer_2_size:
            values: [24, 28, 32, 36, 40, 44]
          learn_rate:
            values: [0.001, 0.01, 0.003]
          decay:
            values: [1e-5, 1e-6, 1e-7]
          momentum:
            values: [0.8, 0.9, 0.95]
          epochs:
            value: 27
        early_terminate:
          type: hyperband
          s: 2
          eta: 3
          max_iter: 27
        """),
    # examples/wandb-sweeps/sweeps-boolean-parameters/sweep-bool.yaml
    "bool-grid": ("train-bool.py", "loss", None, """
        program: train-bool.py
        method: grid
        # Parameters to search over
        parameters:
          optimizer:
            values: ["sgd", "adam"]
          flag1:
            values:
            - false
            - true
          flag2:
            values:
            - false
            - true
        """),
    # examples/minimal-hydra-example/wandb_sweep.yaml
    "hydra-bayes": ("main.py", "val_loss", 2, """
        program: main.py
        metric:
          name: val_loss
          goal: minimize

        method: bayes
        parameters:
          optimizer.config.learning_rate:
            min: !!float 1e-5
            max: 0.1
          experiment:
            values: [expt001, expt002]
          optimizer:
            values: [sgd, adagrad, adam]

        command:
        - ${env}
        - ${interpreter}
        - ${program}
        - ${args_no_hyphens}
        """),
    # examples/llama-cpp/sweep.yaml
    "llama-random": ("evaluate.py", "diff_score", 2, """
        program: evaluate.py
        method: random
        metric:
          goal: maximize
          name: diff_score
        parameters:
          model:
            distribution: categorical
            values:
              - codellama-13b-instruct.Q4_K_M.gguf
              - codellama-7b.Q5_K_S.gguf
              - mistral-7b-instruct-v0.1.Q5_K_M.gguf
              - gpt-3.5-turbo
          system_prompt:
            distribution: categorical
            values:
              - You're a Docker expert. Translate the following sentence to a simple docker command.
              - You'll be asked a question about Docker.  Convert this question to a succinct docker command.
          temperature:
            distribution: uniform
            max: 0.6
            min: 0
        """),
}


@pytest.mark.parametrize("name", list(FILES))
def test_public_sweep_file_runs_unchanged(work: Path, tmp_store: Path, name: str) -> None:
    program, metric, count, text = FILES[name]
    if program != "train.py":
        shutil.copy(work / "train.py", work / program)
    f = write_yaml(work / f"{name}.yaml", text)
    r = tracker_cmd("sweep", "create", str(f), "--project", name, cwd=work)
    assert r.returncode == 0, r.stderr
    sweep_id = r.stdout.strip()
    args = ["--count", str(count)] if count else []
    # Two values per trial stay below Hyperband's first rung (min_iter 3 for these files), so no trial is
    # stopped: whether the agent's poll would catch a trial between its third value and its exit is a
    # matter of timing. Stopping is tested in test_agent.py (test_hyperband_stops_the_bad_trials...).
    steps = {"STEPS": "2"} if "early_terminate" in text else {}
    r = tracker_cmd("agent", sweep_id, *args, cwd=work, env={"METRIC": metric, **steps})
    assert r.returncode == 0, r.stderr
    ran = trials_log(work)
    assert len(ran) == (count or 8)
    runs = {info.id: info for info in tracker.open_store(tmp_store).runs(project=name)}
    assert {t["run"] for t in ran} == set(runs)
    for info in runs.values():
        assert info.status == "finished" and f"sweep:{sweep_id}" in info.tags
        # the script checked that its run's config holds every argument it was given
    if name == "bool-grid":
        assert sorted((t["args"]["optimizer"], t["args"]["flag1"], t["args"]["flag2"]) for t in ran) == sorted(
            (o, a, b) for o in ("sgd", "adam") for a in ("False", "True") for b in ("False", "True"))
    if name == "hydra-bayes":
        assert all(0.00001 <= float(t["args"]["optimizer.config.learning_rate"]) <= 0.1 for t in ran)
    if metric is not None and name != "bool-grid":
        r = tracker_cmd("sweep", "show", sweep_id, cwd=work)
        assert r.returncode == 0 and metric in r.stdout.splitlines()[1]
