"""A lab's store for the scale benchmarks: N finished runs of 10 steps, written directly as segment lines.

``start_run`` costs milliseconds a run (a writer process's start, its environment
record); a lab of 100,000 runs is made here in one process instead, each run's
segment written with the store's own line encoder (:func:`tracker.core.format.encode_line`),
so every line is a real line with its CRC, and readers cannot tell these runs from logged ones.
The runs differ where a lab's do: project, group, tags, config (a log-uniform ``lr``,
a batch size, an optimizer), status, start times an hour apart in id order shuffled, and
``loss`` / ``acc`` curves that depend on the config.

Stores are cached under ``benchmarks/.cache/`` (gitignored) by run count: made once, reused.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

CACHE = Path(os.environ.get("TRACKER_BENCH_CACHE", Path(__file__).resolve().parent / ".cache"))
PROJECTS = ("vision", "speech", "nlp", "rl", "fft")
OPTIMIZERS = ("adam", "sgd", "adamw")
STEPS = 10


def _segment(rng: random.Random, i: int, run_id: str, t0: float) -> bytes:
    from tracker.core.format import RECORD, RUN_FINISHED, RUN_STARTED, encode_line, event

    writer = f"lab-{1000 + i % 50}-{run_id[:6]}"
    project = PROJECTS[i % len(PROJECTS)]
    lr = 10 ** rng.uniform(-5, -1)
    config = {"lr": lr, "batch": rng.choice((16, 32, 64, 128)), "optim": {"name": rng.choice(OPTIMIZERS)},
              "seed": i}
    tags = [f"exp{i % 20}"] + (["baseline"] if i % 7 == 0 else [])
    group = f"{project}-g{i % 100}"
    start = {"host": "lab", "pid": 1000 + i % 50, "proc_start": "1", "writer": writer, "name": f"{project}-{i}",
             "project": project, "config": config, "tags": tags, "group": group, "job_type": "train",
             "env": {"host": "lab", "python": "3.11", "platform": "Linux", "argv": ["train.py"], "cwd": "/lab",
                     "git_commit": None, "user": None}, "resumed": False}
    lines = [encode_line(event(RUN_STARTED, None, None, t0, writer, 1, start))]
    base = 2.0 + abs(rng.gauss(0, 0.3)) + abs(lr - 1e-3) * 10
    loss = acc = 0.0
    for step in range(STEPS):
        loss = base / (1 + step) + rng.uniform(0, 0.05)
        acc = 1 - loss / (base + 1)
        lines.append(encode_line(event(RECORD, "metrics", step, t0 + 1 + step, writer, step + 2,
                                       {"loss": loss, "acc": acc})))
    status = "failed" if i % 23 == 0 else "finished"
    error = {"type": "ValueError", "message": "diverged", "traceback": ""} if status == "failed" else None
    lines.append(encode_line(event(RUN_FINISHED, None, None, t0 + 12, writer, STEPS + 2,
                                   {"status": status, "error": error,
                                    "records": STEPS, "max_step": STEPS - 1, "last": {"loss": loss, "acc": acc}})))
    return b"".join(lines)


def write_runs(store: Path, n: int, *, seed: int = 0, start: int = 0, t0: float = 1.70e9) -> list[str]:
    """Write runs ``start .. start + n - 1`` into ``store`` (one folder and one segment each); their ids."""
    rng = random.Random(seed + start)
    runs = store / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    ids = []
    for i in range(start, start + n):
        run_id = f"{rng.getrandbits(48):012x}"
        folder = runs / run_id
        folder.mkdir()
        body = _segment(rng, i, run_id, t0 + 60.0 * i)
        with open(folder / f"lab-{1000 + i % 50}-{run_id[:6]}.jsonl", "wb") as f:
            f.write(body)
        ids.append(run_id)
    return ids


def lab_store(n: int, *, indexed: bool = True) -> Path:
    """The cached store of ``n`` runs (made on first use); ``indexed``: its derived data built too."""
    store = CACHE / f"lab-{n}"
    done = store / ".complete"
    if not done.exists():
        if store.exists():
            shutil.rmtree(store)
        write_runs(store, n)
        done.write_text(str(n))
    if indexed and not (store / "index" / "catalog.idx").exists():
        import tracker

        tracker.open_store(store).runs()
    return store


def fresh_copy(n: int, dest: Path) -> Path:
    """A never-read copy of the cached store of ``n`` runs (no ``index/``) under ``dest`` (hard links)."""
    src = lab_store(n, indexed=False)
    out = dest / f"fresh-{n}"
    for rid in os.listdir(src / "runs"):
        (out / "runs" / rid).mkdir(parents=True)
        for name in os.listdir(src / "runs" / rid):
            os.link(src / "runs" / rid / name, out / "runs" / rid / name)
    return out


if __name__ == "__main__":
    import sys
    import time

    t = time.perf_counter()
    path = lab_store(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000, indexed="--index" in sys.argv)
    print(path, f"{time.perf_counter() - t:.1f} s")
