"""Importing an MLflow run: time per point and peak memory, against reading the same files only.

Builds an ``mlruns`` folder in MLflow's file layout with one run of N points
(two metrics logged together, one line each per step), then in a fresh
process each:

- floor: read and parse every metric line (what any importer must do);
- import: ``tracker import mlflow`` into an empty store.

Prints one JSON line per figure: medians of ``--repeat`` rounds, the ratio
import / floor, and the peak resident memory of each process for N and 10*N
points (constant memory means the two peaks are about the same).

Usage::

    python benchmarks/bench_import.py [--points 100000] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

FLOOR = """
import resource, sys, time
from pathlib import Path
t = time.perf_counter()
n = 0
for path in sorted(Path(sys.argv[1]).rglob("metrics/*")):
    with open(path, "rb") as f:
        for line in f:
            ts, value, step = line.split()
            int(ts), float(value), int(step)
            n += 1
print(time.perf_counter() - t, n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

IMPORT = """
import resource, sys, time
from tracker.integrations.importers import import_runs
from tracker.integrations.importers.mlflow import mlflow_runs
t = time.perf_counter()
[result] = import_runs(mlflow_runs(sys.argv[1]), store=sys.argv[2])
print(time.perf_counter() - t, result.records, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_mlruns(root: Path, points: int) -> Path:
    """An mlruns folder with one experiment and one run of ``points`` steps of two metrics."""
    exp = root / "mlruns" / "1"
    run = exp / "0123456789abcdef0123456789abcdef"
    (run / "metrics").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "tags").mkdir()
    (exp / "meta.yaml").write_text("experiment_id: '1'\nname: bench\nlifecycle_stage: active\n")
    t0 = 1_700_000_000_000
    (run / "meta.yaml").write_text(
        f"run_id: {run.name}\nrun_name: bench\nexperiment_id: '1'\nstatus: 3\nstart_time: {t0}\n"
        f"end_time: {t0 + points}\nlifecycle_stage: active\n")
    (run / "params" / "lr").write_text("0.01")
    for name in ("loss", "acc"):
        with open(run / "metrics" / name, "w") as f:
            f.writelines(f"{t0 + i} {1.0 / (i + 1)} {i}\n" for i in range(points))
    return root / "mlruns"


def measure(code: str, *args: str) -> tuple[float, int, int]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    seconds, count, rss_kib = out.stdout.split()
    return float(seconds), int(count), int(rss_kib)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a few thousand points, one round")
    args = parser.parse_args()
    points, repeat = (2_000, 1) if args.quick else (args.points, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        peaks = {}
        for n in (points, 10 * points):
            mlruns = make_mlruns(base / f"src-{n}", n)
            floors, imports = [], []
            for i in range(repeat if n == points else 1):
                floors.append(measure(FLOOR, str(mlruns)))
                imports.append(measure(IMPORT, str(mlruns), str(base / f"store-{n}-{i}")))
            peaks[n] = (max(r[2] for r in floors), max(r[2] for r in imports))
            if n == points:
                floor = statistics.median(r[0] for r in floors)
                took = statistics.median(r[0] for r in imports)
                print(json.dumps({"benchmark": "import", "name": "mlflow import, us per point",
                                  "points": 2 * n, "value": took / (2 * n) * 1e6,
                                  "floor": floor / (2 * n) * 1e6, "ratio": took / floor}))
        small, large = points, 10 * points
        print(json.dumps({"benchmark": "import", "name": "peak RSS MiB, 10x the points / 1x",
                          "points": [2 * small, 2 * large], "value": peaks[large][1] / 1024,
                          "floor": peaks[small][1] / 1024, "ratio": peaks[large][1] / peaks[small][1]}))


if __name__ == "__main__":
    main()
