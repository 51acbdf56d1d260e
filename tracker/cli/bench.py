"""``tracker bench``: a few seconds of logging and reading on this machine, next to the floor.

The floor is the least a JSON Lines logger in Python can do per record: one
``orjson.dumps`` and one ``os.write`` of the line (``json.dumps`` when orjson
is not installed). Floor and tracker are timed in alternating rounds in this
process, on a temporary store that is removed afterwards, with this process's
plugins (a plugin that subscribes to records makes logging cost more, and the
figures show it). benchmarks/ in the source tree has the full suite.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import click

from tracker.cli.options import format_option

try:
    import orjson

    _dumps: Callable[[Any], bytes] = orjson.dumps
    _loads: Callable[[bytes], Any] = orjson.loads
    FLOOR = "orjson.dumps + os.write"
except ImportError:  # orjson is a dependency, but a floor must not need it
    import json

    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

    _loads = json.loads
    FLOOR = "json.dumps + os.write"

VALUES = {"loss": 0.41, "acc": 0.93, "lr": 0.001, "grad_norm": 1.37}
READ_RECORDS = 20_000
FFT_POINT = {"total_loss": 0.41, "mel_err": 0.12, "spec_err": 0.08, "welch_err": 0.05, "mean_gate": 0.7}


def _cpu_per_call(fn: Callable[[], Any], n: int) -> float:
    clock = time.process_time
    start = clock()
    for _ in range(n):
        fn()
    return (clock() - start) / n


def _calibrate(fn: Callable[[], Any], batch_seconds: float) -> int:
    n = 64
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        took = time.perf_counter() - start
        if took >= batch_seconds / 4 or n >= 1 << 22:
            return max(16, int(n * batch_seconds / max(took, 1e-9)))
        n *= 4


def _side_by_side(subject: Callable[[], Any], floor: Callable[[], Any], seconds: float,
                  batches: bool = True) -> dict[str, float]:
    """Alternate batches of ``floor`` and ``subject`` for about ``seconds``; medians in µs per call.

    :param batches: calibrate batches of about 50 ms; ``False`` times one call per round.
    """
    import statistics

    n = _calibrate(subject, 0.05) if batches else 1
    m = _calibrate(floor, 0.05) if batches else 1
    subj, base, ratios = [], [], []
    deadline = time.perf_counter() + seconds
    while len(subj) < 3 or (time.perf_counter() < deadline and len(subj) < 200):
        b = _cpu_per_call(floor, m)
        s = _cpu_per_call(subject, n)
        base.append(b)
        subj.append(s)
        ratios.append(s / b if b > 0 else float("inf"))
    return {"value_us": statistics.median(subj) * 1e6, "floor_us": statistics.median(base) * 1e6,
            "ratio": statistics.median(ratios), "rounds": len(subj)}


def run_bench(seconds: float) -> dict[str, Any]:
    """Measure logging (and reading back) here; returns the figures as a document."""
    # Imported here: every start of the CLI imports this module to add the command.
    import platform
    import tempfile
    from pathlib import Path

    from tracker.host.host import get_host
    from tracker.store import open_store
    from tracker.write.api import start_run

    measurements = []
    with tempfile.TemporaryDirectory(prefix="tracker-bench-") as tmp:
        folder = Path(tmp)
        fd = os.open(folder / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        write = os.write
        has_fft = "fft.loss_point" in get_host().schemas
        share = seconds / (3 + has_fft)
        values = dict(VALUES)
        with start_run(project="tracker-bench", name="bench", store=folder / "store") as run:
            run.log(values)
            res = _side_by_side(lambda: run.log(values), lambda: write(fd, _dumps(values) + b"\n"), share)
            measurements.append({"name": "run.log, 4 floats", "unit": "us/call", **res})
            res = _side_by_side(lambda: run.log(values, step=7), lambda: write(fd, _dumps(values) + b"\n"), share)
            measurements.append({"name": "run.log, 4 floats, explicit step", "unit": "us/call", **res})
            if has_fft:
                point = {"model_id": "", **FFT_POINT}
                res = _side_by_side(lambda: run.log_record("fft.loss_point", **FFT_POINT),
                                    lambda: write(fd, _dumps(point) + b"\n"), share)
                measurements.append({"name": "run.log_record, fft.loss_point", "unit": "us/call", **res})
            with start_run(project="tracker-bench", name="read", store=folder / "store") as read_run:
                for i in range(READ_RECORDS):
                    read_run.log(values, step=i)
        os.close(fd)
        view = open_store(folder / "store").run(read_run.id)
        (segment,) = view.segment_paths()
        count = len(view.metrics()["step"])

        def floor_read() -> None:
            with open(segment, "rb") as f:
                for line in f:
                    _loads(line)

        res = _side_by_side(view.metrics, floor_read, share, batches=False)
        res = {**res, "value_us": res["value_us"] / count, "floor_us": res["floor_us"] / count}
        measurements.append({"name": f"view.metrics(), per record ({count:,} records)", "unit": "us/record",
                             "floor_name": "json loads of every line", **res})
    return {"floor": FLOOR, "python": platform.python_version(), "machine": platform.machine(),
            "cores": os.cpu_count(), "measurements": measurements}


@click.command("bench")
@click.option("--seconds", type=click.FloatRange(0.2, 600.0), default=4.0, show_default=True,
              help="About how long to measure in all.")
@format_option(("table", "json"))
def bench_cmd(seconds: float, fmt: str) -> None:
    """Measure what logging costs on this machine, next to the floor (one dumps + one write per line).

    \b
    Examples:
      tracker bench
      tracker bench --seconds 10 --format json
    """
    from tracker.cli.render import dumps, table_text

    doc = run_bench(seconds)
    if fmt == "json":
        click.echo(dumps(doc))
        return
    rows = [{"measurement": m["name"], "tracker µs": round(m["value_us"], 2), "floor µs": round(m["floor_us"], 2),
             "ratio": f"{m['ratio']:.2f}x"} for m in doc["measurements"]]
    click.echo(table_text(["measurement", "tracker µs", "floor µs", "ratio"], rows))
    click.echo(f"\nfloor: {doc['floor']} of the same record (reading: {_loads.__module__} loads of each line); "
               f"CPU time per call, medians of alternating rounds; Python {doc['python']}, {doc['cores']} cores.")
