"""Reading a store while a process logs into it as fast as it can, against reading the same store idle.

Figures (wall clock, median over rounds; each round a fresh store):

- a writer process logs ``run.log`` of 4 floats in a tight loop into one run
  until its segment holds about ``--records`` records; then it is stopped
  (SIGSTOP), the derived data is deleted and the read is timed: the floor,
  the store idle. The writer goes on (SIGCONT), the derived data is deleted
  again and the same read is timed while it logs: the subject. Both reads
  build the derived data from nothing, each up to the size the segment had
  when it began; the live one starts from a segment a little longer (what
  the writer added between the two), which the figures name.
- the reads: ``Store.runs()`` (the listing: ``tracker runs``, ``/api/runs``)
  and ``view.metrics()`` of the run; each in wall-clock time, then in the CPU
  time of the reading process (the work it did: on a machine whose cores the
  writer shares, the wall clock also counts the wait for a core).

Before reads were bounded, neither returned while such a writer ran (the
writer appends faster than a reader parses, and the reader followed each
segment to its end): the ratio has no floor to compare with there.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, main_guard, parse_args, scratch  # noqa: E402

import tracker  # noqa: E402

WRITER = textwrap.dedent("""
    import sys, tracker
    run = tracker.start_run(project="live", name="fast", store=sys.argv[1], run_id="fast", system_metrics=False)
    print("ready", flush=True)
    log = run.log
    i = 0
    while True:
        log({"loss": 1.0 / (i + 1), "acc": 0.5, "lr": 0.001, "grad_norm": 1.37})
        i += 1
""")


def _records(seg: Path) -> int:
    """Records in the segment now, from its size (lines are of one length, give or take a few bytes)."""
    with open(seg, "rb") as f:
        f.readline()
        line = f.readline()
    return seg.stat().st_size // max(1, len(line))


def one_round(root: Path, records: int, read: str) -> tuple[float, float, int, int, float, float]:
    """``(idle seconds, live seconds, records at the idle read, records at the live read, idle CPU seconds,
    live CPU seconds)``."""
    store = root / f"store-{read}-{time.monotonic_ns()}"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(store)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        seg = next((store / "runs" / "fast").glob("*.jsonl"))
        while _records(seg) < records:
            time.sleep(0.01)

        def timed() -> tuple[float, int, float]:
            shutil.rmtree(store / "index", ignore_errors=True)
            n = _records(seg)
            t0, c0 = time.perf_counter(), time.process_time()
            if read == "runs":
                tracker.open_store(store).runs()
            else:
                tracker.open_store(store).run("fast").metrics()
            return time.perf_counter() - t0, n, time.process_time() - c0

        proc.send_signal(signal.SIGSTOP)
        idle, n_idle, cpu_idle = timed()
        proc.send_signal(signal.SIGCONT)
        live, n_live, cpu_live = timed()
        return idle, live, n_idle, n_live, cpu_idle, cpu_live
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(store, ignore_errors=True)


def bench(args) -> None:
    records = 20_000 if args.quick else args.records
    with scratch() as root:
        for read, label in (("runs", "Store.runs() (tracker runs, /api/runs)"), ("metrics", "view.metrics()")):
            rounds = [one_round(root, records, read) for _ in range(args.repeat)]
            idle = [r[0] for r in rounds]
            live = [r[1] for r in rounds]
            ratios = [r[1] / r[0] for r in rounds]
            emit("live_read", f"{label}, a run logging 4 floats in a tight loop, from about {records:,} records",
                 value=round(statistics.median(live), 3), floor=round(statistics.median(idle), 3),
                 ratio=round(statistics.median(ratios), 3), ratio_min=round(min(ratios), 3),
                 ratio_max=round(max(ratios), 3), unit="s", clock="wall",
                 floor_name="the same read, writer stopped (SIGSTOP)", rounds=args.repeat,
                 records_idle=int(statistics.median(r[2] for r in rounds)),
                 records_live=int(statistics.median(r[3] for r in rounds)),
                 cores=os.cpu_count())
            cpu = [r[5] / r[4] for r in rounds]
            emit("live_read", "the same, CPU time of the reading process",
                 value=round(statistics.median(r[5] for r in rounds), 3),
                 floor=round(statistics.median(r[4] for r in rounds), 3), ratio=round(statistics.median(cpu), 3),
                 ratio_min=round(min(cpu), 3), ratio_max=round(max(cpu), 3), unit="s", clock="cpu",
                 floor_name="the same read, writer stopped (SIGSTOP)", rounds=args.repeat)


if __name__ == "__main__":
    sys.exit(main_guard(bench, parse_args(__doc__.splitlines()[0],
                                          records=dict(type=int, default=300_000,
                                                       help="records in the run when a round reads it"))))
