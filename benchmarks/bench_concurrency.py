"""Concurrency: 8 threads and 8 processes logging to one run, next to one writer.

Figures are aggregate records per second (wall clock, from a common start to
the last writer's end), each next to the same layout of floor writers
(``orjson.dumps`` + ``os.write``: threads share one file, processes have one
each, like tracker's segments). Afterwards every record is read back and
counted: nothing may be lost.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FOUR_FLOATS, _dumps, emit, main_guard, parse_args, scratch  # noqa: E402

import tracker  # noqa: E402

WRITERS = 8


def _tracker_writer(store: str, run_id: str, n: int, barrier, out) -> None:  # noqa: ANN001
    values = dict(FOUR_FLOATS)
    run = tracker.start_run(store=store, run_id=run_id, resume=True)
    barrier.wait()
    t0 = time.time()
    for _ in range(n):
        run.log(values)
    t1 = time.time()
    run.finish()
    out.put((t0, t1))


def _floor_writer(path: str, n: int, barrier, out) -> None:  # noqa: ANN001
    values = dict(FOUR_FLOATS)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    barrier.wait()
    t0 = time.time()
    for _ in range(n):
        os.write(fd, _dumps(values) + b"\n")
    t1 = time.time()
    os.close(fd)
    out.put((t0, t1))


def _rate(spans: list[tuple[float, float]], total: int) -> float:
    return total / (max(e for _, e in spans) - min(s for s, _ in spans))


def threads(target, args_of, k: int, n: int) -> float:  # noqa: ANN001
    """Records per second of ``k`` threads each writing ``n`` records."""
    import queue

    barrier, out = threading.Barrier(k), queue.Queue()
    ts = [threading.Thread(target=target, args=(*args_of(i), n, barrier, out)) for i in range(k)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return _rate([out.get() for _ in range(k)], k * n)


def processes(target, args_of, k: int, n: int) -> float:  # noqa: ANN001
    """Records per second of ``k`` processes each writing ``n`` records."""
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(k), ctx.Queue()
    ps = [ctx.Process(target=target, args=(*args_of(i), n, barrier, out)) for i in range(k)]
    for p in ps:
        p.start()
    spans = [out.get() for _ in range(k)]
    for p in ps:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a writer process exited {p.exitcode}")
    return _rate(spans, k * n)


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    n = 800 if args.quick else 20_000
    rounds = args.repeat
    with scratch() as tmp:
        store = str(tmp / "store")
        results: dict[str, list[tuple[float, float]]] = {}
        logged: dict[str, int] = {}
        for r in range(rounds):
            for label, k, mode in (("1 writer", 1, threads), (f"{WRITERS} threads", WRITERS, threads),
                                   (f"{WRITERS} processes", WRITERS, processes)):
                run_id = f"conc-{label.replace(' ', '-')}-{r}"
                per = n // k if k > 1 else n
                floor_dir = tmp / f"floor-{run_id}"
                floor_dir.mkdir()
                if mode is threads:
                    fl = mode(_floor_writer, lambda i, d=floor_dir: (str(d / "shared.jsonl"),), k, per)
                    run = tracker.start_run(store=store, run_id=run_id)
                    tr = mode(lambda run_, n_, b, o: _thread_log(run_, n_, b, o), lambda i, r_=run: (r_,), k, per)
                    run.finish()
                else:
                    fl = mode(_floor_writer, lambda i, d=floor_dir: (str(d / f"w{i}.jsonl"),), k, per)
                    tracker.start_run(store=store, run_id=run_id).finish()
                    tr = mode(_tracker_writer, lambda i, rid=run_id: (store, rid), k, per)
                results.setdefault(label, []).append((tr, fl))
                logged[run_id] = k * per
        view_store = tracker.open_store(store)
        for run_id, count in logged.items():
            got = len(view_store.run(run_id).metrics()["step"])
            if got != count:
                raise RuntimeError(f"run {run_id}: {got} records read back, {count} logged")
        for label, pairs in results.items():
            tr = statistics.median(p[0] for p in pairs)
            fl = statistics.median(p[1] for p in pairs)
            emit("concurrency", f"run.log, {label} to one run", unit="records/s", clock="wall",
                 value=round(tr), floor=round(fl), ratio=round(statistics.median(p[1] / p[0] for p in pairs), 3),
                 ratio_meaning="floor rate / tracker rate (cost ratio)", writers=WRITERS if label != "1 writer" else 1,
                 records=sum(v for k, v in logged.items() if label.replace(" ", "-") in k) // rounds,
                 floor_name="orjson.dumps + os.write, same layout", rounds=rounds, cores=os.cpu_count())


def _thread_log(run: tracker.Run, n: int, barrier, out) -> None:  # noqa: ANN001
    values = dict(FOUR_FLOATS)
    barrier.wait()
    t0 = time.time()
    for _ in range(n):
        run.log(values)
    out.put((t0, time.time()))


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
