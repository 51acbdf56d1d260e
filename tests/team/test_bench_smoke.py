"""``benchmarks/bench_team.py --quick`` keeps working against the test server (never looks at its times)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..childenv import child_environ

ROOT = Path(__file__).resolve().parents[2]


def test_bench_team_quick_prints_each_measurement_beside_its_floor(pg_url: str, tmp_path: Path) -> None:
    env = child_environ()
    env["TRACKER_BENCH_PG"] = pg_url
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_team.py"), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 5
    for r in rows:
        assert r["benchmark"] == "team" and r["value"] > 0 and r["floor"] > 0 and "target" in r, r
    assert "s3cret" not in proc.stdout + proc.stderr


def test_bench_sync_edits_quick_prints_each_measurement_beside_its_floor(pg_url: str, tmp_path: Path) -> None:
    env = child_environ()
    env["TRACKER_BENCH_PG"] = pg_url
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_sync_edits.py"), "--quick", "--repeat",
                           "1"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 3
    for r in rows:
        assert r["benchmark"] == "sync_edits" and r["value"] > 0 and r["floor"] > 0, r
    assert rows[1]["tag_in_database"] is True
    assert "s3cret" not in proc.stdout + proc.stderr


def test_bench_lab_quick_prints_each_measurement_beside_its_floor(pg_url: str, tmp_path: Path) -> None:
    from ..sysdeps import require_chromium

    require_chromium()
    env = child_environ()
    env["TRACKER_BENCH_PG"] = pg_url
    env["TRACKER_BENCH_CACHE"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_lab.py"), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 2 * 8 + 1  # per store: first rows, three pages, six new sorts, memory, the four whole
    # passes (ended_at, duration, a tag, text), tracker runs
    for r in rows:
        assert r["benchmark"] == "lab" and r["value"] > 0 and r["floor"] > 0 and "target" in r, r
    assert "s3cret" not in proc.stdout + proc.stderr
