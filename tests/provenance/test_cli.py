"""``tracker logs``, ``tracker env``, ``tracker diff``: the real commands over runs made by real processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli

from .conftest import child_env, run_py, script

TRAIN = """
import sys, time, tracker
with tracker.start_run(project="p", name=sys.argv[1], config={"lr": float(sys.argv[2]), "optim": {"name": "adam"},
                       **({"warmup": 10} if sys.argv[1] == "b" else {})}) as run:
    print("\\x1b[1mstarting\\x1b[0m", sys.argv[1])
    for epoch in range(3):
        print(f"epoch {epoch} loss {1 / (epoch + 1):.3f}")
        run.log({"loss": 1 / (epoch + 1)})
    sys.stdout.write("\\rprogress 50%"); sys.stdout.flush()
    sys.stdout.write("\\rprogress 100%\\n")
    print("W1128 dataloader slow", file=sys.stderr)
"""


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Runs ``a`` and ``b``: b has another lr, one more config key and one more installed package."""
    tmp = tmp_path_factory.mktemp("cli")
    store = tmp / "store"
    path = script(tmp, TRAIN)
    assert run_py(path, store, "a", "0.1").returncode == 0
    extra = tmp / "extra_site"
    (extra / "brand_new_pkg-2.1.0.dist-info").mkdir(parents=True)
    env = child_env(store)
    env["PYTHONPATH"] = os.pathsep.join([str(extra), env["PYTHONPATH"]])
    assert run_py(path, store, "b", "0.01", env=env).returncode == 0
    runs = {r.name: r.id for r in tracker.Store(store).runs()}
    return store, runs["a"], runs["b"]


