"""Agents as users run them: real `tracker agent` processes over one sweep, trials as runs."""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from pathlib import Path

import pytest

import tracker
from tracker.sweeps.config import check_sweep_config
from tracker.sweeps.study import create_sweep, open_sweep

from .conftest import agent_proc, show, tracker_cmd, trials_log, write_yaml


def _create(work: Path, text: str, *args: str) -> str:
    f = write_yaml(work / "sweep.yaml", text)
    r = tracker_cmd("sweep", "create", str(f), *args, cwd=work)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_grid_runs_every_point_exactly_once_across_three_agents(work: Path, tmp_store: Path) -> None:
    sweep_id = _create(work, """
        program: train.py
        method: grid
        metric: {name: loss, goal: minimize}
        parameters:
          a: {values: [1, 2]}
          b: {values: [x, y, z]}
          c: {values: [true, false]}
          d: {value: 5}
        """, "--project", "grid")
    agents = [agent_proc(sweep_id, cwd=work, log=work / f"agent{i}.err") for i in range(3)]
    for p in agents:
        assert p.wait(timeout=240) == 0, (work / "agent0.err").read_text()
    done = trials_log(work)
    points = sorted((d["args"]["a"], d["args"]["b"], d["args"]["c"]) for d in done)
    expected = sorted((str(a), b, str(c)) for a, b, c in itertools.product([1, 2], "xyz", [True, False]))
    assert points == expected  # every point, none twice
    runs = tracker.open_store(tmp_store).runs(project="grid")
    assert len(runs) == 12 and {r.status for r in runs} == {"finished"}
    assert all(r.tags == [f"sweep:{sweep_id}"] for r in runs)
    assert sorted((r.config["a"], r.config["b"], r.config["c"]) for r in runs) == \
        sorted(itertools.product([1, 2], "xyz", [True, False]))
    assert all(r.config["d"] == 5 and r.config["script_default"] == 7 for r in runs)
    doc = show(sweep_id, work)
    assert doc["sweep"]["state"] == "finished" and doc["sweep"]["counts"] == {"finished": 12}
    values = [t["metric"] for t in doc["trials"]]
    assert values == sorted(values)  # best first
    # a fourth agent finds nothing left to do
    r = tracker_cmd("agent", sweep_id, cwd=work)
    assert r.returncode == 0 and "every grid point has been taken" in r.stderr
    assert len(tracker.open_store(tmp_store).runs(project="grid")) == 12


def test_run_cap_holds_across_agents(work: Path, tmp_store: Path) -> None:
    sweep_id = _create(work, """
        program: train.py
        method: random
        metric: {name: loss}
        run_cap: 5
        parameters:
          lr: {distribution: log_uniform_values, min: 0.0001, max: 0.1}
        """)
    agents = [agent_proc(sweep_id, cwd=work) for _ in range(2)]
    for p in agents:
        assert p.wait(timeout=120) == 0
    assert len(trials_log(work)) == 5
    assert len(tracker.open_store(tmp_store).runs()) == 5


def test_a_failing_trial_is_failed_with_its_exit_code_and_the_agent_goes_on(work: Path, tmp_store: Path) -> None:
    (work / "flaky.py").write_text(
        "import sys, tracker\n"
        "run = tracker.start_run()  # attaches to the trial's run, as init() does\n"
        "tracker.log({'loss': run.config['x']})\n"
        "if run.config['x'] == 2:\n"
        "    sys.exit(3)\n")
    sweep_id = _create(work, """
        program: flaky.py
        method: grid
        metric: {name: loss}
        parameters:
          x: {values: [1, 2, 3]}
        """)
    r = tracker_cmd("agent", sweep_id, cwd=work)
    assert r.returncode == 0, r.stderr
    assert "exited with code 3" in r.stderr
    store = tracker.open_store(tmp_store)
    by_x = {info.config["x"]: info for info in store.runs()}
    assert by_x[2].status == "failed" and "exit code 3" in by_x[2].error["message"]
    assert by_x[1].status == by_x[3].status == "finished"
    doc = show(sweep_id, work)
    failed = [t for t in doc["trials"] if t["state"] == "failed"]
    assert [(t["params"]["x"], t["exit_code"]) for t in failed] == [(2, 3)]
    assert [t["params"]["x"] for t in doc["trials"]] == [1, 3, 2]  # best first, failed last
    table = tracker_cmd("sweep", "show", sweep_id, cwd=work).stdout
    assert "failed (exit 3)" in table


