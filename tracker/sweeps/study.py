"""A sweep as an Optuna study: where it is stored, how a trial is handed out, what the trials say.

The study lives in a journal file under ``<store>/sweeps/<id>/`` (Optuna's
``JournalStorage`` over a ``JournalFileBackend``: appends under a lock file,
safe on a shared file system) or, with ``--storage postgresql://...``, in
Optuna's RDB storage. ``sweep.json`` beside it says which, so an agent needs
only the sweep id. Handing out a trial (the run cap, the grid's remaining
points, Optuna's ``ask``) happens under one lock per sweep (a lock file next
to the journal; a PostgreSQL advisory lock), so agents in many processes and
on many machines never take one grid point twice and never pass ``run_cap``.
Optuna is imported here only, when a sweep is used.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import socket
import string
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import TrackerError
from tracker.sweeps.config import Param, SweepConfig, check_sweep_config

SWEEPS = "sweeps"
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ALPHABET = string.ascii_lowercase + string.digits
#: Optuna's trial states as the words runs use.
STATES = {"COMPLETE": "finished", "PRUNED": "stopped", "FAIL": "failed", "RUNNING": "running", "WAITING": "waiting"}


def optuna() -> Any:
    """The ``optuna`` module, quiet; a TrackerError naming the extra when it is not installed."""
    try:
        import optuna as _optuna
    except ImportError:
        raise TrackerError('sweeps need Optuna: pip install "tracker-core[sweeps]"') from None
    _optuna.logging.set_verbosity(_optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=_optuna.exceptions.ExperimentalWarning)
    return _optuna


def check_sweep_id(sweep_id: str) -> str:
    """A sweep id; W&B's ``entity/project/ID`` form is taken too (its last part is the id).

    :raises TrackerError: anything but ``[A-Za-z0-9_-]{1,64}``.
    """
    if isinstance(sweep_id, str) and "/" in sweep_id:
        sweep_id = sweep_id.rstrip("/").rsplit("/", 1)[-1]
    if not isinstance(sweep_id, str) or not _ID.fullmatch(sweep_id):
        raise TrackerError(f"not a sweep id: {sweep_id!r} (expected letters, digits, '_' or '-', at most 64)")
    return sweep_id


def redact(url: str | None) -> str | None:
    """A storage URL with its password replaced by ``***``, fit to print."""
    if url is None:
        return None
    return re.sub(r"(://[^:/@]+:)[^@/]*@", r"\1***@", url)


def without_password(url: str | None) -> str | None:
    """A storage URL without its password: what ``sweep.json`` keeps (libpq finds the password in
    ``PGPASSWORD`` or ``~/.pgpass``, or an agent is given ``--storage URL``)."""
    if url is None:
        return None
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1@", url)


def sweeps_dir(root: Path) -> Path:
    """``<store>/sweeps``."""
    return Path(root) / SWEEPS


def _is_url(storage: str | None) -> bool:
    return storage is not None and "://" in storage


def _storage(url: str | None, folder: Path | None) -> Any:
    o = optuna()
    if _is_url(url):
        return _rdb_storage(url)
    if folder is None:
        raise TrackerError("a sweep without a storage URL lives in a store folder: give the store")
    path = Path(url) if url else folder / "journal.log"
    return o.storages.JournalStorage(_journal_backend(o, str(path)))


#: Optuna's RDB storages opened by this process, by URL: one engine (and pool of connections) per database.
_rdb: dict[str, Any] = {}


def _rdb_storage(url: str, *, create: bool = True) -> Any:
    """Optuna's RDB storage at ``url``, whose connections have the team's deadline and keepalives.

    :param create: make Optuna's tables when they are missing (``False``: a reader, that only looks).
    """
    storage = _rdb.get(url)
    if storage is not None:
        return storage
    o = optuna()
    try:
        storage = o.storages.RDBStorage(_driver_url(url), engine_kwargs=_engine_kwargs(url, ping=create),
                                        skip_table_creation=not create)
    except Exception as exc:  # noqa: BLE001 - a driver's or server's error, as one line
        raise TrackerError(f"cannot open the sweep storage {redact(url)}: {type(exc).__name__}: "
                           f"{_first_line(exc)}") from None
    _rdb[url] = storage
    return storage


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


@contextlib.contextmanager
def storage_errors(url: str | None) -> Iterator[None]:
    """Errors of reading the sweep storage at ``url`` as one line, its password masked: a lost or unreachable
    database is :class:`~tracker.core.errors.StoreUnavailable` (the dashboard's 503), anything else a TrackerError."""
    from tracker.core.errors import StoreUnavailable
    from tracker.core.urls import redact_url, url_secrets

    try:
        yield
    except TrackerError:
        raise
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy's or the driver's error, as one line
        # Optuna wraps the driver's error (StorageInternalError "... during the commit"): the cause says what it was.
        chain, seen = [], exc
        while seen is not None and len(chain) < 8:
            chain.append(seen)
            seen = seen.__cause__ or seen.__context__
        lost = next((e for e in chain if {c.__name__ for c in type(e).__mro__}
                     & {"OperationalError", "InterfaceError", "DisconnectionError", "TimeoutError"}), None)
        text = _first_line(lost if lost is not None else exc)
        for secret in url_secrets(url or ""):
            text = text.replace(secret, "***")
        if lost is not None:
            raise StoreUnavailable(f"the sweep storage {redact_url(url)} cannot be reached: {text}") from None
        raise TrackerError(f"reading the sweep storage {redact_url(url)} failed: {type(exc).__name__}: "
                           f"{text}") from None


def _libpq_url(url: str) -> str | None:
    """The ``postgresql://`` URL libpq takes for a SQLAlchemy PostgreSQL URL through psycopg 3, else ``None``."""
    m = re.match(r"^(?:postgres|postgresql)(?:\+psycopg)?://", url)
    return "postgresql://" + url[m.end():] if m else None


def _engine_kwargs(url: str, *, ping: bool = True) -> dict[str, Any]:
    """SQLAlchemy's engine options for the sweep storage at ``url``.

    A PostgreSQL database (the team's) is reached through the team store's connections (psycopg 3):
    ``[team] timeout`` bounds each connection attempt and each round trip, and TCP keepalives probe idle
    connections (:mod:`tracker.team.connection`), so an agent or a dashboard never waits for ever on a
    link that dropped. With psycopg2 instead, libpq's own limits apply (connecting, keepalives).

    :param ping: test a pooled connection before each use (an agent rides over a server restart); a
        reader (the dashboard) does not, so that a request over a dead link fails within one timeout
        (a connection that failed is dropped from the pool, and the next request connects again).
    """
    kw: dict[str, Any] = {"pool_pre_ping": ping}
    raw = _libpq_url(url)
    if raw is None:
        return kw
    from tracker.host import get_host
    from tracker.team.connection import connect, libpq_params, team_timeout

    timeout = team_timeout(get_host().config)
    if _driver_url(url).startswith("postgresql+psycopg://"):
        kw["creator"] = lambda: connect(raw, timeout=timeout)
    else:
        kw["connect_args"] = libpq_params(timeout)
    return kw


def default_storage(root: Path | None, sweep_id: str | None, config: Any) -> str | None:
    """Where a sweep is when no ``--storage`` was given: its ``sweep.json`` in the store says; without one
    (a new sweep, or one made on another machine), the team database of ``[team] url`` if one is set."""
    from tracker.core.urls import team_url

    if root is not None and sweep_id is not None and (sweeps_dir(root) / check_sweep_id(sweep_id) /
                                                       "sweep.json").is_file():
        return None
    return team_url(config)


def _journal_backend(o: Any, path: str) -> Any:
    """Optuna's ``JournalFileBackend`` whose appends follow the store's durability.

    Optuna fsyncs every journal line; a trial takes four, which is most of what
    an agent adds to a trial. With ``durability = "process"`` (the default, as
    for the runs' own lines) a line is one ``os.write`` under the journal's lock
    and survives a kill -9 of any agent; ``"fsync"`` keeps Optuna's fsync.
    """
    from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock

    from tracker.host import get_host

    fsync = get_host().config.fsync

    class Backend(JournalFileBackend):
        def __init__(self) -> None:
            self._tracker_lock = JournalFileSymlinkLock(path)  # Optuna's default lock, kept to take it here
            super().__init__(path, self._tracker_lock)

        def append_logs(self, logs: list[dict[str, Any]]) -> None:
            if fsync:
                super().append_logs(logs)
                return
            data = ("\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n").encode()
            self._tracker_lock.acquire()
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, data)  # one write of whole lines, appended under the lock
                finally:
                    os.close(fd)
            finally:
                self._tracker_lock.release()

    return Backend()