def cli(store: Path, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(make_cli(), ["--store", str(store), *args], catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def test_logs_prints_the_lines_in_their_last_state_and_filters(two_runs: tuple[Path, str, str]) -> None:
    store, a, _ = two_runs
    code, out, _ = cli(store, "logs", a)
    assert code == 0
    # not a terminal: colours left out, the progress bar's last state
    assert out.splitlines() == ["starting a", "epoch 0 loss 1.000", "epoch 1 loss 0.500", "epoch 2 loss 0.333",
                                "progress 100%", "W1128 dataloader slow"]
    assert cli(store, "logs", a, "--stream", "stderr")[1] == "W1128 dataloader slow\n"
    assert cli(store, "logs", a, "--grep", r"epoch [12]", "--tail", "1")[1] == "epoch 2 loss 0.333\n"
    code, out, _ = cli(store, "logs", a, "--format", "json", "--tail", "2")
    doc = json.loads(out)
    assert doc["run"] == a
    assert [(ln["n"], ln["stream"], ln["text"]) for ln in doc["lines"]] == [(5, "stdout", "progress 100%"),
                                                                           (6, "stderr", "W1128 dataloader slow")]
    code, _, err = cli(store, "logs", a, "--grep", "(")
    assert code == 2 and err.count("\n") == 1 and "--grep" in err and "not a regular expression" in err


def test_env_shows_the_facts_packages_and_json(two_runs: tuple[Path, str, str]) -> None:
    store, a, b = two_runs
    code, out, _ = cli(store, "env", b)
    assert code == 0
    assert "python" in out and "packages (" in out and "brand-new-pkg==2.1.0" in out
    reqs = cli(store, "env", b, "--packages")[1].splitlines()
    assert "brand-new-pkg==2.1.0" in reqs and f"tracker-core=={tracker.__version__}" in reqs
    doc = json.loads(cli(store, "env", a, "--format", "json")[1])
    assert doc["run"] == a and doc["python"] and doc["packages_count"] == len(doc["package_list"])
    code, _, err = cli(store, "env", a, "--diff")
    assert code == 1 and "did not run in a git repository" in err


def test_diff_names_the_added_package_and_the_changed_config_key(two_runs: tuple[Path, str, str]) -> None:
    store, a, b = two_runs
    code, out, _ = cli(store, "diff", a, b)
    assert code == 0
    lines = out.splitlines()
    assert "config: 1 changed, 1 added, 0 removed" in lines
    assert "  ~ lr = 0.1 -> 0.01" in lines and "  + warmup = 10" in lines
    assert "packages: 0 changed, 1 added, 0 removed" in lines and "  + brand-new-pkg 2.1.0" in lines
    assert any(ln.startswith("python: same (") for ln in lines)
    assert any(ln.startswith("host: same (") for ln in lines)
    doc = json.loads(cli(store, "diff", a, b, "--format", "json")[1])
    sections = {s["name"]: s for s in doc["sections"]}
    assert sections["config"]["changed"] == {"lr": [0.1, 0.01]} and sections["config"]["added"] == {"warmup": 10}
    assert sections["packages"]["added"] == {"brand-new-pkg": "2.1.0"} and not sections["packages"]["same"]
    assert sections["python"]["same"] and sections["command"]["a"].endswith("a 0.1")
    assert [s["name"] for s in doc["sections"]] == ["config", "packages", "git", "python", "platform", "gpu",
                                                    "host", "command"]
    code, out, _ = cli(store, "diff", a, a)
    same = ("a ", "b ", "git: not a git repository")
    assert all(": same" in ln or ln.startswith(same) for ln in out.splitlines()), out


LIVE = """
import sys, time, tracker
with tracker.start_run(project="p", run_id="live") as run:
    for i in range(6):
        print(f"live line {i}", flush=True)
        time.sleep(0.3)
"""


def test_logs_follow_prints_lines_as_they_come_and_stops_with_the_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    child = subprocess.Popen([sys.executable, str(script(tmp_path, LIVE))], env=child_env(store), cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not (store / "runs" / "live").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        t0 = time.monotonic()
        follow = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "logs", "live", "-f"],
                                capture_output=True, text=True, timeout=60, env=child_env(store))
        assert follow.returncode == 0, follow.stderr
        assert follow.stdout.splitlines() == [f"live line {i}" for i in range(6)]
        assert "tracker: run live finished" in follow.stderr
        assert time.monotonic() - t0 > 0.5  # it followed the run rather than print a finished one
    finally:
        child.wait(30)


def test_a_run_outside_git_is_not_a_git_repository_and_packages_sort_by_name(tmp_path: Path) -> None:
    """``tracker env`` and ``tracker diff`` of a run made outside any git repository say so (not "clean",
    not "(detached)"); packages are listed by name (psycopg before psycopg-binary), as pip compares names."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    store = tmp_path / "store"
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    outside.mkdir()
    repo.mkdir()
    genv = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e"}
    (repo / "model.py").write_text("depth = 4\n")
    for args in (("init", "-q", "-b", "main"), ("add", "."), ("commit", "-q", "-m", "first")):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=genv)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    extra = tmp_path / "extra_site"
    for dist in ("psycopg_binary-3.2.1", "psycopg-3.2.1", "Zeta.Pkg-1.0", "alpha_pkg-2.0"):
        (extra / f"{dist}.dist-info").mkdir(parents=True)
    env = child_env(store)
    env["PYTHONPATH"] = os.pathsep.join([str(extra), env["PYTHONPATH"]])
    assert run_py(script(outside, TRAIN), store, "nogit", "0.1", cwd=outside, env=env).returncode == 0
    assert run_py(script(repo, TRAIN), store, "ingit", "0.2", cwd=repo).returncode == 0
    runs = {r.name: r.id for r in tracker.Store(store).runs()}
    code, out, _ = cli(store, "env", runs["nogit"])
    assert code == 0
    git_lines = [ln for ln in out.splitlines() if ln.startswith("git ")]
    assert git_lines == ["git       not a git repository"], out
    names = [ln.strip().partition("==")[0] for ln in out.splitlines()[out.splitlines().index(
        next(ln for ln in out.splitlines() if ln.startswith("packages ("))) + 1:]]
    from tracker.read.environment import package_key

    assert names == sorted(names, key=package_key) and names.index("psycopg") < names.index("psycopg-binary")
    assert names.index("alpha-pkg") < names.index("psycopg") < names.index("zeta-pkg")
    code, out, _ = cli(store, "diff", runs["nogit"], runs["ingit"])
    assert code == 0
    lines = out.splitlines()
    git_head = next(ln for ln in lines if ln.startswith("git: "))
    assert git_head == f"git: the first run: not a git repository; the other: commit {head[:12]}", lines
    block = lines[lines.index(git_head) + 1:lines.index(git_head) + 3]
    assert block == ["  a: not a git repository", f"  b: {head[:12]} on main"], lines
    assert "clean" not in out and "(detached)" not in out
    doc = json.loads(cli(store, "diff", runs["nogit"], runs["ingit"], "--format", "json")[1])
    git = next(s for s in doc["sections"] if s["name"] == "git")
    assert git["a"]["repository"] is False and git["b"]["repository"] is True and not git["same"]
