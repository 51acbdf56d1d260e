"""What the remote reading tests share: a store of every kind of record, a server process, NaN-aware equality."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import tracker

from ..childenv import child_environ
from ..ui.support import free_port


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and type(a) is type(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def make_store(root: Path, tmp: Path) -> dict[str, str]:
    weights = tmp / "model.bin"
    weights.write_bytes(b"weights " * 5000)
    ids = {}
    with tracker.start_run(project="vision", name="alpha", config={"lr": 0.1, "optim": {"beta": 0.9}, "x": math.nan},
                           tags=["base"], group="g1", store=root, console=True, environment=True) as run:
        for step in range(30):
            run.log({"loss": 1.0 / (step + 1), "acc": math.nan if step == 4 else step / 30}, step=step)
        print("epoch 1 done")
        print("warning: lr high", file=sys.stderr)
        run.log_artifact(weights, name="model", type="model", aliases=["best"])
        ids["alpha"] = run.id
    time.sleep(0.01)
    with tracker.start_run(project="vision", name="beta", config={"lr": 0.2, "optim": {"beta": 0.99}},
                           group="g1", store=root, console=True) as run:
        run.use_artifact("model:best")
        for step in range(12):
            run.log({"loss": 2.0 / (step + 1), "extra": float(step)}, step=step)
        run.summary["best"] = 0.5
        ids["beta"] = run.id
    time.sleep(0.01)
    with tracker.start_run(project="nlp", name="gamma", store=root) as run:
        run.log({"ppl": math.inf}, step=0)
        ids["gamma"] = run.id
    return ids


class Served:
    """A real ``tracker ui`` process over ``store`` (a folder or a database URL) on a free loopback port."""

    def __init__(self, store: Path | str, log: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "ui", "--port",
                                      str(self.port), "--no-open"], stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**child_environ(), **(env or {})})
        deadline = time.time() + 30
        import socket

        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise RuntimeError(f"the server did not start: {log.read_text()}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
