"""The agent: takes trials of a sweep one after another and runs each as a run of the store.

For each trial the agent makes the run (config = the sampled values, tag
``sweep:<id>``), then either starts the sweep's ``command`` as a child process
with the values as ``--key=value`` and the run in its environment
(``TRACKER_RUN_ID``, ``TRACKER_STORE``, ``TRACKER_SWEEP_ID``: ``tracker.init()``
there attaches to the run, as under W&B's agent), or calls ``function`` in
this process. The metric's values as the trial logs them are Optuna's
intermediate values; with ``early_terminate`` a trial Optuna's Hyperband
pruner stops is ended: the child is terminated, its run ends ``stopped``.
The objective is the run's summary value of the metric (``define_metric``'s
summary) or else its last logged value. A child that exits non-zero leaves a
failed run and trial carrying its exit code, and the agent goes on.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError
from tracker.sweeps.config import SweepConfigError, build_command
from tracker.sweeps.storage import optuna
from tracker.sweeps.study import Sweep, Ticket

#: Environment variables the agent sets for a trial (W&B's name for the sweep too).
ENV_RUN_ID, ENV_STORE, ENV_SWEEP_ID = "TRACKER_RUN_ID", "TRACKER_STORE", "TRACKER_SWEEP_ID"
POLL = 0.1  # seconds between looks at a child's new values when pruning is on
GRACE = 10.0  # seconds a terminated child gets before it is killed


def _say(message: str) -> None:
    print(f"tracker: agent: {message}", file=sys.stderr, flush=True)


def check_program(sweep: Sweep) -> None:
    """Refuse, before any trial, a sweep whose program does not exist here.

    :raises SweepConfigError: naming the program and the folder it was looked for in.
    """
    c = sweep.config
    if c.program is None:
        if c.command is None:
            raise SweepConfigError(f"sweep {sweep.id}: program: missing (an agent without function= runs the "
                                   "sweep's program)")
        return
    if not Path(c.program).is_file():
        raise SweepConfigError(f"sweep {sweep.id}: program: {c.program} does not exist in {Path.cwd()}")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # A kill -9 of the agent takes its trial's process along (Linux), so nothing logs to a trial
    # that the sweep has given up.
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@functools.cache
def _setpriv() -> str | None:
    """util-linux's ``setpriv`` when it takes ``--pdeathsig`` (Linux): the child's death signal without a
    ``preexec_fn``, which would make every start take Python's slow fork path."""
    path = shutil.which("setpriv") if sys.platform == "linux" else None
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "--pdeathsig" in out else None


class _Reporter:
    """Hands the metric's logged values to the trial as intermediate values, and asks the pruner."""

    def __init__(self, sweep: Sweep, ticket: Ticket) -> None:
        self.sweep = sweep
        self.trial = ticket.trial
        self.metric = sweep.config.metric
        self.count = 0
        self.pruned = False
        hb = sweep.config.hyperband
        #: Only Hyperband needs the values (each is a journal line): none without it, none past max_iter.
        self.on = hb is not None and self.metric is not None
        self.limit = hb.max_iter if hb is not None else 0
        self.judge = self.on

    def add(self, value: Any) -> bool:
        """Report one logged value; ``True`` when the trial should stop."""
        if not self.on or self.pruned or self.count >= self.limit or type(value) not in (int, float, bool) \
                or not math.isfinite(value):
            return self.pruned
        self.count += 1
        self.trial.report(float(value), self.count)
        if self.judge and self.trial.should_prune():
            self.pruned = True
        return self.pruned

    def read(self, run_id: str) -> bool:
        """Report the values logged since the last look (read from the store)."""
        if not self.on or self.pruned or self.count >= self.limit:
            return self.pruned
        try:
            metrics = self.sweep.store.run(run_id).metrics()
        except TrackerError:
            return False
        col = metrics.get(self.metric)
        if col is None:
            return False
        values = [float(v) for v in col if math.isfinite(v)]  # as add() takes them: count indexes this list
        for v in values[self.count:]:
            if self.add(v):
                break
        return self.pruned


