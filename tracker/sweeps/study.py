"""A sweep as an Optuna study: sampler and pruner from the sweep file, trials handed out under a lock, their results.

Handing out a trial (the run cap, the grid's remaining points, Optuna's
``ask``) happens under one lock per sweep (a lock file next to the journal;
a PostgreSQL advisory lock), so agents in many processes and on many
machines never take one grid point twice and never pass ``run_cap``. Where
the study is kept is :mod:`tracker.sweeps.storage`; creating and listing
sweeps, :mod:`tracker.sweeps.catalog` (their names are importable from here
too, where they were first). Optuna is imported only when a sweep is used.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import TrackerError
from tracker.sweeps.catalog import create_sweep, list_db_sweeps, list_sweeps, new_sweep_id, read_meta
from tracker.sweeps.config import Param, SweepConfig, check_sweep_config
from tracker.sweeps.storage import (
    SWEEP_ID,
    SWEEPS,
    check_sweep_id,
    default_storage,
    is_url,
    open_storage,
    optuna,
    redact,
    storage_errors,
    sweeps_dir,
    without_password,
)

#: Optuna's trial states as the words runs use.
STATES = {"COMPLETE": "finished", "PRUNED": "stopped", "FAIL": "failed", "RUNNING": "running", "WAITING": "waiting"}


def _grid_sampler(o: Any) -> type:
    class Grid(o.samplers.GridSampler):
        """Optuna's GridSampler; the agent, not the sampler, ends the sweep when the grid is used up."""

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            # GridSampler.after_trial calls study.stop(), which only works inside study.optimize.
            return None

    return Grid


@attrs.define
class Ticket:
    """A trial handed to an agent: the Optuna trial, the run to make, and the values to give it."""

    trial: Any
    run_id: str
    values: dict[str, Any]
    config: dict[str, Any]

    @property
    def number(self) -> int:
        """The trial's number in the sweep (0, 1, ...)."""
        return int(self.trial.number)


