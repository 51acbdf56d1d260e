"""Logging: ``run.log`` of 4 floats next to the floor (``orjson.dumps`` + ``os.write``).

Figures: the cost per call with automatic and with explicit steps (CPU time of
the process, and wall time), after ``define_metric`` and with a string beside
the floats, and the cost per call for runs of 1,000 to 1,000,000 steps, each
next to a floor of the same length; then, in a child process with its own
floor, the automatic step without the C extension (``TRACKER_PURE_PYTHON=1``).
"""

from __future__ import annotations

import os
import subprocess
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
    if args.python_only:
        return python_only(args)
    n = 2_000 if args.quick else 20_000
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    floor_name = f"{FLOOR_ENCODER} + os.write"
    with scratch() as tmp:
        floor = FloorWriter(tmp / "floor")
        values = dict(FOUR_FLOATS)
        with tracker.start_run(project="bench", name="log", store=tmp / "store", system_metrics=False) as run:
            run.log(values)  # the first record resolves the route
            res = side_by_side(lambda: per_call(lambda i: run.log(values), n), lambda: floor.run(values, n),
                               args.repeat)
            emit("log", "run.log, 4 floats, automatic step", unit="us/call", calls=n, clock="cpu",
                 floor_name=floor_name, target=2.3, **res)
            res = side_by_side(lambda: per_call(lambda i: run.log(values, step=i), n),
                               lambda: floor.run(values, n), args.repeat)
            emit("log", "run.log, 4 floats, explicit step", unit="us/call", calls=n, clock="cpu",
                 floor_name=floor_name, target=2.3, **res)
            line_floor = _line_format_floor(tmp / "floor", run.writer_id)
            res = side_by_side(lambda: line_floor(values, n), lambda: floor.run(values, n), args.repeat)
            emit("log", "floor of the exact contract line: dumps of the event + CRC-32 + os.write", unit="us/call",
                 calls=n, clock="cpu", floor_name=floor_name, **res)
            line_floor = _line_prefix_floor(tmp / "floor", run.writer_id)
            res = side_by_side(lambda: line_floor(values, n), lambda: floor.run(values, n), args.repeat)
            emit("log", "the same line built from precomputed bytes: constant prefix and its CRC, dumps of the "
                 "values, %d of step and seq", unit="us/call", calls=n, clock="cpu", floor_name=floor_name, **res)
            wall = time.perf_counter
            res = side_by_side(lambda: per_call(lambda i: run.log(values), n, wall),
                               lambda: _wall_floor(floor, values, n), args.repeat)
            emit("log", "run.log, 4 floats, wall clock", unit="us/call", calls=n, clock="wall",
                 floor_name=floor_name, **res)
        # W&B-style runs: after define_metric (nothing pending) plain floats keep the direct path;
        # a string beside them is a text record of its own at the same step.
        with tracker.start_run(project="bench", name="log-wandb", store=tmp / "store", system_metrics=False) as run:
            run.define_metric("loss", summary="min")
            run.log(values)
            res = side_by_side(lambda: per_call(lambda i: run.log(values), n), lambda: floor.run(values, n),
                               args.repeat)
            emit("log", "run.log, 4 floats, after define_metric", unit="us/call", calls=n, clock="cpu",
                 floor_name=floor_name, **res)
            texts = {**values, "phase": "train"}
            res = side_by_side(lambda: per_call(lambda i: run.log(texts), n), lambda: floor.run(values, n),
                               args.repeat)
            emit("log", "run.log, 4 floats and a string (two lines: metrics, text)", unit="us/call", calls=n,
                 clock="cpu", floor_name=floor_name, **res)
        for size in sizes:
            with tracker.start_run(project="bench", name=f"log-{size}", store=tmp / "store",
                                   system_metrics=False) as run:
                run.log(values)
                rounds = 1 if size >= 1_000_000 else (args.repeat if size <= 10_000 else 3)
                res = side_by_side(lambda: per_call(lambda i: run.log(values), size),  # noqa: B023
                                   lambda: floor.run(values, size), rounds)  # noqa: B023
            emit("log", f"run.log, 4 floats, {size:,} steps", unit="us/call", calls=size, clock="cpu",
                 floor_name=floor_name, steps=size, **res)
        floor.close()
    # The same figure without the C extension (a machine without a C compiler), in a child process
    # that measures its own floor beside it.
    child = subprocess.run([sys.executable, __file__, "--python-only", "--repeat", str(args.repeat)]
                           + (["--quick"] if args.quick else []),
                           env={**os.environ, "TRACKER_PURE_PYTHON": "1"}, capture_output=True, text=True)
    if child.returncode != 0:
        raise RuntimeError(f"the TRACKER_PURE_PYTHON=1 round failed: {child.stderr[-2000:]}")
    sys.stdout.write(child.stdout)


