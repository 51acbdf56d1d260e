"""benchmarks/bench_media_ui.py keeps working (a smoke run: it never looks at how long anything took)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..childenv import child_environ

REPO = Path(__file__).resolve().parents[2]


def test_bench_media_ui_quick_prints_measurements_next_to_floors(tmp_path: Path) -> None:
    pytest.importorskip("av", reason="PyAV (the media extra) encodes the benchmark's videos")
    env = child_environ()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["TMPDIR"] = str(tmp_path)  # the benchmark's cached store: this test's own
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_media_ui.py"), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert all(r["benchmark"] == "media_ui" for r in rows) and all(r["value"] >= 0 for r in rows)
    names = [r["name"] for r in rows]
    assert names[0].startswith("GET /api/runs/ID/media (the index of 30 steps") and rows[0]["bytes"] > 0
    panel = [r for r in rows if r["name"].startswith("the Media panel")]
    assert len(panel) == 1
    if "skipped" not in panel[0]["name"]:
        assert panel[0]["floor"] > 0 and panel[0]["value"] > 0
        cloud = next(r for r in rows if "points with colours" in r["name"])
        assert cloud["name"].startswith("50,000 points") and cloud["floor"] > 0
