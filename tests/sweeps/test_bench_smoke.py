"""benchmarks/bench_sweeps.py keeps working (a smoke run: it never looks at how long anything took)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..childenv import child_environ
from .conftest import REPO


def test_bench_sweeps_quick_prints_measurements_next_to_floors(tmp_path: Path) -> None:
    env = child_environ()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_sweeps.py"), "--quick", "--trials", "3"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 4 and all(r["benchmark"] == "sweeps" and r["value"] > 0 for r in rows)
    assert rows[0]["floor"] > 0 and "overhead_ms" in rows[0] and rows[3]["floor"] > 0
