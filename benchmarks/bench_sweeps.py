"""Sweeps: what the agent adds to a trial, and four agents sharing one journal file.

1. Overhead per trial. A script that does nothing (an empty ``noop.py``) is
   run 100 times by hand (``python noop.py --x=0.5``, what a user would type)
   and 100 times as a trial of a random sweep by the agent (take the trial
   from the study under its lock, make the run, start the same command with
   the run in its environment, read the metric, finish the run, tell the
   study), alternating the two. The figure is the median of the per-pair
   differences (wall clock); the target is at most 50 ms more than by hand.
2. Four ``tracker agent`` processes on one sweep in one journal file,
   against one agent doing the same number of trials: wall time from the
   first start to the last exit, and afterwards the trials and runs are
   counted (``run_cap`` exactly, no run twice).

Run on its own: ``python benchmarks/bench_sweeps.py`` (``--quick`` for a
smoke run); it needs ``tracker-core[sweeps]``.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, main_guard, parse_args, scratch  # noqa: E402

import tracker  # noqa: E402
from tracker.sweeps.agent import run_command_trial  # noqa: E402
from tracker.sweeps.study import open_sweep  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CONFIG = {"program": "noop.py", "method": "random", "metric": {"name": "loss", "goal": "minimize"},
          "parameters": {"x": {"distribution": "uniform", "min": 0.0, "max": 1.0}}}


def overhead(root: Path, trials: int) -> None:
    """Part 1: the same do-nothing script by hand and as an agent's trial, alternating."""
    sweep = open_sweep(root, tracker.sweep(CONFIG, project="bench", store=root))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    hand, agent, asks, diffs, cpu_hand, cpu_agent = [], [], [], [], [], []
    for i in range(trials):
        c0, t0 = time.process_time(), time.perf_counter()
        subprocess.run([sys.executable, "noop.py", f"--x={0.5 + i * 1e-6}"], env=env, check=True)
        c1, t1 = time.process_time(), time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            sweep.fail_stale()
            ticket = sweep.ask()
            t2 = time.perf_counter()
            run_command_trial(sweep, ticket)
        c3, t3 = time.process_time(), time.perf_counter()
        hand.append(t1 - t0)
        agent.append(t3 - t1)
        asks.append(t2 - t1)
        diffs.append((t3 - t1) - (t1 - t0))
        cpu_hand.append(c1 - c0)
        cpu_agent.append(c3 - c1)
    assert len(tracker.open_store(root).runs(project="bench")) == trials
    ms = 1e3
    med = statistics.median(diffs) * ms
    emit("sweeps", f"a trial by the agent against the same script by hand, median of {trials} pairs",
         value=round(statistics.median(agent) * ms, 2), floor=round(statistics.median(hand) * ms, 2),
         ratio=round(statistics.median(agent) / statistics.median(hand), 3), unit="ms/trial", clock="wall",
         floor_is="python noop.py by hand", overhead_ms=round(med, 2),
         overhead_p90_ms=round(sorted(diffs)[int(0.9 * (len(diffs) - 1))] * ms, 2),
         target=f"overhead <= 50 ms: {'met' if med <= 50 else 'not met'}", target_value=50.0,
         load_average=os.getloadavg()[0])
    # CPU time of this process only (the children's are alike): what the agent itself spends, which a
    # loaded machine's scheduling does not blur the way it blurs the wall clock.
    emit("sweeps", "the same pairs, CPU time of the starting process (the agent's own work per trial)",
         value=round(statistics.median(cpu_agent) * ms, 2), floor=round(statistics.median(cpu_hand) * ms, 2),
         ratio=round(statistics.median(cpu_agent) / max(statistics.median(cpu_hand), 1e-9), 3), unit="ms/trial",
         clock="cpu", floor_is="subprocess.run of the same script")
    emit("sweeps", "of which: taking the trial (stale check, lock, Optuna's ask, sampling)",
         value=round(statistics.median(asks) * ms, 2), unit="ms/trial", clock="wall")


def _agents(root: Path, sweep_id: str, n: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env["TRACKER_STORE"] = str(root)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "tracker", "agent", sweep_id], env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"an agent exited with {p.returncode}: {err.strip().splitlines()[-1:]}")
    return time.perf_counter() - t0


def parallel(root: Path, trials: int, agents: int) -> None:
    """Part 2: ``agents`` agents on one journal against one agent, ``trials`` trials each way."""
    one = tracker.sweep({**CONFIG, "run_cap": trials}, project="one", store=root)
    many = tracker.sweep({**CONFIG, "run_cap": trials}, project="many", store=root)
    t_one = _agents(root, one, 1)
    t_many = _agents(root, many, agents)
    store = tracker.open_store(root)
    for project, sweep_id in (("one", one), ("many", many)):
        runs = store.runs(project=project)
        n_trials = len(open_sweep(root, sweep_id).study.get_trials(deepcopy=False))
        if len(runs) != trials or n_trials != trials or len({r.id for r in runs}) != trials:
            raise SystemExit(f"{project}: {len(runs)} runs and {n_trials} trials, expected {trials}")
    journal = root / "sweeps" / many / "journal.log"
    emit("sweeps", f"{agents} agents on one journal file, {trials} trials (run_cap held, no run twice)",
         value=round(trials / t_many, 2), floor=round(trials / t_one, 2), ratio=round(t_one / t_many, 3),
         unit="trials/s", clock="wall", floor_is="one agent, the same trials", cores=os.cpu_count(),
         journal_bytes=journal.stat().st_size, load_average=os.getloadavg()[0])


def main(args) -> None:  # noqa: ANN001 - the parsed options
    trials = args.trials or (6 if args.quick else 100)
    with scratch("tracker-bench-sweeps-") as tmp:
        (tmp / "noop.py").write_text("")
        overhead(tmp / "store", trials)
        parallel(tmp / "store", trials, args.agents)


if __name__ == "__main__":
    sys.exit(main_guard(main, parse_args(__doc__.splitlines()[0], trials=dict(type=int, default=None),
                                         agents=dict(type=int, default=4))))
