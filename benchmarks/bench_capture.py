"""Capture: what system sampling, artifacts and histograms cost, each next to a floor.

Figures (medians over rounds that alternate floor and subject):

- ``run.log`` of 4 floats with the system sampler on (every 0.1 s, a hundred
  times the default rate) against the same run with it off: wall time per
  call on the logging thread;
- ``run.log_artifact`` of a 1 GB file (64 MB with ``--quick``), hashed while
  copied into the blob store, against ``cp`` of the same file (wall time);
- ``run.log_histogram`` of 1,000,000 float64 values (64 bins) against
  ``numpy.histogram`` of the same array alone (wall time).

Run: ``python benchmarks/bench_capture.py [--quick]``; one JSON line per figure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FOUR_FLOATS, emit, main_guard, parse_args, per_call, scratch, side_by_side  # noqa: E402

import tracker  # noqa: E402
from tracker.capture.blobs import hash_file  # noqa: E402


def _wall(fn) -> float:  # noqa: ANN001
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_sampling(tmp: Path, args) -> None:  # noqa: ANN001
    import numpy as np

    n = 20_000 if args.quick else 200_000
    values = dict(FOUR_FLOATS)
    on = tracker.start_run(name="sampling-on", store=tmp / "store", system_metrics=0.1)
    off = tracker.start_run(name="sampling-off", store=tmp / "store", system_metrics=False)
    on.log(values)
    off.log(values)
    res = side_by_side(lambda: per_call(lambda i: on.log(values), n, time.perf_counter),
                       lambda: per_call(lambda i: off.log(values), n, time.perf_counter), args.repeat + 2)
    on.finish()
    off.finish()
    samples = len(list(tracker.open_store(tmp / "store").run(on.id).records("system")))
    emit("capture", "run.log, 4 floats, system sampler on (every 0.1 s)", **res, unit="us/call", clock="wall",
         floor_is="the same run.log with the sampler off", samples=samples, target="<= 1.05x",
         psutil=_has("psutil"), numpy=np.__version__)


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def bench_artifact(tmp: Path, args) -> None:  # noqa: ANN001
    size = (64 if args.quick else 1024) << 20
    src = tmp / "big.bin"
    block = os.urandom(1 << 20)
    with open(src, "wb") as f:
        for _ in range(size >> 20):
            f.write(block)
    store = tmp / "astore"
    run = tracker.start_run(name="artifact", store=store, system_metrics=False)
    dest = tmp / "copy.bin"

    def cp() -> float:
        t = _wall(lambda: subprocess.run(["cp", str(src), str(dest)], check=True))
        dest.unlink()
        return t

    def log() -> float:
        t = _wall(lambda: run.log_artifact(src))
        shutil.rmtree(store / "blobs")
        return t

    def sha() -> float:
        return _wall(lambda: hash_file(src))

    cp()  # warm the page cache for both
    res = side_by_side(log, cp, args.repeat)
    alone = side_by_side(sha, cp, args.repeat)
    run.finish()
    seconds = ("value", "floor")
    emit("capture", f"run.log_artifact of a {size >> 20} MB file (hashed while copied)",
         **{k: (round(v / 1e6, 4) if k in seconds else v) for k, v in res.items()},
         unit="s", clock="wall", floor_is="cp of the same file", target="<= 1.3x")
    emit("capture", f"sha256 of the same {size >> 20} MB file alone (no copy)",
         **{k: (round(v / 1e6, 4) if k in seconds else v) for k, v in alone.items()},
         unit="s", clock="wall", floor_is="cp of the same file")


def bench_histogram(tmp: Path, args) -> None:  # noqa: ANN001
    import numpy as np

    a = np.random.default_rng(0).standard_normal(1_000_000)
    run = tracker.start_run(name="histogram", store=tmp / "hstore", system_metrics=False)
    n = 5 if args.quick else 20
    res = side_by_side(lambda: per_call(lambda i: run.log_histogram("w", a), n, time.perf_counter),
                       lambda: per_call(lambda i: np.histogram(a, 64), n, time.perf_counter), args.repeat)
    run.finish()
    emit("capture", "run.log_histogram of 1,000,000 float64 (64 bins)",
         **{k: (round(v / 1e3, 3) if k in ("value", "floor") else v) for k, v in res.items()},
         unit="ms/call", clock="wall", floor_is="numpy.histogram(a, 64) alone")


def body(args) -> None:  # noqa: ANN001
    with scratch() as tmp:
        bench_sampling(tmp, args)
        bench_histogram(tmp, args)
        bench_artifact(tmp, args)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
