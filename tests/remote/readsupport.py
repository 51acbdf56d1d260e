"""What the remote reading tests share: a store of every kind of record, a server process, NaN-aware equality."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import tracker


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
