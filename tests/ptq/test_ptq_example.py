"""examples/ptq.py end to end: trains, quantises, logs, and prints the CLI summary."""

import os
import subprocess
import sys
from pathlib import Path

import tracker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ptq.py"


def test_example_quantises_the_mlp_and_prints_the_summary(tracker_store):
    env = {**os.environ, "TRACKER_STORE": str(tracker_store)}
    out = subprocess.run([sys.executable, str(EXAMPLE), "--epochs", "4"], cwd=tracker_store.parent,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "PTQ layers" in out.stdout and "PTQ totals" in out.stdout
    (info,) = tracker.open_store(tracker_store).runs(project="ptq")
    view = tracker.open_store(tracker_store).run(info.id)
    assert info.status == "finished"
    final = {k: v[-1] for k, v in view.metrics().items()}
    assert final["accuracy_fp32"] > 0.6  # well above the 0.25 of guessing among 4 classes
    assert abs(final["accuracy_drop_int8_per_tensor"]) < 0.03
    # 20-64-64-4: 5632 weights, 132 biases.
    assert final["bytes_fp32"] == 4 * 5632
    assert final["bytes_int8"] == 5632
    assert final["compression_ratio"] == 4.0
    assert final["overhead_bytes"] == 3 * 4 + 4 * 132
    overhead = final["bytes_int8"] + final["overhead_bytes"]
    assert overhead < final["model_file_bytes"] < overhead + 200
    schemes = sorted(r.scheme for r in view.table("ptq.layer").rows())
    assert schemes == ["symmetric_per_channel_int8"] * 3 + ["symmetric_per_tensor_int8"] * 3
