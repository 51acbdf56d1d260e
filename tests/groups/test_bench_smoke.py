"""benchmarks/bench_groups.py keeps working (a smoke run: it never looks at how long anything took)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..childenv import child_environ

REPO = Path(__file__).resolve().parents[2]


def test_bench_groups_quick_prints_measurements_next_to_floors(tmp_path: Path) -> None:
    env = child_environ()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_groups.py"), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    names = [r["name"] for r in rows]
    assert names[0].startswith("store.aggregate('loss') over 10 runs") and rows[0]["floor"] > 0
    assert any(n.startswith("tracker report of 10 runs") for n in names)
    size = next(r for r in rows if r["name"].startswith("the size of that report"))
    assert size["unit"] == "MB" and size["value"] > 0
    assert all(r["benchmark"] == "groups" for r in rows) and all(r["value"] >= 0 for r in rows)
