"""benchmarks/bench_artifacts.py keeps working (a smoke run: it never looks at how long anything took)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..childenv import child_environ

REPO = Path(__file__).resolve().parents[2]


def test_bench_artifacts_quick_prints_measurements_next_to_floors(tmp_path: Path) -> None:
    env = child_environ()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_artifacts.py"), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = {r["name"]: r for r in (json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{"))}
    warm = next(r for n, r in rows.items() if n.startswith("store.artifact('name:alias') warm"))
    assert warm["floor"] > 0 and warm["target_value"] == 50.0
    listing = next(r for n, r in rows.items() if n.startswith("tracker artifact list"))
    assert listing["floor"] > 0 and listing["target_value"] == 1.0
    relog = next(r for n, r in rows.items() if n.startswith("re-logging an unchanged"))
    assert relog["target"] == 1.2 and "bytes written by the call" in relog["note"]
    assert all(r["benchmark"] == "artifacts" and r["value"] > 0 for r in rows.values())