def objective(store: Any, run_id: str, metric: str, goal: str = "minimize") -> float | None:
    """The trial's objective: the run's summary value of ``metric`` if a number (of a ``define_metric``
    summary, its best, else its min or max by ``goal``), else the metric's last logged value."""
    view = store.run(run_id)
    v = (view.info.summary or {}).get(metric)
    if isinstance(v, dict):
        # define_metric(summary=...) leaves {"min": ..., "max": ..., "best": ...}: the best, else the goal's end.
        keys = ("best", "min" if goal == "minimize" else "max", "last", "mean", "max" if goal == "minimize" else "min")
        v = next((v[k] for k in keys if type(v.get(k)) in (int, float)), None)
    if type(v) in (int, float) and not (isinstance(v, float) and math.isnan(v)):
        return float(v)
    stats = view.metric_stats().get(metric)
    if stats is None:
        return None
    last = stats.get("last")
    return float(last) if type(last) in (int, float) else None


def _tell(sweep: Sweep, ticket: Ticket, status: str, exit_code: int | None = None) -> str:
    """Tell Optuna how the trial ended; return the run's final status word."""
    o = optuna()
    S = o.trial.TrialState
    trial = ticket.trial
    if exit_code:
        trial.set_user_attr("exit_code", exit_code)
    if status == "stopped":
        sweep.study.tell(trial, state=S.PRUNED, skip_if_finished=True)
        return "stopped"
    if status != "finished":
        sweep.study.tell(trial, state=S.FAIL, skip_if_finished=True)
        return status
    metric = sweep.config.metric
    if metric is None:
        # A sweep without a metric: Optuna needs a value; it is never shown.
        sweep.study.tell(trial, 0.0, skip_if_finished=True)
        return "finished"
    value = objective(sweep.store, ticket.run_id, metric, sweep.config.goal)
    if value is None or not math.isfinite(value):
        trial.set_user_attr("reason", f"metric {metric} was not logged" if value is None
                            else f"metric {metric} is {value}")
        sweep.study.tell(trial, state=S.FAIL, skip_if_finished=True)
    else:
        sweep.study.tell(trial, value, skip_if_finished=True)
    return "finished"


def _env(sweep: Sweep, run_id: str) -> dict[str, str]:
    return {ENV_RUN_ID: run_id, ENV_STORE: str(sweep.root), ENV_SWEEP_ID: sweep.id, "WANDB_SWEEP_ID": sweep.id}


def _start(sweep: Sweep, ticket: Ticket) -> Any:
    from tracker.write.api import start_run

    name = f"{sweep.config.name or sweep.id}-{ticket.number}"
    return start_run(sweep.project, name, config=ticket.config, tags=[f"sweep:{sweep.id}"],
                             store=sweep.root, run_id=ticket.run_id, system_metrics=False)


def run_command_trial(sweep: Sweep, ticket: Ticket) -> str:
    """Run one trial as a child process; return how its run ended."""
    run = _start(sweep, ticket)
    reporter = _Reporter(sweep, ticket)
    args_file = None
    command = sweep.config.command or ()
    if any("${args_json_file}" in x for x in command):
        args_file = sweep.folder / "args" / f"{ticket.run_id}.json"
        args_file.parent.mkdir(parents=True, exist_ok=True)
        args_file.write_text(json.dumps(ticket.config), encoding="utf-8")
    cmd = build_command(sweep.config, ticket.config, args_json_file=str(args_file) if args_file else None)
    env = dict(os.environ)
    env.update(_env(sweep, ticket.run_id))
    _say(f"trial {ticket.number}: run {ticket.run_id}: " + " ".join(f"{k}={v}" for k, v in ticket.values.items()))
    setpriv = _setpriv()
    try:
        if setpriv is not None:
            proc = subprocess.Popen([setpriv, "--pdeathsig", "KILL", "--", *cmd], env=env)
        else:
            proc = subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    except OSError as exc:
        run.finish("failed", {"type": type(exc).__name__, "message": f"cannot start {cmd[0]}: {exc.strerror}"})
        return _tell(sweep, ticket, "failed", 127)
    try:
        if reporter.on:
            while True:
                try:
                    proc.wait(timeout=POLL)
                    break
                except subprocess.TimeoutExpired:
                    if reporter.read(ticket.run_id):
                        _end(proc)
                        break
        else:
            proc.wait()
    except BaseException as exc:  # Ctrl-C or a kill of the agent: the child goes, the trial fails
        _end(proc)
        run.finish("failed", exc)
        with contextlib.suppress(Exception):
            _tell(sweep, ticket, "failed")
        raise
    if reporter.pruned:
        run.finish("stopped")
        _say(f"trial {ticket.number}: stopped by hyperband after {reporter.count} values of {reporter.metric}")
        return _tell(sweep, ticket, "stopped")
    if reporter.on:
        reporter.judge = False  # the trial ran to its end: its last values are reported, not judged
        reporter.read(ticket.run_id)
    code = proc.returncode
    if code != 0:
        run.finish(exit_code=code)
        _say(f"trial {ticket.number}: exited with code {code}; run {ticket.run_id} failed")
        return _tell(sweep, ticket, "failed", code)
    run.finish("finished")
    return _tell(sweep, ticket, "finished", 0)


