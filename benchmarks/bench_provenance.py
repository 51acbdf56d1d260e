"""Provenance: what keeping the console and the environment costs a training process, each next to a floor.

Figures (medians over rounds that alternate floor and subject):

- ``print()`` of a 100-character line with console capture on, against the
  same loop in a run with capture off, to a file and to a pipe (a reader
  process drains it). Each round is a fresh process with Python's default
  buffering (``PYTHONUNBUFFERED`` unset); the time runs from the first print
  to ``run.finish()``, which writes the last captured lines, so the
  recorder's work in its own thread is counted, as wall time and as the
  process's CPU time. Target: at most 1.5x.
- The resident memory of a process that printed 1,000,000 distinct lines
  with capture on, after ``finish()``, against where it stood after
  ``start_run`` (and the same with capture off). Target: within 20 MiB.
- ``start_run`` with the environment recorded (500 extra installed
  distributions on ``sys.path``, a cold package listing) against
  ``start_run(environment=False)``, each the first run of a fresh process;
  and how long after ``start_run`` returned the ``environment`` record is in
  the segment. Targets: at most 5 ms more; complete within 2 s.
- ``run.log`` of 4 floats in a run whose console is captured, against a run
  whose console is not (nothing printed meanwhile). Target: within 1.05x.
- How long a printed line takes to be in the segment file (a whole line, and
  an unfinished one written as a partial record). Target: within 0.5 s.

Run: ``python benchmarks/bench_provenance.py [--quick]``; one JSON line per figure.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FOUR_FLOATS, emit, main_guard, parse_args, per_call, scratch, side_by_side  # noqa: E402

import tracker  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

PRINTS = textwrap.dedent("""
    import json, sys, time, tracker
    n, console = int(sys.argv[1]), sys.argv[2] == "on"
    run = tracker.start_run(project="bench", console=console, environment=False, system_metrics=False)
    line = "x" * 100
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        print(line)
    run.finish()
    sys.stdout.flush()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"wall": wall / n, "cpu": cpu / n}), file=sys.stderr)
""")

RSS = textwrap.dedent("""
    import json, sys, tracker
    def rss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    n, console = int(sys.argv[1]), sys.argv[2] == "on"
    run = tracker.start_run(project="bench", console=console, environment=False, system_metrics=False)
    print("warm-up line")
    before = rss()
    for i in range(n):
        print(f"step {i:08d} loss {1.0 / (i + 1):.6f} " + "y" * 60)
    run.finish()
    after = rss()
    print(json.dumps({"before": before, "after": after}), file=sys.stderr)
""")

START = textwrap.dedent("""
    import json, os, sys, time, tracker
    env = sys.argv[1] == "on"
    warm = tracker.start_run(project="bench", console=False, environment=False, system_metrics=False)
    warm.finish()  # imports and the plugin host: not the figure
    t0 = time.perf_counter()
    run = tracker.start_run(project="bench", console=False, environment=env, system_metrics=False)
    took = time.perf_counter() - t0
    done = None
    if env:
        rec = run._att.recorders.environment
        rec.thread.join(30)
        done = time.perf_counter() - t0
        count = rec.data["packages_count"] if rec.data else None
    else:
        count = None
    run.finish()
    print(json.dumps({"start": took, "complete": done, "packages": count}))
""")

LATENCY = textwrap.dedent("""
    import glob, os, sys, time, tracker
    n = int(sys.argv[1])
    run = tracker.start_run(project="bench", environment=False, system_metrics=False)
    seg = glob.glob(os.path.join(str(run.path), "*.jsonl"))[0]
    out = []
    for kind in ("whole", "partial"):
        for i in range(n):
            marker = f"{kind}-{i}-{time.time_ns()}"
            size = os.path.getsize(seg)
            t0 = time.perf_counter()
            if kind == "whole":
                print(marker, flush=True)
            else:
                sys.stdout.write(marker); sys.stdout.flush()
            while True:
                with open(seg, "rb") as f:
                    f.seek(size)
                    if marker.encode() in f.read():
                        break
                time.sleep(0.002)
            out.append((kind, time.perf_counter() - t0))
            if kind == "partial":
                print()
            time.sleep(0.05)
    run.finish()
    import json
    print(json.dumps(out), file=sys.stderr)
