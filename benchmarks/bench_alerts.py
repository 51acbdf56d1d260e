"""Alerts: what a rule watching a run costs the training loop, and what the watcher costs the machine.

Figures:

- ``run.log`` (4 floats, wall clock per call) while ``tracker watch`` checks
  three rules on the run every 0.5 s (four times the default rate), next to the
  same loop with the watcher paused (SIGSTOP): the floor. Rounds alternate, so
  a busy machine slows both alike. Target: at most 1.05x.
- ``run.log`` while a delivery to a receiver that is down is being retried in
  the background, next to the same loop with nothing to deliver.
- The watcher's CPU time per second of wall time over a store of 1,000 running
  runs (20 of them logging each second), at the default interval (2 s), next to
  a floor that only ``os.stat``s every segment of every run at the same
  interval (the least any watcher must do to see new lines).
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FOUR_FLOATS, emit, main_guard, parse_args, per_call, scratch, side_by_side  # noqa: E402

import tracker  # noqa: E402

RULES = """
[alerts]
interval = {interval}
[alerts.channels.cmd]
type = "command"
command = ["true"]
[[alerts.rules]]
when = "loss is nan"
[[alerts.rules]]
when = "loss > 1000"
[[alerts.rules]]
when = "no record for 10m"
"""

HOLDER = textwrap.dedent("""
    import sys, time, tracker
    runs = [tracker.start_run(project="many", name=f"r{{i}}", system_metrics=False) for i in range({n})]
    for r in runs:
        for j in range(10):
            r.log({{"loss": 1.0 / (j + 1)}})
    print("ready", flush=True)
    i = 0
    while True:
        for r in runs[i % 50 * 20:(i % 50 + 1) * 20]:
            r.log({{"loss": 0.5}})
        i += 1
        time.sleep(1.0)
""")

FLOOR = textwrap.dedent("""
    import os, sys, time
    root = sys.argv[1]
    interval = float(sys.argv[2])
    while True:
        runs = os.path.join(root, "runs")
        for d in os.scandir(runs):
            for f in os.scandir(d.path):
                if f.name.endswith(".jsonl"):
                    os.stat(f.path)
        time.sleep(interval)
