"""Listing runs loads no plugin and no numpy: the command starts with only what it needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import tracker

PROBE = textwrap.dedent("""
    import json, sys
    from tracker.cli import main
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    heavy = sorted(m for m in sys.modules if m == "numpy" or m.startswith("tracker_") or m == "matplotlib")
    print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
""")


def _probe(args: list[str], cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TRACKER_STORE", "TRACKER_CONFIG", "TRACKER_RUN_ID")}
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env)
    return json.loads(proc.stderr.strip().splitlines()[-1])


def test_runs_imports_no_plugin_and_no_numpy(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with tracker.start_run(store=store, name="one") as run:
        run.log({"loss": 0.5})
    out = _probe(["--store", str(store), "runs", "--format", "json"], tmp_path)
    assert out == {"code": 0, "heavy": []}


def test_summary_loads_the_plugins_it_needs(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with tracker.start_run(store=store) as run:
        run.log({"loss": 0.5})
    out = _probe(["--store", str(store), "summary", run.id, "--format", "json"], tmp_path)
    assert out["code"] == 0 and "numpy" in out["heavy"]
