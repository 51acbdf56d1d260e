"""Helpers of the team tests: a store with every kind of run the readers must agree on."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import tracker

from ..ui.support import make_plugin_runs, make_runs


def child(store: Path, code: str) -> None:
    """Run ``code`` in a fresh Python process with ``store`` as its store (it may kill itself)."""
    env = {k: v for k, v in os.environ.items() if k != "TRACKER_RUN_ID"}
    env["TRACKER_STORE"] = str(store)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr


def build_store(store: Path) -> dict[str, str]:
    """Finished, failed, crashed, multi-writer, plugin, capture and NaN runs; returns {label: run id}."""
    ids = make_runs(store)
    ids.update(make_plugin_runs(store))
    with tracker.start_run(project="capture", name="pictures", store=store, run_id="capture1",
                           system_metrics=False) as run:
        for step in range(3):
            img = np.zeros((8, 12, 3), dtype=np.uint8)
            img[:, :, step] = 200
            run.log_image("samples", img, step=step, caption=f"epoch {step}")
            run.log({"loss": 1.0 / (step + 1), "odd": math.inf if step == 1 else -0.5}, step=step)
        weights = store.parent / "weights.bin"
        weights.write_bytes(bytes(range(256)) * 16)
        run.log_artifact(str(weights), kind="model")
        folder = store.parent / "data"
        (folder / "sub").mkdir(parents=True)
        (folder / "a.txt").write_text("alpha\n")
        (folder / "sub" / "b.txt").write_text("beta\n")
        run.log_artifact(str(folder), kind="dataset")
    ids["capture"] = "capture1"
    with tracker.start_run(project="ids", name="two writers", store=store, run_id="multi",
                           config={"lr": 0.1}) as run:
        for s in range(20):
            run.log({"loss": 2.0 - s * 0.05, "only_first": s}, step=s)
    # The second writer on a machine whose name sorts before this one's: merging must order the metric
    # names by which writer logged first, not by the writers' ids.
    child(store, """
        import tracker, tracker.write.writer
        tracker.write.writer.safe_hostname = lambda: "0second"
        run = tracker.start_run(run_id="multi", resume=True)
        for s in range(20, 35):
            run.log({"loss": 1.0 - s * 0.01, "extra": True}, step=s)
        run.finish()
    """)
    ids["multi"] = "multi"
    child(store, """
        import os, signal, tracker
        run = tracker.start_run("ids", "crashed", run_id="crash", config={"lr": 0.5})
        for i in range(5):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    ids["crash"] = "crash"
    return ids


def to_layout_5(url: str) -> None:
    """The database as layout 5 left it: no tags or search columns, no end or duration rows, and trigger functions
    that derive none."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE tracker_runs DROP COLUMN tags, DROP COLUMN search")  # and the tags' index
        conn.execute("DROP FUNCTION tracker_info_tags(json)")
        conn.execute("DROP FUNCTION tracker_info_search(text, text, text, json, text, text)")
        conn.execute("DELETE FROM tracker_sort_values WHERE key IN ('ended_at', 'duration')")
        conn.execute("CREATE OR REPLACE FUNCTION tracker_sort_times(ids text[]) RETURNS void LANGUAGE sql AS "
                     "'SELECT'")
        conn.execute("DELETE FROM tracker_layout WHERE layout > 5")
