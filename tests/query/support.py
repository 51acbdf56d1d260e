"""Helpers of the query tests: a store with every kind of run, and the readers' answers to compare with."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import tracker
from tracker.core.format import encode_nonfinite

NAN, INF = float("nan"), float("inf")


def child(store: Path, code: str, env: dict[str, str] | None = None, wait: bool = True) -> subprocess.Popen:
    """Run ``code`` in a fresh Python process with ``store`` as its store."""
    full = dict(os.environ, TRACKER_STORE=str(store), **(env or {}))
    full.pop("TRACKER_RUN_ID", None) if not env or "TRACKER_RUN_ID" not in env else None
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=full, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if wait:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode in (0, -signal.SIGKILL), err
    return proc


def build_store(store: Path) -> subprocess.Popen:
    """Runs of every kind; returns the process that keeps run ``live`` running (kill it when done)."""
    with tracker.start_run("p1", "alpha", store=store, run_id="alpha", tags=["x", "y"],
                           config={"lr": 0.01, "batch": 32, "opt": "adam", "name": "cfg", "nested": {"a": 1},
                                   "flag": True}) as run:
        run.log({"loss": 1.0, "acc": 0.5}, step=0)
        run.log({"loss": NAN, "acc": INF}, step=1)
        run.log({"loss": -INF, "ok": True}, step=1)  # a repeated step, kept
        run.log({"loss": 0.25}, step=0)  # out of order, kept
        run.log_record("fft.loss_point", step=2, total_loss=0.5, mel_err=NAN, spec_err=0.1, welch_err=INF,
                       mean_gate=0.7, model_id="m")
    try:
        with tracker.start_run("p2", "beta", store=store, run_id="beta",
                               config={"lr": 1, "batch": 64, "opt": "sgd", "flag": False}) as run:
            run.log({"loss": 3.0}, step=0)
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with tracker.start_run("p1", "multi", store=store, run_id="multi", config={"lr": 0.1}) as run:
        run.log({"loss": 2.0}, step=0)
    child(store, """
        import tracker
        run = tracker.start_run(run_id="multi", resume=True)
        run.log({"loss": 1.5, "extra": 7})
        run.log({"loss": 1.25})
        run.finish()
    """)
    with tracker.start_run(store=store, run_id="multi", resume=True) as run:
        run.log({"loss": 1.0})
    child(store, """
        import os, signal, tracker
        run = tracker.start_run("p1", "crashed", run_id="crash", config={"lr": 0.5})
        for i in range(5):
            run.log({"loss": 1.0 / (i + 1), "early": i}, step=i)
        run.log({"loss": 0.1}, step=5)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    seg = next((store / "runs" / "crash").glob("*.jsonl"))
    with open(seg, "ab") as f:
        f.write(b'{"v":1,"kind":"record","schema":"metrics","step":6,"time":1')  # torn by the crash
    # A crashed writer whose last line lacks only its newline: whole JSON, still torn.
    child(store, """
        import os, signal, tracker
        run = tracker.start_run("p3", "cut", run_id="cut")
        run.log({"loss": 4.0}, step=0)
        run.log({"loss": 3.0}, step=1)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    seg = next((store / "runs" / "cut").glob("*.jsonl"))
    data = seg.read_bytes()
    seg.write_bytes(data[:-1])
    # Damage in the middle of a finished run: a changed byte and a line that is not JSON.
    with tracker.start_run("p3", "damaged", store=store, run_id="damaged") as run:
        for i in range(6):
            run.log({"loss": float(i)}, step=i)
    seg = next((store / "runs" / "damaged").glob("*.jsonl"))
    lines = seg.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"loss":1.0', b'"loss":9.0')
    lines.insert(4, b'{"v":1,"kind":"rec garbage')
    seg.write_bytes(b"\n".join(lines))
    live = child(store, """
        import sys, time, tracker
        run = tracker.start_run("p1", "live", run_id="live", config={"lr": 0.2})
        run.log({"loss": 0.9}, step=0)
        print("ready", flush=True)
        sys.stdin.read()  # running until the tests are done (killed) or the test process is gone
    """, wait=False)
    assert live.stdout.readline().strip() == "ready"
    return live


def norm(v: Any) -> Any:
    """A value comparable with ==: NaN and infinities as the store's strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return encode_nonfinite(v)
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    return v


def reader_records(store: Path) -> tuple[list[tuple], list[str]]:
    """Every record as the Python reader returns it, and the warnings it gave."""
    st = tracker.open_store(store)
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for info in st.runs():
            for r in st.run(info.id).records():
                out.append((info.id, r.schema, r.step, r.time, r.writer, r.seq, norm(r.data)))
    return sorted(out, key=repr), sorted({str(w.message) for w in caught})


def reader_metrics(store: Path) -> list[tuple]:
    """The long format of every ``metrics`` record, from the Python reader."""
    st = tracker.open_store(store)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in st.runs():
            for r in st.run(info.id).records("metrics"):
                for k, v in r.data.items():
                    out.append((info.id, r.step, r.time, k, norm(float(v))))
    return sorted(out, key=repr)


def sql_rows(store: Any, sql: str, **kw: Any) -> tuple[list[tuple], list[str]]:
    """Rows of ``store.sql``-style query and the warnings given while building it."""
    from tracker.query import query

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = query(store, sql, **kw).fetchall()
    return rows, sorted({str(w.message) for w in caught})


def wait_for(pred: Any, timeout: float = 20.0, every: float = 0.1) -> Any:
    """Poll ``pred`` until it returns something true (returned) or the timeout passes (AssertionError)."""
    end = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(every)


def run_tracker(*args: str, env: dict[str, str] | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m tracker ARGS`` in a subprocess: exit code, stdout and stderr."""
    full = {k: v for k, v in os.environ.items() if k not in ("TRACKER_STORE", "TRACKER_CONFIG")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True,
                          env=full, timeout=timeout)
