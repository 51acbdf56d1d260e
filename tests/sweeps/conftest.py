"""Fixtures of the sweep tests: a store in a fresh folder, tiny trial scripts, the real `tracker` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("optuna")
pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]

#: A trial script: takes --key=value (or key=value) arguments, attaches with tracker.init(), checks that
#: the run's config holds what it was given, then logs METRIC = f(values) for a few steps.
TRAIN = """
import json, os, sys, time
import tracker as wandb

args = {}
for a in sys.argv[1:]:
    k, _, v = a.lstrip("-").partition("=")
    args[k] = v
run = wandb.init(config={"script_default": 7})
for k, v in args.items():
    got = run.config[k]
    text = v if isinstance(got, str) else json.dumps(got) if isinstance(got, (dict, list)) else str(got)
    assert text == v, (k, got, v)
assert run.config["script_default"] == 7
metric = os.environ.get("METRIC", "loss")
steps = int(os.environ.get("STEPS", "3"))
for i in range(steps):
    wandb.log({metric: float(len(json.dumps(args))) / (i + 1)})
with open(os.environ["TRIALS_LOG"], "a") as f:
    f.write(json.dumps({"run": run.id, "args": args, "pid": os.getpid()}) + "\\n")
wandb.finish()
"""


def tracker_cmd(*args: str, cwd: Path, env: dict[str, str] | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m tracker ARGS`` in ``cwd`` (the store from TRACKER_STORE), as a user runs it."""
    full = {k: v for k, v in os.environ.items() if k not in ("TRACKER_RUN_ID", "TRACKER_SWEEP_ID")}
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True, cwd=cwd,
                          env=full, timeout=timeout)


def agent_proc(sweep_id: str, *args: str, cwd: Path, env: dict[str, str] | None = None,
               log: Path | None = None) -> subprocess.Popen[bytes]:
    """``tracker agent SWEEP_ID ARGS`` started in the background (stderr to ``log``)."""
    full = {k: v for k, v in os.environ.items() if k not in ("TRACKER_RUN_ID", "TRACKER_SWEEP_ID")}
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    full.update(env or {})
    err = open(log or os.devnull, "wb")  # noqa: SIM115 - closed when the process is reaped (by the OS)
    return subprocess.Popen([sys.executable, "-m", "tracker", "agent", sweep_id, *args], cwd=cwd, env=full,
                            stdout=subprocess.DEVNULL, stderr=err)


@pytest.fixture
def work(tmp_store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's working folder (the current one), holding train.py; the store is TRACKER_STORE."""
    here = Path.cwd()
    (here / "train.py").write_text(TRAIN)
    monkeypatch.setenv("TRIALS_LOG", str(here / "trials.jsonl"))
    monkeypatch.delenv("TRACKER_SWEEP_ID", raising=False)
    return here


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def trials_log(work: Path) -> list[dict[str, Any]]:
    path = work / "trials.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def show(sweep_id: str, cwd: Path) -> dict[str, Any]:
    r = tracker_cmd("sweep", "show", sweep_id, "--format", "json", cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="session")
def sweep_pg_server():
    """A PostgreSQL server for the sweep tests (skipped only when Debian's postgresql is missing)."""
    pytest.importorskip("psycopg", reason="the team extra (psycopg) is not installed")
    from ..query.pg import Server
    from ..sysdeps import require_postgres

    server = Server(require_postgres())
    yield server
    server.stop()


@pytest.fixture
def sweep_pg_url(sweep_pg_server) -> str:
    """The URL (with its password) of a fresh database."""
    import psycopg

    name = f"sweep_{os.getpid()}_{id(object())}"
    with psycopg.connect(sweep_pg_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return sweep_pg_server.url(name)