def python_only(args) -> None:  # noqa: ANN001 - argparse namespace
    """``run.log`` of 4 floats through the Python methods alone (``TRACKER_PURE_PYTHON=1``)."""
    from tracker.write.route import fast_append

    if fast_append is not None:
        raise RuntimeError("--python-only needs TRACKER_PURE_PYTHON=1")
    n = 2_000 if args.quick else 20_000
    with scratch() as tmp:
        floor = FloorWriter(tmp / "floor")
        values = dict(FOUR_FLOATS)
        with tracker.start_run(project="bench", name="log-python", store=tmp / "store", system_metrics=False) as run:
            run.log(values)
            res = side_by_side(lambda: per_call(lambda i: run.log(values), n), lambda: floor.run(values, n),
                               args.repeat)
        emit("log", "run.log, 4 floats, automatic step, without the C extension (TRACKER_PURE_PYTHON=1)",
             unit="us/call", calls=n, clock="cpu", floor_name=f"{FLOOR_ENCODER} + os.write", **res)
        floor.close()


def _line_format_floor(folder: Path, writer_id: str):  # noqa: ANN202
    """What the documented line format costs with no checks, lock or bookkeeping: the least tracker can do."""
    import os
    import zlib

    fd = os.open(folder / "format-floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    write, crc32, dumps, clock = os.write, zlib.crc32, __import__("common")._dumps, time.time
    env = {"v": 1, "kind": "record", "schema": "metrics", "step": 0, "time": 0.0, "w": writer_id, "seq": 0,
           "data": None}

    def run(values: dict, n: int) -> float:
        def one(i: int) -> None:
            env["step"] = i
            env["time"] = clock()
            env["seq"] = i
            env["data"] = values
            head = dumps(env)[:-1]
            write(fd, head + b',"crc":"%08x"}\n' % crc32(head))

        return per_call(one, n)

    return run


def _line_prefix_floor(folder: Path, writer_id: str):  # noqa: ANN202
    """The contract line assembled from what is constant per writer and schema, CRC continued from the prefix's."""
    import os
    import zlib

    import orjson

    fd = os.open(folder / "prefix-floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    write, crc32, dumps, clock = os.write, zlib.crc32, orjson.dumps, time.time
    prefix = b'{"v":1,"kind":"record","schema":"metrics","step":'
    prefix_crc = crc32(prefix)
    body = b'%d,"time":%b,"w":"' + writer_id.encode() + b'","seq":%d,"data":%b'

    def run(values: dict, n: int) -> float:
        def one(i: int) -> None:
            rest = body % (i, dumps(clock()), i, dumps(values))
            write(fd, b'%b%b,"crc":"%08x"}\n' % (prefix, rest, crc32(rest, prefix_crc)))

        return per_call(one, n)

    return run


def _wall_floor(floor: FloorWriter, values: dict, n: int) -> float:
    import os

    fd, write, dumps = floor.fd, os.write, __import__("common")._dumps
    start = time.perf_counter()
    for _ in range(n):
        write(fd, dumps(values) + b"\n")
    return (time.perf_counter() - start) / n


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0], python_only=dict(
        action="store_true", help="only run.log without the C extension (run with TRACKER_PURE_PYTHON=1)"))))
