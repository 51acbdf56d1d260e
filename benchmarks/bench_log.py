"""Logging: ``run.log`` of 4 floats next to the floor (``orjson.dumps`` + ``os.write``).

Figures: the cost per call with automatic and with explicit steps (CPU time of
the process, and wall time), and the cost per call for runs of 1,000 to
1,000,000 steps, each next to a floor of the same length.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    FLOOR_ENCODER,
    FOUR_FLOATS,
    FloorWriter,
    emit,
    main_guard,
    parse_args,
    per_call,
    scratch,
    side_by_side,
)

import tracker  # noqa: E402


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    n = 2_000 if args.quick else 20_000
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    floor_name = f"{FLOOR_ENCODER} + os.write"
    with scratch() as tmp:
        floor = FloorWriter(tmp / "floor")
        values = dict(FOUR_FLOATS)
        with tracker.start_run(project="bench", name="log", store=tmp / "store") as run:
            run.log(values)  # the first record resolves the route
            res = side_by_side(lambda: per_call(lambda i: run.log(values), n), lambda: floor.run(values, n),
                               args.repeat)
            emit("log", "run.log, 4 floats, automatic step", unit="us/call", calls=n, clock="cpu",
                 floor_name=floor_name, target=1.5, **res)
            res = side_by_side(lambda: per_call(lambda i: run.log(values, step=i), n),
                               lambda: floor.run(values, n), args.repeat)
            emit("log", "run.log, 4 floats, explicit step", unit="us/call", calls=n, clock="cpu",
                 floor_name=floor_name, target=1.5, **res)
            wall = time.perf_counter
            res = side_by_side(lambda: per_call(lambda i: run.log(values), n, wall),
                               lambda: _wall_floor(floor, values, n), args.repeat)
            emit("log", "run.log, 4 floats, wall clock", unit="us/call", calls=n, clock="wall",
                 floor_name=floor_name, **res)
        for size in sizes:
            with tracker.start_run(project="bench", name=f"log-{size}", store=tmp / "store") as run:
                run.log(values)
                rounds = 1 if size >= 1_000_000 else (args.repeat if size <= 10_000 else 3)
                res = side_by_side(lambda: per_call(lambda i: run.log(values), size),  # noqa: B023
                                   lambda: floor.run(values, size), rounds)  # noqa: B023
            emit("log", f"run.log, 4 floats, {size:,} steps", unit="us/call", calls=size, clock="cpu",
                 floor_name=floor_name, steps=size, **res)
        floor.close()


def _wall_floor(floor: FloorWriter, values: dict, n: int) -> float:
    import os

    fd, write, dumps = floor.fd, os.write, __import__("common")._dumps
    start = time.perf_counter()
    for _ in range(n):
        write(fd, dumps(values) + b"\n")
    return (time.perf_counter() - start) / n


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