""")


def child_env(store: Path, extra_path: str | None = None) -> dict[str, str]:
    # Python's defaults, as a user's training process has them: buffered output, bytecode cached.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")
           and k not in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")}
    env["TRACKER_STORE"] = str(store)
    env["PYTHONPATH"] = os.pathsep.join([p for p in (extra_path, str(ROOT), env.get("PYTHONPATH")) if p])
    return env


def _drain(stream) -> None:  # noqa: ANN001 - a pipe's reading end
    while stream.read(1 << 16):
        pass


def one_print_round(tmp: Path, n: int, console: str, target: str) -> dict[str, float]:
    script = tmp / "prints.py"
    script.write_text(PRINTS)
    env = child_env(tmp / "store")
    if target == "file":
        with open(tmp / "out.txt", "wb") as f:
            proc = subprocess.run([sys.executable, str(script), str(n), console], stdout=f, stderr=subprocess.PIPE,
                                  env=env, cwd=tmp, check=True)
        return json.loads(proc.stderr.splitlines()[-1])
    proc = subprocess.Popen([sys.executable, str(script), str(n), console], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=tmp)
    reader = threading.Thread(target=_drain, args=(proc.stdout,))
    reader.start()
    err = proc.stderr.read()
    proc.wait()
    reader.join()
    if proc.returncode:
        raise RuntimeError(err.decode(errors="replace"))
    return json.loads(err.splitlines()[-1])


def bench_print(tmp: Path, args) -> None:  # noqa: ANN001
    n = 100_000 if args.quick else 1_000_000
    rounds = args.repeat
    for target in ("file", "pipe"):
        subj, base = [], []
        for _ in range(rounds):
            base.append(one_print_round(tmp, n, "off", target))
            subj.append(one_print_round(tmp, n, "on", target))
        for clock in ("wall", "cpu"):
            ratios = [s[clock] / b[clock] for s, b in zip(subj, base, strict=True)]
            emit("provenance", f"print() of a 100-character line, console captured, to a {target} ({clock} clock)",
                 value=round(statistics.median(s[clock] for s in subj) * 1e9, 1),
                 floor=round(statistics.median(b[clock] for b in base) * 1e9, 1),
                 ratio=round(statistics.median(ratios), 3), ratio_min=round(min(ratios), 3),
                 ratio_max=round(max(ratios), 3), rounds=rounds, unit="ns/print", lines=n, clock=clock,
                 floor_is="the same loop in a run with console=False (a fresh process each round)",
                 target=1.5, c_extension=_c_extension())


def _c_extension() -> bool:
    from tracker.capture import lines

    return lines.native is not None


def bench_rss(tmp: Path, args) -> None:  # noqa: ANN001
    n = 100_000 if args.quick else 1_000_000
    script = tmp / "rss.py"
    script.write_text(RSS)
    out = {}
    for console in ("off", "on"):
        proc = subprocess.run([sys.executable, str(script), str(n), console], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, env=child_env(tmp / "store"), cwd=tmp, check=True)
        out[console] = json.loads(proc.stderr.splitlines()[-1])
    grow = (out["on"]["after"] - out["on"]["before"]) / 2**20
    floor = (out["off"]["after"] - out["off"]["before"]) / 2**20
    emit("provenance", f"resident memory after {n:,} captured lines, over where it stood after start_run",
         value=round(grow, 2), floor=round(floor, 2), unit="MiB", lines=n,
         floor_is="the same process with console=False", target_value="<= 20 MiB",
         rss_before_mib=round(out["on"]["before"] / 2**20, 1), rss_after_mib=round(out["on"]["after"] / 2**20, 1))


def bench_start(tmp: Path, args) -> None:  # noqa: ANN001
    site = tmp / "site500"
    for i in range(500):
        (site / f"bench_dist_{i:03d}-1.{i}.0.dist-info").mkdir(parents=True, exist_ok=True)
    script = tmp / "start.py"
    script.write_text(START)
    env = child_env(tmp / "store", str(site))
    rounds = args.repeat + 2
    on, off = [], []
    subprocess.run([sys.executable, str(script), "on"], capture_output=True, env=env, cwd=tmp, check=True)  # bytecode
    for _ in range(rounds):
        for which, into in (("off", off), ("on", on)):
            proc = subprocess.run([sys.executable, str(script), which], capture_output=True, env=env, cwd=tmp,
                                  check=True)
            into.append(json.loads(proc.stdout.splitlines()[-1]))
    extra = [(a["start"] - b["start"]) * 1e3 for a, b in zip(on, off, strict=True)]
    emit("provenance", "start_run with the environment recorded (500 more distributions, cold listing)",
         value=round(statistics.median(a["start"] for a in on) * 1e3, 3),
         floor=round(statistics.median(b["start"] for b in off) * 1e3, 3),
         extra_ms=round(statistics.median(extra), 3), extra_ms_max=round(max(extra), 3), unit="ms", rounds=rounds,
         floor_is="start_run(environment=False), the first run of a fresh process likewise",
         target_value="<= 5 ms more", packages=on[0]["packages"])
    emit("provenance", "the environment record complete after start_run was called (500 more distributions)",
         value=round(statistics.median(a["complete"] for a in on) * 1e3, 1),
         value_max=round(max(a["complete"] for a in on) * 1e3, 1), unit="ms", rounds=rounds,
         target_value="<= 2000 ms", packages=on[0]["packages"])


def bench_log(tmp: Path, args) -> None:  # noqa: ANN001
    n = 50_000 if args.quick else 300_000
    values = dict(FOUR_FLOATS)
    on = tracker.start_run(name="console-on", store=tmp / "store", console=True, environment=False,
                           system_metrics=False)
    off = tracker.start_run(name="console-off", store=tmp / "store", console=False, environment=False,
                            system_metrics=False)
    on.log(values)
    off.log(values)
    for clock, name in ((time.process_time, "cpu"), (time.perf_counter, "wall")):
        res = side_by_side(lambda clock=clock: per_call(lambda i: on.log(values), n, clock),
                           lambda clock=clock: per_call(lambda i: off.log(values), n, clock), args.repeat + 2)
        emit("provenance", f"run.log, 4 floats, in a run whose console is captured ({name} clock)", **res,
             unit="us/call", clock=name, floor_is="the same run.log in a run with console=False",
             target=1.05 if name == "cpu" else None)
    on.finish()
    off.finish()


def bench_latency(tmp: Path, args) -> None:  # noqa: ANN001
    n = 10 if args.quick else 40
    script = tmp / "latency.py"
    script.write_text(LATENCY)
    proc = subprocess.run([sys.executable, str(script), str(n)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=child_env(tmp / "store"), cwd=tmp, check=True)
    got = json.loads(proc.stderr.splitlines()[-1])
    for kind, what in (("whole", "a printed line"), ("partial", "an unfinished line (no newline yet)")):
        xs = sorted(t for k, t in got if k == kind)
        emit("provenance", f"{what}: in the segment file after", value=round(statistics.median(xs) * 1e3, 1),
             value_max=round(xs[-1] * 1e3, 1), value_p90=round(xs[int(len(xs) * 0.9) - 1] * 1e3, 1), unit="ms",
             samples=len(xs), target_value="<= 500 ms")


def body(args) -> None:  # noqa: ANN001
    parts = set(args.parts.split(","))
    with scratch() as tmp:
        for name, fn in (("print", bench_print), ("rss", bench_rss), ("start", bench_start), ("log", bench_log),
                         ("latency", bench_latency)):
            if name in parts:
                fn(tmp, args)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0], parts={
        "default": "print,rss,start,log,latency", "help": "which figures (comma-separated)"})))
