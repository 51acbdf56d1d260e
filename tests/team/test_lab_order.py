"""A lab's order of things: the dashboard is started on the team database before any run reached it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import orjson

import tracker

from ..query.conftest import pg_server, pg_url  # noqa: F401 - the PostgreSQL fixtures
from ..query.pg import PASSWORD
from ..query.support import run_tracker, wait_for
from ..ui.support import free_port


def _get(port: int, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        return orjson.loads(r.read())


def test_a_dashboard_started_on_an_empty_database_shows_runs_once_a_sync_made_the_tables(
        tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    res = run_tracker("--store", pg_url, "runs")
    assert res.returncode == 0 and res.stderr.count("\n") == 1, res.stderr
    assert "no runs in postgresql://tracker:***@" in res.stderr and "tracker sync" in res.stderr
    assert "[team] url" in res.stderr and PASSWORD not in res.stderr
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("TRACKER_STORE", "TRACKER_CONFIG")}
    ui = subprocess.Popen([sys.executable, "-m", "tracker", "--store", pg_url, "ui", "--port", str(port), "--no-open"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        banner = ui.stdout.readline()
        assert "serving postgresql://tracker:***@" in banner, banner + ui.stderr.read()
        empty = _get(port, "/api/runs")
        assert empty["runs"] == [] and empty["total"] == 0
        assert "tracker sync" in empty["hint"] and "[team] url" in empty["hint"]
        assert _get(port, "/api/sweeps") == {"sweeps": []}
        # A machine syncs its store: the tables are made, and the dashboard that was started first shows it.
        store = tmp_path / "store"
        with tracker.start_run("lab", "first", store=store, run_id="first", system_metrics=False) as run:
            run.log({"loss": 0.5}, step=0)
        res = run_tracker("--store", str(store), "sync", pg_url)
        assert res.returncode == 0, res.stderr
        listing = wait_for(lambda: (d := _get(port, "/api/runs"))["runs"] and d, timeout=20, every=0.1)
        assert [r["id"] for r in listing["runs"]] == ["first"] and "hint" not in listing
        assert _get(port, "/api/runs/first/metrics")["records"] == 1
        assert ui.poll() is None
    finally:
        ui.send_signal(signal.SIGINT)
        out, err = ui.communicate(timeout=30)
    assert PASSWORD not in out + err and "Traceback" not in err
    res = run_tracker("--store", pg_url, "runs")
    assert res.returncode == 0 and "first" in res.stdout