def test_kill_9_of_an_agent_fails_its_trial_and_a_fresh_agent_finishes(work: Path, tmp_store: Path) -> None:
    (work / "slow.py").write_text(
        "import os, sys, time, tracker\n"
        "run = tracker.init()\n"
        "tracker.log({'loss': float(run.config['x'])})\n"
        "if os.path.exists('slow-first'):\n"
        "    os.remove('slow-first')\n"
        "    open(f'started-{run.id}', 'w').close()\n"
        "    time.sleep(60)\n")
    (work / "slow-first").write_text("")
    sweep_id = _create(work, """
        program: slow.py
        method: grid
        metric: {name: loss}
        parameters:
          x: {values: [1, 2, 3, 4]}
        """)
    agent = agent_proc(sweep_id, cwd=work)
    deadline = time.time() + 60
    while not list(work.glob("started-*")):
        assert time.time() < deadline and agent.poll() is None
        time.sleep(0.05)
    killed_run = list(work.glob("started-*"))[0].name[len("started-"):]
    os.kill(agent.pid, signal.SIGKILL)
    agent.wait()
    # the trial's own process goes with its agent (it would otherwise sleep for a minute)
    deadline = time.time() + 10
    while tracker.open_store(tmp_store).run(killed_run).info.status == "running":
        assert time.time() < deadline, "the trial's process outlived its agent"
        time.sleep(0.1)
    r = tracker_cmd("agent", sweep_id, cwd=work)
    assert r.returncode == 0, r.stderr
    assert "their agent is gone; marked failed" in r.stderr
    doc = show(sweep_id, work)
    states = {t["run_id"]: t["state"] for t in doc["trials"]}
    assert states.pop(killed_run) == "failed"
    assert sorted(states.values()) == ["finished"] * 3 and doc["sweep"]["state"] == "finished"
    assert tracker.open_store(tmp_store).run(killed_run).info.status == "crashed"


def test_hyperband_stops_the_bad_trials_and_their_runs_end_stopped(work: Path, tmp_store: Path) -> None:
    (work / "curve.py").write_text(
        "import time, tracker\n"
        "run = tracker.init()\n"
        "for step in range(9):\n"
        "    tracker.log({'loss': float(run.config['x']) + 1.0 / (step + 1)})\n"
        "    time.sleep(0.12)\n")
    config = check_sweep_config({
        "program": "curve.py", "method": "grid", "metric": {"name": "loss", "goal": "minimize"},
        "parameters": {"x": {"values": [0, 5, 10, 20, 40, 80]}},
        "early_terminate": {"type": "hyperband", "min_iter": 1, "max_iter": 9, "eta": 3}})
    sweep_id = create_sweep(config, tmp_store.absolute(), seed=0, sweep_id="hyperband-0")
    r = tracker_cmd("agent", sweep_id, cwd=work)
    assert r.returncode == 0, r.stderr
    store = tracker.open_store(tmp_store)
    runs = {info.config["x"]: info for info in store.runs()}
    assert len(runs) == 6
    stopped = {x for x, info in runs.items() if info.status == "stopped"}
    assert stopped, "hyperband stopped no trial"
    assert 0 not in stopped and runs[0].status == "finished"  # the best is never stopped
    for x in stopped:
        assert store.run(runs[x].id).metrics()["loss"].size < 9  # its process ended early
    doc = show(sweep_id, work)
    assert {t["params"]["x"] for t in doc["trials"] if t["state"] == "stopped"} == stopped


def test_stop_ends_the_sweep_for_new_agents(work: Path, tmp_store: Path) -> None:
    sweep_id = _create(work, """
        program: train.py
        method: random
        parameters:
          x: {min: 0.0, max: 1.0}
        """)
    assert tracker_cmd("agent", sweep_id, "--count", "2", cwd=work).returncode == 0
    r = tracker_cmd("sweep", "stop", sweep_id, cwd=work)
    assert r.returncode == 0
    r = tracker_cmd("agent", sweep_id, cwd=work)
    assert r.returncode == 0 and "the sweep was stopped" in r.stderr
    assert len(trials_log(work)) == 2
    listing = json.loads(tracker_cmd("sweep", "list", "--format", "json", cwd=work).stdout)
    assert [s["id"] for s in listing["sweeps"]] == [sweep_id]
    assert show(sweep_id, work)["sweep"]["state"] == "stopped"