""")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_wall(proc: subprocess.Popen, seconds: float) -> float:
    c0, t0 = cpu_seconds(proc.pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    n = 5_000 if args.quick else 50_000
    parts = set(args.parts.split(","))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(tracker.__file__).parent.parent),
                                                         os.environ.get("PYTHONPATH", "")])}
    with scratch() as tmp:
        store = tmp / "store"
        env["TRACKER_STORE"] = str(store)
        os.environ["TRACKER_STORE"] = str(store)
        values = dict(FOUR_FLOATS)
        wall = time.perf_counter
        for interval in (2.0, 0.5) if "log" in parts else ():
            (tmp / "tracker.toml").write_text(RULES.format(interval=interval))
            tracker.set_host(None)
            with tracker.start_run(project="bench", name="watched", system_metrics=False) as run:
                run.log(values)
                watch = subprocess.Popen([sys.executable, "-m", "tracker", "watch"], env=env, cwd=tmp,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    time.sleep(1.5 if args.quick else 3.0)
                    c0, t0 = cpu_seconds(watch.pid), time.monotonic()
                    for clock, clock_name in ((wall, "wall"), (time.process_time, "cpu")):
                        def watched(clock=clock, pid=watch.pid) -> float:  # noqa: ANN001
                            os.kill(pid, signal.SIGCONT)
                            return per_call(lambda i: run.log(values), n, clock)  # noqa: B023

                        def paused(clock=clock, pid=watch.pid) -> float:  # noqa: ANN001
                            os.kill(pid, signal.SIGSTOP)
                            try:
                                return per_call(lambda i: run.log(values), n, clock)  # noqa: B023
                            finally:
                                os.kill(pid, signal.SIGCONT)

                        res = side_by_side(watched, paused, args.repeat)
                        # The watcher's CPU over the whole measurement (it runs half of the time).
                        share = 2 * (cpu_seconds(watch.pid) - c0) / (time.monotonic() - t0)
                        emit("alerts", f"run.log, 4 floats, tracker watch checking 3 rules on the run every "
                             f"{interval:g} s ({clock_name} clock)", unit="us/call", calls=n, clock=clock_name,
                             floor_name="the same loop with the watcher paused (SIGSTOP)",
                             target=1.05 if interval == 2.0 else None, load=round(os.getloadavg()[0], 1),
                             watcher_cpu_share=round(share, 3), **res)
                finally:
                    os.kill(watch.pid, signal.SIGCONT)
                    watch.terminate()
                    watch.wait(30)
        # A delivery being retried in the background (a receiver that is down) while the loop logs.
        down = f"http://127.0.0.1:{free_port()}/hook"
        for backoff, what in ((1.0, "the default backoff (1 s, doubling)"),
                              (0.01, "a backoff of 10 ms, doubling (a stress test)")) if "retry" in parts else ():
            (tmp / "tracker.toml").write_text(f'[alerts]\nretries = 100\nbackoff = {backoff}\n'
                                              f'[alerts.channels.hook]\ntype = "webhook"\nurl = "{down}"\n')
            tracker.set_host(None)
            from tracker.alerts import delivery

            delivery._sender = None  # a sender with this backoff
            with tracker.start_run(project="bench", name="retrying", system_metrics=False) as run:
                run.log(values)
                run.alert("receiver down", "retried in the background")
                delivery._sender.report = lambda message: None  # the give-up lines are not the measurement

                def retrying() -> float:
                    run.alert("receiver down", "retried in the background")
                    return per_call(lambda i: run.log(values), n, wall)  # noqa: B023

                res = side_by_side(retrying, lambda: per_call(lambda i: run.log(values), n, wall),  # noqa: B023
                                   args.repeat)
                emit("alerts", f"run.log, 4 floats, while alerts to a receiver that is down are retried with {what}",
                     unit="us/call", calls=n, clock="wall", floor_name="the same loop with nothing to deliver", **res)
            delivery._sender.retries = 0  # what is still queued ends at its next attempt
            delivery._FINISH_TIMEOUT[0] = 0.1
        # The watcher over 1,000 running runs.
        if "watcher" not in parts:
            return
        many = 100 if args.quick else 1_000
        store2 = tmp / "many"
        env2 = {**env, "TRACKER_STORE": str(store2)}
        (tmp / "tracker.toml").write_text(RULES.format(interval=2.0))
        holder = subprocess.Popen([sys.executable, "-c", HOLDER.format(n=many)], env=env2, cwd=tmp,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            subprocess.run([sys.executable, "-m", "tracker", "index"], env=env2, cwd=tmp, check=True,
                           capture_output=True)
            seconds = 6.0 if args.quick else 30.0
            watcher_cpu, floor_cpu = [], []
            for _ in range(1 if args.quick else 3):
                watch = subprocess.Popen([sys.executable, "-m", "tracker", "watch"], env=env2, cwd=tmp,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                floor = subprocess.Popen([sys.executable, "-c", FLOOR, str(store2), "2.0"], env=env2, cwd=tmp)
                try:
                    time.sleep(4.0)  # past the start and the first look (it reads what was recorded)
                    c0w, c0f, t0 = cpu_seconds(watch.pid), cpu_seconds(floor.pid), time.monotonic()
                    time.sleep(seconds)
                    dt = time.monotonic() - t0
                    watcher_cpu.append((cpu_seconds(watch.pid) - c0w) / dt)
                    floor_cpu.append((cpu_seconds(floor.pid) - c0f) / dt)
                finally:
                    for p in (watch, floor):
                        p.terminate()
                        p.wait(30)
        finally:
            holder.kill()
            holder.wait()
        w, f = statistics.median(watcher_cpu), statistics.median(floor_cpu)
        emit("alerts", f"tracker watch, {many:,} running runs, 3 rules, default interval 2 s: CPU seconds per "
             "second of wall time", unit="cpu s/s", value=round(w, 4), floor=round(f, 4),
             ratio=round(w / f, 2) if f else None, rounds=len(watcher_cpu), clock="cpu",
             floor_name="os.stat of every segment of every run every 2 s", window_s=seconds)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0], parts={
        "default": "log,retry,watcher", "help": "which figures: log, retry, watcher (comma-separated)"})))
