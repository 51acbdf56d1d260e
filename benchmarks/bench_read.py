"""Reading: ``view.metrics()`` and the summaries of a run of 4-float metric records.

The floor is a plain loop over the same file's lines: ``orjson.loads`` of each
line, its step, time and four values appended to ``array('d')`` columns, then
numpy arrays (no checksum, no merge, the metric names known in advance). Peak
memory is traced with tracemalloc (numpy reports its buffers to it) and
compared with the size of the resulting arrays.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FOUR_FLOATS, emit, main_guard, parse_args, scratch, side_by_side  # noqa: E402

import tracker  # noqa: E402


def make_run(store: Path, n: int) -> str:
    """A finished run of ``n`` metrics records of 4 floats, logged through ``run.log``."""
    values = dict(FOUR_FLOATS)
    # No system sampler: its records would land among the metrics on a run of this length.
    with tracker.start_run(project="bench", name=f"read-{n}", store=store, system_metrics=False) as run:
        log = run.log
        for i in range(n):
            values["loss"] = 1.0 / (i + 1)
            log(values, step=i)
    return run.id


def floor_read(path: Path) -> dict:
    """The floor: orjson.loads of every line into array columns, then numpy arrays."""
    import numpy as np
    import orjson

    loads = orjson.loads
    steps, times = array("q"), array("d")
    cols = {k: array("d") for k in FOUR_FLOATS}
    items = list(cols.items())
    with open(path, "rb") as f:
        for line in f:
            ev = loads(line)
            if ev["kind"] != "record" or ev["schema"] != "metrics":
                continue
            data = ev["data"]
            steps.append(ev["step"])
            times.append(ev["time"])
            for k, a in items:
                a.append(data[k])
    out = {"step": np.frombuffer(steps, dtype=np.int64), "time": np.frombuffer(times)}
    out.update({k: np.frombuffer(a) for k, a in cols.items()})
    return out


def seconds(fn) -> float:  # noqa: ANN001
    start = time.process_time()
    fn()
    return time.process_time() - start


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    n = 5_000 if args.quick else 1_000_000
    rounds = args.repeat if args.quick else min(args.repeat, 5)
    with scratch() as tmp:
        store = tmp / "store"
        run_id = make_run(store, n)
        view = tracker.open_store(store).run(run_id)
        (segment,) = view.segment_paths()
        cols = view.metrics()
        expected = floor_read(segment)
        assert all((cols[k] == expected[k]).all() for k in expected), "metrics() differs from the floor"
        res = side_by_side(lambda: seconds(view.metrics) / n, lambda: seconds(lambda: floor_read(segment)) / n,
                           rounds)
        emit("read", f"view.metrics(), {n:,} records of 4 floats", unit="us/record", records=n, clock="cpu",
             floor_name="orjson.loads loop into arrays", target=1.5, **res)
        res = side_by_side(lambda: seconds(lambda: view.summarize("metrics")) / n,
                           lambda: seconds(lambda: floor_read(segment)) / n, rounds)
        emit("read", f"view.summarize('metrics'), {n:,} records", unit="us/record", records=n, clock="cpu",
             floor_name="orjson.loads loop into arrays", **res)
        res = side_by_side(lambda: seconds(lambda: sum(1 for _ in view.records("metrics"))) / n,
                           lambda: seconds(lambda: floor_read(segment)) / n, rounds)
        emit("read", f"view.records('metrics'), {n:,} records", unit="us/record", records=n, clock="cpu",
             floor_name="orjson.loads loop into arrays", **res)
        arrays = sum(a.nbytes for a in cols.values())
        del cols, expected
        peaks = []
        for fn in (view.metrics, lambda: floor_read(segment)):
            tracemalloc.start()
            kept = fn()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            del kept
            peaks.append(peak)
        emit("read", f"view.metrics() peak memory, {n:,} records", unit="MiB", records=n,
             value=round(peaks[0] / 2**20, 2), floor=round(arrays / 2**20, 2), ratio=round(peaks[0] / arrays, 3),
             floor_name="size of the resulting arrays", target=2.0,
             floor_loop_peak_mib=round(peaks[1] / 2**20, 2), rounds=1)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
