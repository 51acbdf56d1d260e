"""Listing: ``Store.runs()`` (what ``tracker runs`` prints) as runs and records grow.

Listing reads a few KiB at each end of every segment, so its cost follows the
number of runs, not their records. Each store is made from one real finished
run whose segment is hard-linked into every run folder (no disk used per run;
the files are real segments). The floor per run is what any lister must do:
list the folder, open the segment, read its first line and its last 4 KiB and
parse both with orjson.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FOUR_FLOATS, emit, main_guard, parse_args, scratch, side_by_side  # noqa: E402

import tracker  # noqa: E402


def make_store(root: Path, template: Path, runs: int) -> Path:
    """A store of ``runs`` copies (hard links) of the template run's segment."""
    store = root / f"store-{runs}-{template.name}"
    if store.exists():
        return store
    (seg,) = template.glob("*.jsonl")
    for i in range(runs):
        folder = store / "runs" / f"run{i:05d}"
        folder.mkdir(parents=True)
        os.link(seg, folder / seg.name)
    return store


def template_run(root: Path, records: int) -> Path:
    """One finished run of ``records`` metrics records; returns its folder."""
    values = dict(FOUR_FLOATS)
    with tracker.start_run(project="bench", name=f"list-{records}", store=root / f"tmpl-{records}") as run:
        for i in range(records):
            run.log(values, step=i)
    return run.path


def floor_list(store: Path) -> int:
    """The floor: first line and last 4 KiB of every segment, parsed."""
    import orjson

    n = 0
    runs = store / "runs"
    with os.scandir(runs) as it:
        for entry in it:
            with os.scandir(entry.path) as segs:
                for seg in segs:
                    with open(seg.path, "rb") as f:
                        orjson.loads(f.readline())
                        size = os.fstat(f.fileno()).st_size
                        f.seek(max(0, size - 4096))
                        orjson.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
            n += 1
    return n


def seconds(fn) -> float:  # noqa: ANN001
    start = time.process_time()
    fn()
    return time.process_time() - start


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    if args.quick:
        run_counts, fixed_records, record_counts, fixed_runs = [20, 40], 1_000, [100, 5_000], 20
    else:
        run_counts, fixed_records, record_counts, fixed_runs = [250, 500, 1_000, 2_000], 10_000, \
            [100, 1_000, 10_000, 100_000], 500
    rounds = args.repeat
    with scratch() as tmp:
        templates = {m: template_run(tmp, m) for m in sorted({fixed_records, *record_counts})}
        curves = [("runs", r, fixed_records) for r in run_counts] + [("records", fixed_runs, m)
                                                                       for m in record_counts]
        for curve, runs, records in curves:
            store = make_store(tmp, templates[records], runs)
            opened = tracker.open_store(store)
            assert len(opened.runs()) == runs
            res = side_by_side(lambda: seconds(opened.runs) / runs,  # noqa: B023
                               lambda: seconds(lambda: floor_list(store)) / runs, rounds)  # noqa: B023
            emit("list", f"Store.runs(), {runs:,} runs of {records:,} records", unit="us/run", curve=curve,
                 runs=runs, records=records, clock="cpu", floor_name="first line + last 4 KiB per segment",
                 **res)
        big = make_store(tmp, templates[fixed_records], run_counts[-1])
        walls = []
        for _ in range(3):
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "tracker", "--store", str(big), "runs", "--format", "json"],
                                 capture_output=True, text=True)
            walls.append(time.perf_counter() - start)
            assert out.returncode == 0, out.stderr
        walls.sort()
        emit("list", f"tracker runs --format json, {run_counts[-1]:,} runs of {fixed_records:,} records",
             unit="s", clock="wall", runs=run_counts[-1], records=fixed_records, value=round(walls[1], 3),
             rounds=3)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
