"""The JavaScript client (clients/js/) against a real ``tracker server``: its own tests on Node's test runner,
and a Node script whose run the server's store then holds, record for record."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import tracker

from ..sysdeps import require_node

JS = Path(__file__).resolve().parents[2] / "clients" / "js"


def test_the_clients_own_tests_pass_against_the_server(server: Any) -> None:
    node = require_node()
    key = server.make_key("js-tests", "write", ["js"])
    res = subprocess.run([node, "--test", "test/"], cwd=JS, capture_output=True, text=True, timeout=300,
                         env=server.env(key))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    # Every test ran (those against the server too: none skipped).
    assert "# fail 0" in res.stdout and "# skipped 0" in res.stdout, res.stdout[-2000:]
    assert "# pass 13" in res.stdout, res.stdout[-2000:]
    assert key not in res.stdout + res.stderr


def test_a_node_script_logs_a_run_the_store_holds(server: Any) -> None:
    node = require_node()
    key = server.make_key("js-example", "write")
    res = subprocess.run([node, "examples/log.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                         env={**server.env(key), "TRACKER_PROJECT": "js-example"})
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip().splitlines()[-1]
    view = tracker.open_store(server.store).run(run_id)
    info = view.info
    assert (info.name, info.project, info.status, info.tags) == ("js-example", "js-example", "finished", ["js"])
    assert info.config == {"lr": 0.01, "layers": 3}
    got = [(r.step, r.data) for r in view.records("metrics")]
    assert got == [(step, {"loss": 1 / (step + 1), "acc": step / 10}) for step in range(10)]
    assert os.environ.get("TRACKER_API_KEY") != key