class Sweep:
    """One sweep: its checked configuration and its Optuna study (opened with :func:`open_sweep`)."""

    def __init__(self, root: Path | None, sweep_id: str, meta: dict[str, Any], *, seed_offset: int = 0) -> None:
        o = optuna()
        #: the store of the trials' runs; ``None`` for a sweep read from the team database alone
        self.root = Path(root) if root is not None else None
        self._store: Any = None
        self.id = sweep_id
        self.meta = meta
        self.folder = sweeps_dir(self.root) / sweep_id if self.root is not None else None
        self.storage_url: str | None = meta.get("storage")
        self.config: SweepConfig = check_sweep_config(meta["config"], f"sweep {sweep_id}")
        self.project: str | None = meta.get("project")
        self.storage = open_storage(self.storage_url, self.folder)
        seed = meta.get("seed")
        seed = None if seed is None else int(seed) + 1_000_003 * seed_offset
        self.study = o.load_study(study_name=sweep_id, storage=self.storage, sampler=self._sampler(o, seed),
                                  pruner=self._pruner(o))

    @property
    def store(self) -> Any:
        """The store of the trials' runs (opened once)."""
        if self._store is None:
            from tracker.read.reader import Store

            if self.root is None:
                raise TrackerError(f"sweep {self.id} was opened without a store for its trials' runs")
            self._store = Store(self.root)
        return self._store

    # --- Optuna's parts ------------------------------------------------------------------------
    def _sampler(self, o: Any, seed: int | None) -> Any:
        c = self.config
        if c.method == "grid":
            space = {p.name: p.grid_choices() for p in c.sampled}
            return _grid_sampler(o)(space, seed=seed)
        if c.method == "random":
            return o.samplers.RandomSampler(seed=seed)
        return o.samplers.TPESampler(seed=seed, constant_liar=True)

    def _pruner(self, o: Any) -> Any:
        hb = self.config.hyperband
        if hb is None:
            return o.pruners.NopPruner()
        return o.pruners.HyperbandPruner(min_resource=hb.min_iter, max_resource=hb.max_iter, reduction_factor=hb.eta)

    def _distribution(self, o: Any, p: Param) -> Any:
        d = o.distributions
        if self.config.method == "grid":
            return d.CategoricalDistribution(p.grid_choices())
        kind, lo, hi, log = p.space()
        if kind == "categorical":
            return d.CategoricalDistribution(lo)
        if kind == "int":
            return d.IntDistribution(lo, hi)
        return d.FloatDistribution(lo, hi, log=log)

    # --- handing out trials --------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The sweep's lock: held while a trial is handed out."""
        if is_url(self.storage_url):
            engine = getattr(self.storage, "engine", None)
            if engine is None or engine.dialect.name != "postgresql":
                yield  # one SQLite file or MySQL server: the database serialises the writes well enough
                return
            from sqlalchemy import text

            key = int.from_bytes(self.id.encode()[:8].ljust(8, b"\0"), "big", signed=True)
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            return
        from optuna.storages.journal import JournalFileOpenLock

        lock = JournalFileOpenLock(str(self.folder / "ask.lock"))
        lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def stopped(self) -> bool:
        """Whether ``tracker sweep stop`` was given."""
        return self.study.user_attrs.get("stopped_at") is not None

    def why_done(self, trials: list[Any] | None = None) -> str | None:
        """Why no new trial may start (stopped, run cap, grid used up, target reached), or ``None``."""
        o = optuna()
        if self.stopped():
            return "the sweep was stopped"
        trials = self.study.get_trials(deepcopy=False) if trials is None else trials
        c = self.config
        if c.run_cap is not None and len(trials) >= c.run_cap:
            return f"run_cap {c.run_cap} reached"
        if c.method == "grid":
            taken = {t.system_attrs.get("grid_id") for t in trials}
            if len(self._grid_size_ids() - taken) == 0:
                return "every grid point has been taken"
        if c.target is not None and c.metric is not None:
            done = [t.value for t in trials if t.state == o.trial.TrialState.COMPLETE and t.value is not None]
            if done and any((v <= c.target) if c.goal == "minimize" else (v >= c.target) for v in done):
                return f"metric.target {c.target} reached"
        return None

    def _grid_size_ids(self) -> set[int]:
        n = 1
        for p in self.config.sampled:
            n *= len(p.grid_choices())
        return set(range(n))

    def ask(self) -> Ticket | None:
        """The next trial, or ``None`` when the sweep is done (see :meth:`why_done`)."""
        from tracker.core.format import new_run_id

        o = optuna()
        with self.lock():
            if self.why_done() is not None:
                return None
            dists = {p.name: self._distribution(o, p) for p in self.config.sampled}
            trial = self.study.ask(fixed_distributions=dists)
            values: dict[str, Any] = {}
            for p in self.config.params:
                if not p.sampled:
                    values[p.name] = p.value
                elif self.config.method == "grid":
                    values[p.name] = p.grid_value(trial.params[p.name])
                else:
                    values[p.name] = p.to_value(trial.params[p.name])
            run_id = new_run_id()
            # One attribute, one journal line (each is appended and fsynced on its own).
            trial.set_user_attr("trial", {"run_id": run_id, "host": socket.gethostname(), "pid": os.getpid(),
                                          "values": values})
        return Ticket(trial=trial, run_id=run_id, values=values, config=self.config.nest(values))

    def fail_stale(self) -> list[int]:
        """Mark failed the running trials whose agent is gone (this host: its process; any host: its run).

        :returns: the numbers of the trials marked.
        """
        o = optuna()
        here = socket.gethostname()
        marked = []
        for t in self.study.get_trials(deepcopy=False, states=(o.trial.TrialState.RUNNING,)):
            attrs_ = facts(t)
            if attrs_.get("host") == here and isinstance(attrs_.get("pid"), int):
                gone = not _alive(attrs_["pid"])  # this host: the agent's process says it all
            else:
                # Another host: its run says so. A run that ended while its trial still runs is one
                # whose agent died between the two (an agent tells the study right after the run ends).
                info = _run_info(self.root, attrs_.get("run_id"))
                gone = info is not None and (info.status == "crashed" or (
                    info.status != "running" and info.ended_at is not None and time.time() - info.ended_at > 60))
            if gone:
                with contextlib.suppress(Exception):  # another agent may have marked it meanwhile
                    self.study._storage.set_trial_user_attr(t._trial_id, "reason", "its agent stopped mid-trial")
                    self.study.tell(t.number, state=o.trial.TrialState.FAIL, skip_if_finished=True)
                    marked.append(t.number)
        return marked

    def stop(self) -> None:
        """No trial starts after this; running ones finish (``tracker sweep stop``)."""
        self.study.set_user_attr("stopped_at", time.time())

    # --- what the trials say -------------------------------------------------------------------
    def trials(self) -> list[dict[str, Any]]:
        """Every trial as plain data, best first: finished by the metric, then stopped, running, failed."""
        o = optuna()
        c = self.config
        out = []
        for t in self.study.get_trials(deepcopy=False):
            a = {**t.user_attrs, **facts(t)}
            state = STATES.get(t.state.name, t.state.name.lower())
            value = None
            if t.state == o.trial.TrialState.COMPLETE and c.metric is not None:
                value = t.value
            elif t.intermediate_values:
                value = t.intermediate_values[max(t.intermediate_values)]
            out.append({"number": t.number, "run_id": a.get("run_id"), "state": state,
                        "metric": value, "params": a.get("values") or dict(t.params),
                        "exit_code": a.get("exit_code"), "reason": a.get("reason"),
                        "started_at": t.datetime_start.timestamp() if t.datetime_start else None,
                        "ended_at": t.datetime_complete.timestamp() if t.datetime_complete else None,
                        "iterations": len(t.intermediate_values)})
        sign = -1.0 if c.goal == "maximize" else 1.0
        rank = {"finished": 0, "stopped": 1, "running": 2, "waiting": 3, "failed": 4}

        def key(r: dict[str, Any]) -> tuple[Any, ...]:
            v = r["metric"]
            ok = isinstance(v, (int, float)) and not math.isnan(v)
            return (rank.get(r["state"], 5), 0 if ok else 1, sign * v if ok else 0.0, r["number"])

        return sorted(out, key=key)

    def best_so_far(self) -> list[dict[str, Any]]:
        """Per finished trial in number order: its metric and the best metric so far."""
        o = optuna()
        best = None
        out = []
        for t in sorted(self.study.get_trials(deepcopy=False, states=(o.trial.TrialState.COMPLETE,)),
                        key=lambda t: t.number):
            if self.config.metric is None or t.value is None:
                continue
            v = float(t.value)
            best = v if best is None else (min(best, v) if self.config.goal == "minimize" else max(best, v))
            out.append({"number": t.number, "run_id": facts(t).get("run_id"), "metric": v, "best": best})
        return out

    def importances(self) -> dict[str, float]:
        """Optuna's ``get_param_importances`` over the finished trials; empty when there are too few."""
        o = optuna()
        done = self.study.get_trials(deepcopy=False, states=(o.trial.TrialState.COMPLETE,))
        if len(done) < 2 or self.config.metric is None:
            return {}
        try:
            return {k: float(v) for k, v in o.importance.get_param_importances(self.study).items()}
        except Exception:  # noqa: BLE001 - too few distinct values, one parameter: no importances to show
            return {}

    def state(self) -> str:
        """``running`` (trials may still start), ``stopped`` or ``finished``."""
        if self.stopped():
            return "stopped"
        return "finished" if self.why_done() is not None else "running"

    def info(self) -> dict[str, Any]:
        """The sweep's facts as plain data (no password of a storage URL)."""
        c = self.config
        counts: dict[str, int] = {}
        for t in self.study.get_trials(deepcopy=False):
            s = STATES.get(t.state.name, t.state.name.lower())
            counts[s] = counts.get(s, 0) + 1
        best = self.best_so_far()
        return {"id": self.id, "name": c.name, "project": self.project, "method": c.method, "metric": c.metric,
                "goal": c.goal if c.metric else None, "state": self.state(), "run_cap": c.run_cap,
                "created_at": self.meta.get("created_at"), "storage": redact(self.storage_url) or "journal",
                "trials": sum(counts.values()), "counts": counts,
                "best": best[-1]["best"] if best else None, "parameters": [p.name for p in c.sampled],
                "config": c.raw}


