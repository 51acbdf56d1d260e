"""``tracker runs``: every column, format and filter, checked against what was logged."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time

import pytest

import tracker
from tests.cli.support import run_tracker, write_run
from tracker.read.segment import hostname


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def runs(store):
    """Four runs, oldest first: finished, failed, crashed, running."""
    with tracker.start_run(project="fft", name="alpha", tags=["base", "gpu"], config={"lr": 0.1}) as a:
        for s in range(5):
            a.log({"loss": 1.0 / (s + 1), "acc": s / 10}, step=s)
    b = tracker.start_run(project="ptq", name="beta", tags=["base"])
    b.log({"loss": 0.3}, step=7)
    b.finish("failed", ValueError("diverged"))
    write_run(store, "c0ffee000001", [(0, {"loss": 2.0})], name="gamma", project="fft", status=None,
              created=time.time(), writer_host=hostname(), pid=_dead_pid())
    d = tracker.start_run(project="fft", name="delta")
    d.log({"loss": 0.9, "acc": 0.5})
    yield {"alpha": a, "beta": b, "gamma": "c0ffee000001", "delta": d}
    d.finish()


def test_json_lists_every_run_newest_first_with_what_was_logged(cli, runs):
    result = cli("runs", "--format", "json")
    assert result.exit_code == 0, result.output
    docs = json.loads(result.stdout)
    assert [d["name"] for d in docs] == ["delta", "gamma", "beta", "alpha"]
    by_name = {d["name"]: d for d in docs}
    alpha = by_name["alpha"]
    assert alpha["id"] == runs["alpha"].id and alpha["project"] == "fft"
    assert alpha["status"] == "finished" and alpha["records"] == 5 and alpha["last_step"] == 4
    assert alpha["last_metrics"] == {"loss": 0.2, "acc": 0.4}
    assert alpha["tags"] == ["base", "gpu"] and alpha["config"] == {"lr": 0.1}
    assert alpha["duration"] == pytest.approx(alpha["ended_at"] - alpha["created_at"])
    assert alpha["short_id"] == runs["alpha"].id[:8]
    assert by_name["beta"]["status"] == "failed"
    assert by_name["beta"]["error"]["type"] == "ValueError" and by_name["beta"]["error"]["message"] == "diverged"
    assert by_name["beta"]["last_step"] == 7
    assert by_name["gamma"]["status"] == "crashed"
    assert by_name["delta"]["status"] == "running" and by_name["delta"]["records"] == 1


def test_table_shows_short_ids_statuses_and_key_metrics(cli, runs):
    result = cli("runs")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = lines[0].split()
    assert header == ["id", "name", "project", "status", "start", "duration", "step", "records", "loss", "acc"]
    body = {line.split()[1]: line.split() for line in lines[2:]}
    assert list(body) == ["delta", "gamma", "beta", "alpha"]
    alpha = body["alpha"]
    assert alpha[0] == runs["alpha"].id[:8] and alpha[3] == "finished"
    # start is a date and a time: two words; then duration, step, records, loss, acc
    assert alpha[7:] == ["4", "5", "0.2", "0.4"]
    assert body["beta"][3] == "failed" and body["beta"][-2:] == ["0.3", "-"]
    assert body["gamma"][3] == "crashed" and body["delta"][3] == "running"
    assert "\x1b[" not in result.stdout  # no colour when not on a terminal


def test_csv_has_full_ids_and_numbers(cli, runs):
    result = cli("runs", "--format", "csv")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    alpha = next(r for r in rows if r["name"] == "alpha")
    assert alpha["id"] == runs["alpha"].id
    assert float(alpha["loss"]) == 0.2 and float(alpha["acc"]) == 0.4
    assert int(alpha["records"]) == 5 and int(alpha["step"]) == 4 and alpha["tags"] == "base;gpu"
    assert abs(float(alpha["start"]) - time.time()) < 600


@pytest.mark.parametrize(("args", "names"), [
    (["--project", "fft"], ["delta", "gamma", "alpha"]),
    (["--status", "failed"], ["beta"]),
    (["--status", "crashed"], ["gamma"]),
    (["--tag", "base"], ["beta", "alpha"]),
    (["--tag", "base", "--tag", "gpu"], ["alpha"]),
    (["--project", "fft", "--status", "finished"], ["alpha"]),
    (["--limit", "2"], ["delta", "gamma"]),
])
def test_filters(cli, runs, args, names):
    result = cli("runs", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    assert [d["name"] for d in json.loads(result.stdout)] == names


def test_chosen_metrics(cli, runs):
    result = cli("runs", "-m", "acc", "--format", "csv")
    header = result.stdout.splitlines()[0].split(",")
    assert header[-2:] == ["acc", "tags"] and "loss" not in header


def test_short_ids_grow_to_stay_unique(cli, store):
    write_run(store, "abcdef012345", [(0, {"x": 1.0})], name="one")
    write_run(store, "abcdef019999", [(0, {"x": 2.0})], name="two", created=1.8e9)
    result = cli("runs")
    ids = [line.split()[0] for line in result.stdout.splitlines()[2:]]
    assert ids == ["abcdef019", "abcdef012"]
    shown = cli("show", "abcdef012", "--format", "json")
    assert json.loads(shown.stdout)["info"]["name"] == "one"


def test_empty_store(cli, store):
    result = cli("runs")
    assert result.exit_code == 0 and result.stdout == ""
    assert "no runs" in result.stderr
    assert json.loads(cli("runs", "--format", "json").stdout) == []


def test_subprocess_lists_runs(runs, store):
    proc = run_tracker("--store", str(store), "runs", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert [d["name"] for d in json.loads(proc.stdout)] == ["delta", "gamma", "beta", "alpha"]
