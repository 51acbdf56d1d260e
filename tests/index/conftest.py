"""A store with everything the index must answer exactly: odd values, steps and segments, edits, live runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker
from tests.index.support import run_child

INF = float("inf")
NAN = float("nan")

LIVE = """
import sys, time, tracker
run = tracker.start_run(project="live", name="{name}", store=sys.argv[1], run_id="{run_id}", system_metrics=False)
for i in range({n}):
    run.log({{"loss": 1.0 / (i + 1), "i": i}}, step=i)
print("ready", flush=True)
{after}
"""


def start_live(store: Path, run_id: str, n: int, after: str = "time.sleep(600)") -> subprocess.Popen:
    """A child that logs ``n`` records to run ``run_id``, prints ``ready``, then runs ``after``."""
    root = Path(tracker.__file__).parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", LIVE.format(name=run_id, run_id=run_id, n=n, after=after),
                             str(store)], env=env, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def fill(store: Path) -> None:
    """Finished, failed, resumed (two segments) and edited runs with NaN, infinities and odd steps."""
    with tracker.start_run(project="odd", name="values", store=store, run_id="values", system_metrics=False) as run:
        for i in range(50):
            run.log({"loss": NAN if i % 7 == 0 else 1.0 / (i + 1), "grad": INF if i == 3 else -INF if i == 4 else i,
                     "flag": i % 2 == 0, "count": i}, step=i)
        run.log({"loss": 0.5}, step=10)  # a repeated step
        run.log({"loss": 0.25, "late": 1.5}, step=2)  # out of order
        run.log({}, step=60)
        run.log_record("quant.error", step=5, tensor="w", bits=8, granularity="per_tensor", mode="symmetric",
                       mse=0.1, mae=0.1, max_error=0.2, sqnr_db=INF, outlier_rate=0.0, num_samples=10,
                       theoretical_max_error=0.3)
        run.log_record("ptq.layer", step=6, name="fc", shape=[2, 3], scale=0.1, w_min=-1.0, w_max=1.0,
                       max_abs_err=0.01, mse=0.1, bytes_fp32=24, bytes_int8=6)
    with pytest.raises(RuntimeError):
        with tracker.start_run(project="odd", name="fails", store=store, run_id="fails", system_metrics=False) as run:
            run.log({"loss": 2.0})
            raise RuntimeError("diverged")
    with tracker.start_run(project="two", name="resumed", store=store, run_id="resumed", system_metrics=False) as r:
        for i in range(20):
            r.log({"loss": 10.0 - i}, step=i)
    # A second writer process resumes it: a second segment, merged in log order.
    run_child("import sys, tracker\n"
              "with tracker.start_run(store=sys.argv[1] if len(sys.argv) > 1 else None, run_id='resumed', resume=True,"
              " system_metrics=False) as r:\n"
              "    [r.log({'loss': -1.0 * i, 'acc': 0.5}) for i in range(20)]\n".replace(
                  "sys.argv[1] if len(sys.argv) > 1 else None", repr(str(store))))
    st = tracker.open_store(store)
    st.rename("values", "renamed")
    st.tag("values", add=["a", "b"])
    st.note("values", "a note")
    st.update_config("values", {"lr": NAN, "layers": [1, 2]})
    st.update_summary("values", {"best": INF})


@pytest.fixture
def rich_store(tmp_path: Path) -> Iterator[Path]:
    """The store of :func:`fill`, plus a crashed run (its writer killed) and a running one."""
    store = tmp_path / "store"
    fill(store)
    crashed = start_live(store, "crashed", 30)
    crashed.send_signal(signal.SIGKILL)
    crashed.wait()
    live = start_live(store, "running", 40)
    try:
        yield store
    finally:
        live.kill()
        live.wait()