def _end(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_function_trial(sweep: Sweep, ticket: Ticket, function: Callable[[], Any]) -> str:
    """Run one trial by calling ``function()`` in this process; return how its run ended.

    The function's ``tracker.init()`` attaches to the trial's run. When the
    pruner stops the trial, the run ends ``stopped`` at once and the
    function's further ``log`` calls write nothing (and raise nothing), as in W&B.
    """
    from tracker.host.host import get_host

    run = _start(sweep, ticket)
    reporter = _Reporter(sweep, ticket)
    saved = {k: os.environ.get(k) for k in _env(sweep, ticket.run_id)}
    os.environ.update(_env(sweep, ticket.run_id))
    sub = None
    if reporter.on:
        def on_record(event: Any) -> None:
            if event.run_id == ticket.run_id and reporter.metric in (event.data or {}):
                if reporter.add(event.data[reporter.metric]):
                    _finish_all(ticket.run_id, "stopped")

        sub = get_host().bus.subscribe(on_record, kinds=["record"], schemas=["metrics"])
    _say(f"trial {ticket.number}: run {ticket.run_id}: " + " ".join(f"{k}={v}" for k, v in ticket.values.items()))
    error: BaseException | None = None
    try:
        function()
    except Exception as exc:  # noqa: BLE001 - the trial fails with it; the agent goes on, as W&B's does
        error = exc
        traceback.print_exc()
    finally:
        if sub is not None:
            sub.unsubscribe()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if reporter.pruned:
        _finish_all(ticket.run_id, "stopped")
        return _tell(sweep, ticket, "stopped")
    if error is not None:
        _finish_all(ticket.run_id, "failed", error)
        run.finish("failed", error)
        return _tell(sweep, ticket, "failed")
    _finish_all(ticket.run_id, "finished")
    run.finish("finished")
    return _tell(sweep, ticket, "finished")


def _finish_all(run_id: str, status: str, error: BaseException | None = None) -> None:
    """Finish every open ``Run`` of this process on ``run_id`` (the function's and the agent's)."""
    from tracker.write.api import current_run

    while True:
        r = current_run()
        if r is None or r.id != run_id:
            # the function's run may sit under another active one; look through them all
            from tracker.write.api import _active

            r = next((x for x in reversed(_active) if x.id == run_id), None)
            if r is None:
                return
        r.finish(status, error)


def run_agent(sweep: Sweep, *, count: int | None = None, function: Callable[[], Any] | None = None) -> int:
    """Run trials of ``sweep`` until it is done (stopped, grid used up, run cap, target) or ``count`` ran.

    :returns: the number of trials this agent ran.
    :raises SweepConfigError: before any trial, when the program does not exist here.
    """
    if count is not None and (type(count) is not int or count < 1):
        raise TrackerError(f"count: expected a positive int, given {count!r}")
    if function is None:
        check_program(sweep)
    elif not callable(function):
        raise TrackerError(f"function: expected a callable, given {type(function).__name__}")
    done = 0
    while count is None or done < count:
        stale = sweep.fail_stale()
        if stale:
            _say(f"trials {', '.join(map(str, stale))}: their agent is gone; marked failed")
        ticket = sweep.ask()
        if ticket is None:
            why = sweep.why_done()
            _say(f"sweep {sweep.id} is done: {why}" if why else f"sweep {sweep.id}: no trial to run")
            break
        if function is None:
            run_command_trial(sweep, ticket)
        else:
            run_function_trial(sweep, ticket, function)
        done += 1
    return done


def environment_trial() -> Mapping[str, str] | None:
    """The trial this process was started for by an agent (its run, store and sweep), or ``None``."""
    run_id, sweep_id = os.environ.get(ENV_RUN_ID), os.environ.get(ENV_SWEEP_ID)
    if not run_id or not sweep_id:
        return None
    return {"run_id": run_id, "sweep_id": sweep_id, "store": os.environ.get(ENV_STORE, "")}

