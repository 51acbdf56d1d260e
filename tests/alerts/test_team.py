"""A run the watcher recorded an alert in, synced to the team store on a real PostgreSQL server:
the same status (the observer segment is not a writer), the same alerts, the same MCP answers."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import tracker
from tracker.alerts import read_alerts
from tracker.alerts.watch import Watcher
from tracker.mcp import tools

from ..query.conftest import pg_server, pg_url  # noqa: F401 - the PostgreSQL fixtures of the query tests


def test_alerts_read_the_same_over_the_team_store(host_of, tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    from tracker.team.postgres import sync

    host = host_of('[[alerts.rules]]\nwhen = "run crashed"\n')
    watcher = Watcher(tracker.open_store(), host)
    watcher.poll()
    script = tmp_path / "die.py"
    script.write_text("import os, signal, tracker\nrun = tracker.start_run(project='p', name='doomed')\n"
                      "run.log({'loss': 1.0})\nrun.alert('hello', 'from the script')\n"
                      "print(run.id, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    run_id = out.stdout.split()[0]
    assert [a.condition for a in watcher.poll()] == ["run crashed"]
    local = tracker.open_store()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(local, pg_url)
    team = tracker.open_store(pg_url)
    assert team.run(run_id).info.status == local.run(run_id).info.status == "crashed"
    mine = [(a["title"], a["condition"]) for a in read_alerts(local.run(run_id))]
    assert [(a["title"], a["condition"]) for a in read_alerts(team.run(run_id))] == mine
    assert [c for _, c in mine] == ["", "run crashed"]
    listed = tools.list_runs(team)
    assert listed["runs"][0]["status"] == "crashed" and listed["total"] == 1
    assert [a["condition"] for a in tools.list_alerts(team, run_id)["alerts"]] == ["run crashed", ""]
