"""examples/quant_analysis.py end to end: analyses, logs, and prints the CLI summary."""

import os
import subprocess
import sys
from pathlib import Path

import tracker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quant_analysis.py"


def test_example_compares_granularities_and_prints_the_summary(tracker_store):
    env = {**os.environ, "TRACKER_STORE": str(tracker_store)}
    out = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tracker_store.parent, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Quantisation error" in out.stdout and "Per-tensor vs per-channel" in out.stdout
    (info,) = tracker.open_store(tracker_store).runs(project="quant-analysis")
    view = tracker.open_store(tracker_store).run(info.id)
    rows = list(view.table("quant.error").rows())
    assert len(rows) == 2 * 2 + 2 * 2 + 2 * 2 * 2
    by_key = {(r.tensor, r.bits, r.mode, r.granularity): r for r in rows}
    for (tensor, bits, mode, granularity), rec in by_key.items():
        if granularity == "per_tensor":
            assert by_key[(tensor, bits, mode, "per_channel")].mse < rec.mse
    # Channels three decades apart: per channel is far better on the convolution.
    conv = [by_key[("conv.weight", 8, "symmetric", g)] for g in ("per_tensor", "per_channel")]
    assert conv[0].mse / conv[1].mse > 3
    summary = {s.summarizer: s for s in view.summarize("quant.error")}
    assert all(not r["over_bound"] for r in summary["quant.errors"].rows)
    assert len(summary["quant.granularity"].rows) == 8
