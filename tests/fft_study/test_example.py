"""examples/fft_study.py end to end: a short study, its summary and its report."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import tracker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fft_study.py"
SCHEMAS = {"fft.loss_point", "fft.params", "fft.heatmap", "fft.landscape", "fft.trace"}


def test_example_logs_every_schema_prints_the_summary_and_writes_the_report(host, tracker_store,
                                                                            tmp_path):
    with_report = importlib.util.find_spec("matplotlib") is not None
    report = tmp_path / "study.html"
    args = ["--steps", "20", "--eval-every", "5", "--landscape-points", "6",
            "--report", str(report)]
    proc = subprocess.run([sys.executable, str(EXAMPLE), *args,
                           *([] if with_report else ["--no-report"])],
                          cwd=Path.cwd(), env=dict(os.environ), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    for title in ("FFT models", "FFT loss curves", "FFT gates per stage", "FFT loss landscape"):
        assert title in proc.stdout
    (info,) = tracker.open_store(tracker_store).runs()
    assert info.status == "finished" and info.config["steps"] == 20
    view = tracker.open_store(tracker_store).run(info.id)
    assert SCHEMAS <= set(view.schemas())
    models = {r["model_id"]: r for r in view.summarize("fft.params")[0].rows}
    assert list(models) == ["butterfly", "unitary", "gated", "int8", "exact"]
    assert models["exact"]["final_spec_err"] < 1e-20  # the exact twiddles are the FFT
    assert models["gated"]["total_params"] == 384 + 192 + 128
    assert models["butterfly"]["train_steps"] == 20
    losses = view.table("fft.loss_point")
    assert len(losses) == 3 * 5 + 1  # steps 0, 5, ..., 20 per trained model, one int8 point
    if with_report:
        text = report.read_text(encoding="utf-8")
        # Loss chart, heatmaps of the gated and butterfly models, the landscape.
        assert text.count('<img src="data:image/png;base64,') == 4