def facts(trial: Any) -> dict[str, Any]:
    """What the agent recorded on a trial: ``run_id``, ``host``, ``pid``, ``values``."""
    f = trial.user_attrs.get("trial")
    return f if isinstance(f, dict) else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie has exited: its run cannot go on
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    return True


def _run_info(root: Path | None, run_id: Any) -> Any:
    # A run id recorded on a trial is a folder name here: the pattern of sweep ids keeps it one.
    if root is None or not isinstance(run_id, str) or not SWEEP_ID.fullmatch(run_id) or \
            not (Path(root) / "runs" / run_id).is_dir():
        return None
    from tracker.read.reader import Store

    try:
        return Store(root).run(run_id).info
    except TrackerError:
        return None

def open_sweep(root: Path | None, sweep_id: str, storage: str | None = None, *, seed_offset: int = 0) -> Sweep:
    """Open sweep ``sweep_id`` of the store at ``root`` (``None``: of the database at ``storage`` alone).

    :raises TrackerError: an unknown sweep, a storage that cannot be opened, Optuna missing.
    """
    sweep_id = check_sweep_id(sweep_id)
    where = Path(root) if root is not None else None
    return Sweep(where, sweep_id, read_meta(where, sweep_id, storage), seed_offset=seed_offset)


__all__ = ["STATES", "SWEEPS", "Sweep", "Ticket", "check_sweep_id", "create_sweep", "default_storage", "facts",
           "list_db_sweeps", "list_sweeps", "new_sweep_id", "open_sweep", "optuna", "read_meta", "redact",
           "storage_errors", "sweeps_dir", "without_password"]