def test_function_agent_in_process_attaches_init_and_config(tmp_store: Path) -> None:
    import tracker as wandb

    seen = []

    def train() -> None:
        with wandb.init(config={"epochs": 2}) as run:
            seen.append((run.id, wandb.config["lr"], wandb.config["epochs"]))
            for e in range(wandb.config["epochs"]):
                wandb.log({"acc": wandb.config["lr"] * (e + 1)})

    sweep_id = wandb.sweep({"method": "grid", "metric": {"name": "acc", "goal": "maximize"},
                            "parameters": {"lr": {"values": [0.1, 0.3, 0.2]}}}, project="inproc")
    assert wandb.agent(sweep_id, function=train, count=2) == 2
    assert wandb.agent(sweep_id, function=train) == 1
    assert wandb.current_run() is None
    runs = {r.id: r for r in wandb.open_store().runs(project="inproc")}
    assert {run_id for run_id, _, _ in seen} == set(runs)
    assert all(runs[i].config == {"lr": lr, "epochs": 2} and runs[i].status == "finished" for i, lr, _ in seen)
    sweep = open_sweep(tmp_store.absolute(), sweep_id)
    assert sweep.trials()[0]["params"] == {"lr": 0.3} and sweep.trials()[0]["metric"] == pytest.approx(0.6)


def test_function_agent_hyperband_stops_the_run_and_further_logs_raise_nothing(tmp_store: Path) -> None:
    calls: list[int] = []

    def train() -> None:
        run = tracker.init()
        for step in range(9):
            tracker.log({"loss": float(run.config["x"]) + 1.0 / (step + 1)})  # never raises
        calls.append(run.config["x"])

    config = check_sweep_config({"method": "grid", "metric": {"name": "loss"},
                                 "parameters": {"x": {"values": [0, 10, 20, 30, 40, 50]}},
                                 "early_terminate": {"type": "hyperband", "min_iter": 1, "max_iter": 9}})
    sweep_id = create_sweep(config, tmp_store.absolute(), seed=0, sweep_id="hyperband-f")
    tracker.agent(sweep_id, function=train)
    assert sorted(calls) == [0, 10, 20, 30, 40, 50]  # every function returned normally
    runs = {r.config["x"]: r for r in tracker.open_store().runs()}
    stopped = [x for x, r in runs.items() if r.status == "stopped"]
    assert stopped and 0 not in stopped
    assert all(tracker.open_store().run(runs[x].id).metrics()["loss"].size < 9 for x in stopped)


def test_postgresql_storage_grid_once_across_two_agents_and_no_password_printed(
        work: Path, tmp_store: Path, sweep_pg_url: str) -> None:
    from ..query.pg import PASSWORD

    f = write_yaml(work / "pg.yaml", """
        program: train.py
        method: grid
        metric: {name: loss}
        parameters:
          a: {values: [1, 2]}
          b: {values: [x, y]}
        """)
    r = tracker_cmd("sweep", "create", str(f), "--storage", sweep_pg_url, cwd=work)
    assert r.returncode == 0, r.stderr
    assert PASSWORD not in r.stderr + r.stdout and "***" in r.stderr
    sweep_id = r.stdout.strip()
    # the second agent finds the sweep through --storage alone (as on a machine without the store's sweep.json)
    other_store = work / "elsewhere"
    sweep_json = (tmp_store / "sweeps" / sweep_id / "sweep.json").read_text()
    assert PASSWORD not in sweep_json and "postgresql://" in sweep_json  # the password stays out of the store
    agents = [agent_proc(sweep_id, cwd=work, env={"PGPASSWORD": PASSWORD}),  # as libpq users give it
              agent_proc(sweep_id, "--storage", sweep_pg_url, cwd=work, env={"TRACKER_STORE": str(other_store)})]
    for p in agents:
        assert p.wait(timeout=180) == 0
    done = sorted((d["args"]["a"], d["args"]["b"]) for d in trials_log(work))
    assert done == sorted((str(a), b) for a in (1, 2) for b in "xy")
    r = tracker_cmd("sweep", "show", sweep_id, "--format", "json", cwd=work, env={"PGPASSWORD": PASSWORD})
    doc = json.loads(r.stdout)
    assert doc["sweep"]["state"] == "finished" and PASSWORD not in r.stdout + r.stderr


def test_the_objective_is_the_define_metric_summary_when_the_script_sets_one(tmp_store: Path) -> None:
    def train() -> None:
        run = tracker.init()
        tracker.define_metric("acc", summary=run.config["summary"], goal="maximize")
        for v in (0.2, 0.9, 0.5):  # last 0.5, best 0.9
            tracker.log({"acc": v})

    sweep_id = tracker.sweep({"method": "grid", "metric": {"name": "acc", "goal": "maximize"},
                              "parameters": {"summary": {"values": ["max", "last", "best"]}}})
    tracker.agent(sweep_id, function=train)
    by = {t["params"]["summary"]: t["metric"] for t in open_sweep(tmp_store.absolute(), sweep_id).trials()}
    assert by == {"max": 0.9, "best": 0.9, "last": 0.5}
