"""The sweep file: every method and distribution samples within its bounds; bad files are one line naming the key."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracker
from tracker.sweeps.config import SweepConfigError, build_command, check_sweep_config
from tracker.sweeps.study import open_sweep

from .conftest import tracker_cmd, write_yaml

BOUNDS = {
    "u": ({"distribution": "uniform", "min": -2.5, "max": 4.0}, lambda v: -2.5 <= v <= 4.0),
    "i": ({"distribution": "int_uniform", "min": 3, "max": 9}, lambda v: type(v) is int and 3 <= v <= 9),
    "imp": ({"min": 1, "max": 4}, lambda v: type(v) is int and 1 <= v <= 4),
    "fmp": ({"min": 0.0, "max": 0.5}, lambda v: 0.0 <= v <= 0.5),
    "qu": ({"distribution": "q_uniform", "min": 0, "max": 10, "q": 2},
           lambda v: 0 <= v <= 10 and v % 2 == 0),
    "lu": ({"distribution": "log_uniform", "min": -4, "max": 0}, lambda v: math.exp(-4) <= v * (1 + 1e-12)
           and v <= 1.0 + 1e-12),
    "luv": ({"distribution": "log_uniform_values", "min": 1e-5, "max": 1e-1}, lambda v: 1e-5 <= v <= 1e-1),
    "qluv": ({"distribution": "q_log_uniform_values", "min": 8, "max": 512, "q": 8},
             lambda v: 8 <= v <= 512 and v % 8 == 0),
    "qlu": ({"distribution": "q_log_uniform", "min": 0, "max": 3, "q": 1}, lambda v: 1 <= v <= 20),
    "ilu": ({"distribution": "inv_log_uniform", "min": 0, "max": 3}, lambda v: math.exp(-3) - 1e-12 <= v <= 1.0),
    "iluv": ({"distribution": "inv_log_uniform_values", "min": 0.01, "max": 1.0}, lambda v: 0.01 <= v <= 1.0),
    "n": ({"distribution": "normal", "mu": 5.0, "sigma": 0.1}, lambda v: 4.0 < v < 6.0),
    "qn": ({"distribution": "q_normal", "mu": 0, "sigma": 10, "q": 5}, lambda v: v % 5 == 0),
    "ln": ({"distribution": "log_normal", "mu": 0, "sigma": 0.5}, lambda v: v > 0),
    "qln": ({"distribution": "q_log_normal", "mu": 3, "sigma": 0.2, "q": 1}, lambda v: v >= 0 and v == int(v)),
    "cat": ({"values": ["a", "b", "c"]}, lambda v: v in ("a", "b", "c")),
    "catp": ({"distribution": "categorical", "values": [1, 2], "probabilities": [0.9, 0.1]}, lambda v: v in (1, 2)),
    "objs": ({"values": [[1, 2], {"k": 1}]}, lambda v: v in ([1, 2], {"k": 1})),
    "c": ({"value": "fixed"}, lambda v: v == "fixed"),
    "cd": ({"distribution": "constant", "value": 3}, lambda v: v == 3),
    "nested": ({"parameters": {"lr": {"min": 0.1, "max": 0.2}, "name": {"values": ["sgd"]}}},
               lambda v: 0.1 <= v["lr"] <= 0.2 and v["name"] == "sgd"),
}


@pytest.mark.parametrize("method", ["random", "bayes"])
def test_every_distribution_samples_within_its_bounds(tmp_store: Path, method: str) -> None:
    config = {"method": method, "metric": {"name": "loss"}, "parameters": {k: v[0] for k, v in BOUNDS.items()}}
    sweep_id = tracker.sweep(config, project="bounds", seed=3)
    sweep = open_sweep(tmp_store.absolute(), sweep_id)
    seen = []
    for _ in range(40 if method == "random" else 15):
        t = sweep.ask()
        for name, (_, ok) in BOUNDS.items():
            assert ok(t.config[name]), (name, t.config[name])
        seen.append(t.config)
        sweep.study.tell(t.trial, float(t.config["u"]))
    # the draws really vary, and the probabilities are heeded
    assert len({c["u"] for c in seen}) > 10
    if method == "random":
        assert sum(c["catp"] == 1 for c in seen) > sum(c["catp"] == 2 for c in seen)
        assert {c["cat"] for c in seen} == {"a", "b", "c"}


def test_grid_covers_the_product_of_values_and_integer_ranges(tmp_store: Path) -> None:
    config = {"method": "grid", "parameters": {"a": {"values": [1, 2]}, "b": {"min": 0, "max": 2},
                                               "q": {"distribution": "q_uniform", "min": 0.0, "max": 1.0, "q": 0.5},
                                               "k": {"value": "x"}}}
    sweep = open_sweep(tmp_store.absolute(), tracker.sweep(config))
    points = []
    while (t := sweep.ask()) is not None:
        points.append((t.config["a"], t.config["b"], t.config["q"], t.config["k"]))
        sweep.study.tell(t.trial, 0.0)
    assert sorted(points) == sorted((a, b, q, "x") for a in (1, 2) for b in (0, 1, 2) for q in (0.0, 0.5, 1.0))
    assert sweep.state() == "finished"


@settings(max_examples=200, deadline=None)
@given(u=st.floats(0.0, 1.0), lo=st.floats(-50, 50), width=st.floats(0.0, 100.0), q=st.floats(0.01, 10))
def test_to_value_stays_within_bounds_and_on_the_q_grid(u: float, lo: float, width: float, q: float) -> None:
    hi = lo + width
    c = check_sweep_config({"method": "random", "parameters": {
        "u": {"distribution": "uniform", "min": lo, "max": hi},
        "qu": {"distribution": "q_uniform", "min": lo, "max": hi, "q": q},
        "n": {"distribution": "normal", "mu": lo, "sigma": 1 + width}}})
    u_, qu, n = c.params
    v = u_.to_value(lo + u * width)
    assert lo <= v <= hi
    x = qu.to_value(lo + u * width)
    assert abs(x / q - round(x / q)) < 1e-6 and lo - q / 2 - 1e-9 <= x <= hi + q / 2 + 1e-9
    assert math.isfinite(n.to_value(u))


def test_command_macros_as_w_and_b_defines_them() -> None:
    c = check_sweep_config({"program": "train.py", "method": "grid", "parameters": {
        "lr": {"values": [0.1]}, "flag": {"values": [True]}, "opt": {"parameters": {"name": {"value": "adam"}}}},
        "command": ["${env}", "${interpreter}", "${program}", "--fixed", "${args}", "${args_no_hyphens}",
                    "${args_json}", "--cfg=${args_json_file}"]})
    cmd = build_command(c, {"lr": 0.1, "flag": True, "opt": {"name": "adam"}}, args_json_file="/tmp/a.json",
                        interpreter="python3")
    assert cmd == ["/usr/bin/env", "python3", "train.py", "--fixed", "--lr=0.1", "--flag=True",
                   '--opt={"name": "adam"}', "lr=0.1", "flag=True", 'opt={"name": "adam"}',
                   '{"lr": 0.1, "flag": true, "opt": {"name": "adam"}}', "--cfg=/tmp/a.json"]
    default = check_sweep_config({"program": "train.py", "method": "random", "parameters": {"x": {"value": 1}}})
    assert build_command(default, {"x": 1}, interpreter="py") == ["py", "train.py", "--x=1"]


BAD = [
    ({"parameters": {"x": {"value": 1}}}, "method: missing"),
    ({"method": "annealing", "parameters": {"x": {"value": 1}}}, "method: unknown method 'annealing'"),
    ({"method": "random", "parameters": {"x": {"value": 1}}, "metrc": {}}, "metrc: unknown key"),
    ({"method": "random", "parameters": {"x": {"distribution": "gaussian", "min": 0, "max": 1}}},
     "parameters.x.distribution: unknown distribution 'gaussian'"),
    ({"method": "random", "parameters": {"x": {"min": 5, "max": 1}}}, "parameters.x.min: min 5 is greater than max 1"),
    ({"method": "random", "parameters": {"x": {"distribution": "uniform", "min": "a", "max": 1}}},
     "parameters.x.min: expected a finite number, given str 'a'"),
    ({"method": "random", "parameters": {"x": {"values": [1], "step": 2}}}, "parameters.x.step: unknown key"),
    ({"method": "bayes", "parameters": {"x": {"min": 0.0, "max": 1.0}}}, "metric: missing (method bayes"),
    ({"method": "random", "parameters": {"x": {"values": [1]}}, "early_terminate": {"type": "hyperband",
                                                                                     "min_iter": 3}},
     "metric: missing (early_terminate"),
    ({"method": "random", "metric": {"name": "l"}, "parameters": {"x": {"values": [1]}},
      "early_terminate": {"type": "envelope"}}, "early_terminate.type: expected hyperband, given 'envelope'"),
    ({"method": "random", "metric": {"name": "l"}, "parameters": {"x": {"values": [1]}},
      "early_terminate": {"type": "hyperband"}}, "early_terminate: missing min_iter or max_iter"),
    ({"method": "random", "metric": {"name": "l", "goal": "lower"}, "parameters": {"x": {"values": [1]}}},
     "metric.goal: expected minimize or maximize, given 'lower'"),
    ({"method": "grid", "parameters": {"x": {"distribution": "uniform", "min": 0, "max": 1}}},
     "parameters.x: method grid needs value, values, int_uniform or q_uniform, given distribution uniform"),
    ({"method": "random", "parameters": {}}, "parameters: expected a mapping of parameters"),
    ({"method": "random", "parameters": {"x": {"values": [1]}}, "run_cap": 0}, "run_cap: expected a number > 0"),
    ({"method": "random", "parameters": {"x": {"values": [1, 2], "probabilities": [0.5]}}},
     "parameters.x.probabilities: expected 2 numbers"),
    ({"method": "random", "parameters": {"x": {"values": [1]}}, "command": ["${program}", "${argz}"],
      "program": "t.py"}, "command[1]: unknown macro ${argz}"),
]


@pytest.mark.parametrize(("raw", "message"), BAD, ids=[m.split(":")[0] for _, m in BAD])
def test_bad_config_is_one_line_naming_the_key(raw: dict, message: str) -> None:
    with pytest.raises(SweepConfigError) as info:
        check_sweep_config(raw, "sweep.yaml")
    text = str(info.value)
    assert text.startswith("sweep.yaml: ") and message in text and "\n" not in text, text


def test_cli_refuses_a_bad_file_in_one_line_and_creates_nothing(work: Path, tmp_store: Path) -> None:
    bad = write_yaml(work / "bad.yaml", """
        program: train.py
        method: random
        parameters:
          lr:
            distribution: log_uniform_values
            min: 0.1
            max: 0.01
        """)
    r = tracker_cmd("sweep", "create", str(bad), cwd=work)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"tracker: {bad}: parameters.lr.min: min 0.1 is greater than max 0.01"]
    assert not (tmp_store / "sweeps").exists()
    broken = work / "broken.yaml"
    broken.write_text("method: grid\nparameters:\n  x: [1, 2\n")
    r = tracker_cmd("sweep", "create", str(broken), cwd=work)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"tracker: {broken}: line ") and "not valid YAML" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_agent_refuses_a_program_that_does_not_exist_before_any_trial(work: Path, tmp_store: Path) -> None:
    f = write_yaml(work / "s.yaml", """
        program: missing_train.py
        method: grid
        parameters:
          x: {values: [1, 2]}
        """)
    sweep_id = tracker_cmd("sweep", "create", str(f), cwd=work).stdout.strip()
    r = tracker_cmd("agent", sweep_id, cwd=work)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"tracker: sweep {sweep_id}: program: missing_train.py does not exist in {work}"]
    assert not (tmp_store / "runs").exists() or not any((tmp_store / "runs").iterdir())
    r = tracker_cmd("agent", "no-such-sweep", cwd=work)
    assert r.returncode == 1 and r.stderr.startswith("tracker: no sweep no-such-sweep in ")


def test_sweep_ids_take_w_and_b_paths_and_refuse_anything_else() -> None:
    from tracker.core.errors import TrackerError
    from tracker.sweeps.study import check_sweep_id, redact, without_password

    assert check_sweep_id("me/mnist/k3v9x2qa") == "k3v9x2qa" == check_sweep_id("k3v9x2qa")
    for bad in ("", "a b", "a.b", "..", "x" * 65):
        with pytest.raises(TrackerError, match="not a sweep id"):
            check_sweep_id(bad)
    url = "postgresql://lab:s3cr:et@db.example:5432/sweeps"
    assert redact(url) == "postgresql://lab:***@db.example:5432/sweeps"
    assert without_password(url) == "postgresql://lab@db.example:5432/sweeps"
    assert redact("postgresql://lab@db/x") == "postgresql://lab@db/x"
