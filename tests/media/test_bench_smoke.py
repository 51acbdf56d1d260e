"""benchmarks/bench_media.py keeps working (a smoke run: it never looks at how long anything took)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..childenv import child_environ

REPO = Path(__file__).resolve().parents[2]


def test_bench_media_quick_prints_measurements_next_to_floors(tmp_path: Path) -> None:
    env = child_environ()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_media.py"), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["name"].split(",")[0] for r in rows] == ["run.log of tracker.Audio", "run.log of tracker.Video"]
    audio, video = rows
    assert audio["floor"] > 0 and audio["target"] == "<= 5 ms beyond the floor" and "wave" in audio["floor_is"]
    assert video["floor"] > 0 and video["target_value"] == 0.2 and "PyAV" in video["floor_is"]
    assert all(r["benchmark"] == "media" and r["value"] > 0 for r in rows)