def _driver_url(url: str) -> str:
    """A PostgreSQL URL as SQLAlchemy takes it: psycopg 3 (the team extra's driver), else psycopg2."""
    import importlib.util

    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            rest = url[len(prefix):]
            if importlib.util.find_spec("psycopg") is not None:
                return "postgresql+psycopg://" + rest
            return "postgresql://" + rest
    return url


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
        self.storage = _storage(self.storage_url, self.folder)
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
        if _is_url(self.storage_url):
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
    if root is None or not isinstance(run_id, str) or not _ID.fullmatch(run_id) or \
            not (Path(root) / "runs" / run_id).is_dir():
        return None
    from tracker.read.reader import Store

    try:
        return Store(root).run(run_id).info
    except TrackerError:
        return None


def new_sweep_id() -> str:
    """A fresh sweep id: eight lower-case letters and digits, as W&B's."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(8))


def create_sweep(config: SweepConfig, root: Path, *, project: str | None = None, storage: str | None = None,
                 seed: int | None = None, sweep_id: str | None = None) -> str:
    """Create the sweep's study and ``<store>/sweeps/<id>/sweep.json``; return the id.

    :param storage: an Optuna storage URL (``postgresql://...``); default: a journal file in the sweep's folder.
    :param seed: seeds the sampler of a lone agent (reproducible sweeps); agents started later offset it.
    """
    o = optuna()
    sweep_id = check_sweep_id(sweep_id) if sweep_id else new_sweep_id()
    folder = sweeps_dir(root) / sweep_id
    if folder.exists():
        raise TrackerError(f"sweep {sweep_id} exists already in {root}")
    try:
        folder.mkdir(parents=True)
    except OSError as exc:
        raise TrackerError(f"cannot create {folder}: {exc.strerror or exc}") from None
    meta = {"id": sweep_id, "created_at": time.time(), "project": project or config.project,
            "storage": without_password(storage), "seed": seed, "config": config.raw}
    study = o.create_study(study_name=sweep_id, storage=_storage(storage, folder),
                           direction="maximize" if config.goal == "maximize" and config.metric else "minimize",
                           load_if_exists=False)
    study.set_user_attr("tracker", {k: v for k, v in meta.items() if k != "storage"})
    tmp = folder / "sweep.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, folder / "sweep.json")
    return sweep_id


def read_meta(root: Path | None, sweep_id: str, storage: str | None = None) -> dict[str, Any]:
    """The sweep's facts: from ``sweep.json`` in the store, else (``storage`` given) from the study itself.

    :param root: the store folder, or ``None`` for a sweep that only the database at ``storage`` holds.
    """
    sweep_id = check_sweep_id(sweep_id)
    path = sweeps_dir(root) / sweep_id / "sweep.json" if root is not None else None
    if path is not None and path.is_file():
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise TrackerError(f"{path}: cannot be read: {exc}") from None
        if storage is not None:
            meta["storage"] = storage
        return meta
    if storage is None:
        raise TrackerError(f"no sweep {sweep_id} in {root} (create one with `tracker sweep create FILE`; a sweep "
                           "in a database needs --storage URL)")
    o = optuna()
    try:
        study = o.load_study(study_name=sweep_id, storage=_storage(storage, None))
    except KeyError:
        raise TrackerError(f"no sweep {sweep_id} in {redact(storage)}") from None
    meta = dict(study.user_attrs.get("tracker") or {})
    if "config" not in meta:
        raise TrackerError(f"study {sweep_id} in {redact(storage)} was not made by `tracker sweep create`")
    meta["storage"] = storage
    return meta


def open_sweep(root: Path | None, sweep_id: str, storage: str | None = None, *, seed_offset: int = 0) -> Sweep:
    """Open sweep ``sweep_id`` of the store at ``root`` (``None``: of the database at ``storage`` alone).

    :raises TrackerError: an unknown sweep, a storage that cannot be opened, Optuna missing.
    """
    sweep_id = check_sweep_id(sweep_id)
    where = Path(root) if root is not None else None
    return Sweep(where, sweep_id, read_meta(where, sweep_id, storage), seed_offset=seed_offset)


def list_db_sweeps(url: str) -> list[dict[str, Any]]:
    """Every sweep whose study is in the database at ``url`` (made by ``tracker sweep create``), newest first.

    A database that holds no Optuna tables (no sweep ever used it) has none; nothing is created in it.

    :raises TrackerError: the database cannot be reached (one line, the password masked).
    """
    storage = _rdb.get(url)
    if storage is None:
        if not _has_optuna_tables(url):
            return []
        storage = _rdb_storage(url, create=False)
    with storage_errors(url):
        studies = storage.get_all_studies()
    out = []
    for study in studies:
        meta = study.user_attrs.get("tracker")
        if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict) or \
                not _ID.fullmatch(study.study_name):
            continue  # a study of someone's own Optuna code, in the same database
        out.append(_listed(study.study_name, meta, redact(url)))
    return sorted(out, key=lambda m: -(m.get("created_at") or 0))


def _has_optuna_tables(url: str) -> bool:
    """Whether Optuna's tables are in the database at ``url`` (looked at without making them)."""
    import sqlalchemy

    with storage_errors(url):
        engine = sqlalchemy.create_engine(_driver_url(url), **_engine_kwargs(url, ping=False))
        try:
            return bool(sqlalchemy.inspect(engine).has_table("study_user_attributes"))
        finally:
            engine.dispose()


def _listed(sweep_id: str, meta: dict[str, Any], storage: str) -> dict[str, Any]:
    cfg = meta.get("config") or {}
    metric = cfg.get("metric")
    return {"id": sweep_id, "name": cfg.get("name"), "project": meta.get("project"), "method": cfg.get("method"),
            "metric": metric.get("name") if isinstance(metric, dict) else metric,
            "created_at": meta.get("created_at"), "storage": storage}


def list_sweeps(root: Path) -> list[dict[str, Any]]:
    """Every sweep of the store (newest first), from the ``sweep.json`` files: id, name, project, method."""
    out = []
    folder = sweeps_dir(root)
    if not folder.is_dir():
        return out
    for d in folder.iterdir():
        path = d / "sweep.json"
        if not _ID.fullmatch(d.name) or not path.is_file():
            continue
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.append(_listed(d.name, meta, redact(meta.get("storage")) or "journal"))
    return sorted(out, key=lambda m: -(m.get("created_at") or 0))
