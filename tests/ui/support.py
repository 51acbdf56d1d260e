"""Helpers of the dashboard tests: stores with known runs, a live server, strict JSON."""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import tracker
from tracker.core.format import encode_line

XSS = "<img src=x onerror=alert(1)>"
BIG_N = 1_000_000
SPIKE_AT = 777_777
SPIKE = 1e6
NAN_FROM, NAN_TO = 400_000, 410_000


def strict_json(text: str) -> Any:
    """Parse refusing NaN and Infinity (RFC 8259 only)."""

    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


def make_runs(store: Path) -> dict[str, str]:
    """A store with runs of known content; returns {label: run id}."""
    ids = {}
    with tracker.start_run(project="vision", name="alpha", store=store, tags=["baseline", "gpu"],
                           config={"lr": 0.01, "optim": {"name": "adam", "beta": 0.9}, "seed": 1}) as run:
        for i in range(50):
            run.log({"loss": 1.0 / (i + 1), "acc": i / 50}, step=i)
        run.log({"val_loss": 0.5}, step=49)
        ids["alpha"] = run.id
    try:
        with tracker.start_run(project="vision", name="beta", store=store, tags=["gpu"],
                               config={"lr": 0.1, "optim": {"name": "adam", "beta": 0.9}, "seed": 1}) as run:
            ids["beta"] = run.id
            for i in range(30):
                run.log({"loss": 2.0 / (i + 1), "acc": i / 40 if i != 10 else math.nan}, step=i)
            raise ValueError("loss diverged at step 30")
    except ValueError:
        pass
    with tracker.start_run(project="nlp", name=XSS, store=store, tags=[XSS], config={XSS: XSS}) as run:
        run.log({"loss": 0.3}, step=0)
        ids["xss"] = run.id
    for rid in ("abc111", "abc222"):
        with tracker.start_run(project="ids", name=f"run {rid}", store=store, run_id=rid) as run:
            run.log({"loss": 1.0}, step=0)
        ids[rid] = rid
    return ids


def make_big_run(store: Path) -> str:
    """A finished run of BIG_N metrics records: a spike at SPIKE_AT, NaN from NAN_FROM to NAN_TO.

    The run is started and finished by the API; its records are written with the
    core's line encoder (the same bytes ``run.log`` writes), which is faster.
    """
    with tracker.start_run(project="big", name="million", store=store) as run:
        pass
    seg = next(p for p in Path(run.path).glob("*.jsonl"))
    first, finish = seg.read_bytes().splitlines()[:2]
    start_ev, fin_ev = json.loads(first), json.loads(finish)
    w, t0 = start_ev["w"], start_ev["time"]
    with open(seg, "wb") as f:
        f.write(first + b"\n")
        buf = []
        for i in range(BIG_N):
            y = SPIKE if i == SPIKE_AT else (math.nan if NAN_FROM <= i < NAN_TO else 1.0 / (i + 1))
            buf.append(encode_line({"v": 1, "kind": "record", "schema": "metrics", "step": i,
                                    "time": t0 + i * 1e-3, "w": w, "seq": i + 2, "data": {"loss": y}}))
            if len(buf) >= 100_000:
                f.write(b"".join(buf))
                buf = []
        f.write(b"".join(buf))
        fin_ev.pop("crc")
        fin_ev["seq"] = BIG_N + 2
        fin_ev["time"] = t0 + BIG_N * 1e-3
        fin_ev["data"].update(records=BIG_N, max_step=BIG_N - 1, last={"loss": 1.0 / BIG_N})
        f.write(encode_line(fin_ev))
    return run.id


def snapshot(store: Path) -> dict[str, tuple[int, int]]:
    """Every path under the store with its size and mtime."""
    out = {}
    for root, dirs, files in os.walk(store):
        for name in dirs + files:
            p = Path(root) / name
            st = p.stat()
            out[str(p.relative_to(store))] = (st.st_size, st.st_mtime_ns)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """uvicorn serving an app in a thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    access_log=False, timeout_graceful_shutdown=1))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def make_plugin_runs(store: Path) -> dict[str, str]:
    """One run per bundled plugin with records its panels draw; returns {plugin: run id}."""
    import numpy as np

    ids = {}
    with tracker.start_run(project="fft-study", name="fft panels", store=store) as run:
        for model, scale in (("butterfly", 1.0), ("gated", 0.5)):
            for step in range(0, 200, 10):
                loss = scale * 2.0 / (step + 1) + 1e-3
                run.log_record("fft.loss_point", step=step, model_id=model, total_loss=loss, mel_err=loss / 2,
                               spec_err=loss / 3, welch_err=loss / 4, mean_gate=0.8)
        gates = np.linspace(0.05, 1.0, 6 * 8)
        run.log_record("fft.heatmap", step=200, model_id="gated", stages=6, butterflies=8, gates=gates.tolist())
        xs, ys = np.linspace(-1, 1, 9), np.linspace(-1, 1, 5)
        z = (xs[None, :] - 0.25) ** 2 + (ys[:, None] + 0.5) ** 2 + 0.1
        run.log_record("fft.landscape", step=200, model_id="gated", x_label="twiddle angle", y_label="gate bias",
                       x=xs.tolist(), y=ys.tolist(), z=z.tolist())
        ids["fft_study"] = run.id
    with tracker.start_run(project="phase_trainer", name="phase panels", store=store) as run:
        step = 0
        for cycle in range(2):
            for phase, n in (("FULL", 8), ("PREDICT", 6), ("CORRECT", 4)):
                for k in range(n):
                    run.log_record("phase.step", step=step, phase=phase, phase_step=k, cycle=cycle,
                                   loss=1.0 / (step + 1), phase_changed=k == 0)
                    step += 1
        ids["phase_trainer"] = run.id
    with tracker.start_run(project="ptq", name="ptq panels", store=store) as run:
        for name, (out, inp) in (("fc1", (64, 32)), ("fc2", (32, 64)), ("head", (10, 32))):
            scale = 0.01 * (out / 32)
            run.log_record("ptq.layer", name=name, shape=[out, inp], scale=scale, w_min=-1.0, w_max=1.0,
                           max_abs_err=scale / 2 * 0.9, mse=scale**2 / 12, bytes_fp32=4 * out * inp + 4 * out,
                           bytes_int8=out * inp + 8 * out)
        ids["ptq"] = run.id
    with tracker.start_run(project="quant-analysis", name="quant panels", store=store) as run:
        for tensor in ("conv1", "embedding"):
            for gran in ("per_tensor", "per_channel"):
                for bits in (4, 6, 8):
                    sqnr = 6.02 * bits + 1.76 - (3.0 if gran == "per_tensor" else 0.5)
                    run.log_record("quant.error", tensor=tensor, bits=bits, granularity=gran, mode="symmetric",
                                   mse=10 ** (-sqnr / 10), mae=0.01, max_error=0.02, sqnr_db=sqnr,
                                   outlier_rate=0.0, num_samples=1000, theoretical_max_error=0.02)
        ids["quant_analysis"] = run.id
    return ids


def wait(driver: Any, predicate: Any, timeout: float = 15.0, what: str = "condition") -> Any:
    """Poll ``predicate(driver)`` until it is truthy (stale or missing elements count as not yet), or fail
    naming ``what`` and the last value."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate(driver)
        except (StaleElementReferenceException, NoSuchElementException, IndexError):
            last = None
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
