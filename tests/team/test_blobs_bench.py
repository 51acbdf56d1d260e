"""benchmarks/bench_blobs.py keeps working (a smoke run on a small file; it never looks at the times)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_bench_blobs_prints_each_figure_next_to_its_floor(tmp_path: Path) -> None:
    pytest.importorskip("moto.server", reason="moto[server] is not installed (the test extra installs it)")
    pytest.importorskip("obstore", reason="obstore is not installed (the blobs extra)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACKER_", "AWS_"))}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_blobs.py"), "--quick", "--size-mb", "8",
                           "--repeat", "1"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(rows) == 8 and all(r["name"] != "error" for r in rows)
    for r in rows:
        assert r["value"] > 0 and r["floor"] > 0, r
    requests = [r for r in rows if r["unit"] == "requests"]
    assert len(requests) == 2 and all(r["value"] <= r["floor"] for r in requests)  # at most one listing per run
