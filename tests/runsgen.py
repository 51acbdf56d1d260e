"""Stores of many small runs for the runs list's tests, written as a writer writes them (real segment lines)."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from tracker.core.format import RECORD, RUN_FINISHED, RUN_STARTED, encode_line, event


def write_store(root: Path, seed: int, n: int) -> Path:
    """A store of ``n`` finished or failed runs, written as a writer writes them, full of ties and gaps."""
    rng = random.Random(seed)
    store = root / f"store-{seed}"
    for i in range(n):
        run_id = f"{rng.getrandbits(40):010x}" if rng.random() < 0.8 else f"R{i}_{rng.choice('aZ-')}"
        writer = f"host-{100 + i}-{rng.getrandbits(24):06x}"
        config: dict[str, Any] = {}
        lr = rng.choice([0.1, 0.01, 1e-3, 3, "auto", True, None, [1, 2], "x", 0.1])
        if lr is not None:
            config["lr"] = lr
        if rng.random() < 0.7:
            config["opt"] = {"name": rng.choice(["adam", "sgd", "Adam", "é"])}
        if rng.random() < 0.5:
            config["flag"] = rng.choice([True, False])
        t0 = 1.7e9 + rng.choice([0, 0, 60, 120, 3600 * rng.random()])
        start = {"host": "host", "pid": 100 + i, "writer": writer, "name": rng.choice(["a", "b", "B", "run-1", "é"]),
                 "project": rng.choice(["p", "q", "Q"]), "config": config,
                 "tags": rng.sample(["t1", "t2", "t3"], rng.randint(0, 2)),
                 "group": rng.choice([None, "g1", "g2"]), "job_type": rng.choice([None, "train"]), "resumed": False}
        lines = [encode_line(event(RUN_STARTED, None, None, t0, writer, 1, start))]
        seq = 1
        last: dict[str, Any] = {}
        steps = rng.randint(0, 4)
        for step in range(steps):
            data: dict[str, Any] = {}
            if rng.random() < 0.8:
                data["loss"] = rng.choice([0.5, 0.25, rng.random(), math.nan])
            if rng.random() < 0.6:
                data["acc"] = rng.choice([0.9, rng.random(), math.nan])
            seq += 1
            lines.append(encode_line(event(RECORD, "metrics", step, t0 + 1 + step, writer, seq, data)))
            last.update(data)
        status = rng.choice(["finished", "finished", "failed"])
        error = {"type": "ValueError", "message": "x", "traceback": ""} if status == "failed" else None
        lines.append(encode_line(event(RUN_FINISHED, None, None, t0 + 10 + rng.choice([0, 5]), writer, seq + 1,
                                       {"status": status, "error": error, "records": steps,
                                        "max_step": steps - 1 if steps else None, "last": last})))
        folder = store / "runs" / run_id
        folder.mkdir(parents=True)
        (folder / f"{writer}.jsonl").write_bytes(b"".join(lines))
    return store


ADDER = """
import sys, tracker
store, prefix = sys.argv[1], sys.argv[2]
n = 0
for line in sys.stdin:
    for _ in range(int(line)):
        n += 1
        with tracker.start_run(project="p", name=f"{prefix}-{n}", config={"lr": n / 7}, store=store) as run:
            run.log({"loss": 1.0 / n, "acc": 0.5}, step=0)
    print("added", n, flush=True)
"""


class Adder:
    """A writer process that adds ``n`` finished runs to a store each time it is asked (:meth:`add`)."""

    def __init__(self, store: Path, prefix: str = "new") -> None:
        import subprocess
        import sys

        from .childenv import child_environ

        self.proc = subprocess.Popen([sys.executable, "-c", ADDER, str(store), prefix], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=child_environ())

    def add(self, n: int) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.startswith("added"), line

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)
