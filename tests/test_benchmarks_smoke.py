"""The benchmark scripts keep working: ``benchmarks/run_all.py --quick`` runs them all.

A smoke test only: it checks that every script prints its JSON lines, each
with a value next to a floor, and never looks at how long anything took.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .childenv import child_environ
from .sysdeps import require_curl

ROOT = Path(__file__).resolve().parent.parent


def test_run_all_quick_prints_a_json_line_per_measurement(tmp_path: Path) -> None:
    env = child_environ()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--quick"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert {r["benchmark"] for r in rows} == {"log", "records", "read", "index", "list", "cli_start", "concurrency",
                                             "ui"}
    for r in rows:
        assert r["name"] != "error", r
        assert isinstance(r["value"], (int, float)) and r["value"] > 0, r
        if r["benchmark"] != "list" or r.get("floor") is not None:
            assert "floor" in r or r["unit"] == "s", r
    ratios = {r["name"]: r["ratio"] for r in rows if "target" in r}
    assert any(name.startswith("run.log, 4 floats") for name in ratios)
    assert any(name.startswith("run.log_record") for name in ratios)
    assert any(name.startswith("view.metrics()") for name in ratios)


def test_tracker_bench_command_prints_cost_next_to_floor(tmp_path: Path) -> None:
    env = child_environ()
    proc = subprocess.run([sys.executable, "-m", "tracker", "bench", "--seconds", "0.5", "--format", "json"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    names = [m["name"] for m in doc["measurements"]]
    assert names[0].startswith("run.log")
    for m in doc["measurements"]:
        assert m["value_us"] > 0 and m["floor_us"] > 0 and m["ratio"] > 0
    assert doc["floor"] in ("orjson.dumps + os.write", "json.dumps + os.write")


def test_bench_remote_quick_prints_each_measurement_beside_its_floor(tmp_path: Path) -> None:

    import pytest

    pytest.importorskip("uvicorn", reason="the ui extra (uvicorn) is not installed")
    require_curl()
    env = child_environ()
    env["TRACKER_BENCH_CACHE"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_remote.py"), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 5
    for r in rows:
        assert r["benchmark"] == "remote" and r["value"] > 0 and r["floor"] > 0, r
        assert "target" in r or "target_value" in r, r
    assert rows[-1]["missing"] == 0
