"""The embedded logging API: ``start_run``, ``Run.log``, ``Run.log_record``, ``Run.finish``.

``log`` checks the values and hands them to the run's route of their schema
(:mod:`tracker.write.route`), which writes the line with one ``os.write`` before
``log`` returns, so the record survives a kill -9. A record that a plugin's
handler wants is published on the bus as an ``Event`` instead, and the
store's handler, first on the bus, writes it the same way.
"""

from __future__ import annotations

import atexit
import math
import os
import sys
import threading
import time as _time_mod
import warnings
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import attrs

from tracker.core.config import resolve_store_path
from tracker.core.errors import SchemaError, StoreError, TrackerError
from tracker.core.format import METRICS, RECORD, RUN_FINISHED, check_run_id, new_run_id, nonfinite_paths
from tracker.core.records import Event
from tracker.core.values import MAX_INT, RESERVED, check_metrics, given, storable, unwrap_numpy
from tracker.host.bus import TrackerWarning
from tracker.host.host import Host, get_host
from tracker.write import crash
from tracker.write.origin import error_facts, origin_facts
from tracker.write.route import Attachment, attach, detach, fast_method
from tracker.write.runfiles import RunFileMethods
from tracker.write.runstate import RunStateMethods, WandbRunMethods
from tracker.write.start import recorders_for, run_fields, sampler_for, stop_recorders

if TYPE_CHECKING:
    from tracker.write.runstate import RunConfig, RunSummary
    from tracker.write.wandb.logging import WandbExtras

_time = _time_mod.time
STATUSES = ("finished", "failed", "crashed", "stopped")  # stopped: ended by a sweep's pruner
# ``run.log`` writes a dict straight away when its values are exactly of these types.
_all_numbers = frozenset({float, int, bool}).issuperset
_not_metric_names = RESERVED | {""}
_active: list[Run] = []
_lock = threading.RLock()
#: The run a sweep stopped last, until the next run starts: ``tracker.log`` drops values for it.
_stopped: list[Run] = []



#: ``log()`` called without values (W&B's ``wandb.log()``: commit the pending step); ``log(None)`` stays an error.
LEFT_OUT: Any = type("LeftOut", (), {"__repr__": lambda self: "<values left out>"})()

class Run(RunStateMethods, RunFileMethods, WandbRunMethods):
    """A run being logged by this process. Use :func:`start_run` to make one.

    :ivar id: the run id (its folder name in the store).
    :ivar name: free-text name, or ``None``.
    :ivar project: free-text project, or ``None``.
    :ivar path: the run's folder.
    :ivar status: ``running`` until :meth:`finish`.
    :ivar group: the group given to :func:`start_run`, or ``None``; ``job_type`` likewise.
    """

    group: str | None = None
    job_type: str | None = None

    def __init__(self, host: Host, att: Attachment, name: str | None, project: str | None, path: Path) -> None:
        self.id = att.run_id
        self.name = name
        self.project = project
        self.path = path
        self.status = "running"
        self._host = host
        self._att = att
        self._routes = att.routes
        #: ``[next automatic step]`` of this object: one more than the largest step it or, before it
        #: started, this process wrote; advanced by the writer under its lock.
        self._steps = att.writer.next_steps()
        # run.config / run.summary: built on first use; a run this call did not
        # create starts from what the store holds.
        self._initial_config: dict[str, Any] | None = None
        self._config: RunConfig | None = None
        self._summary: RunSummary | None = None
        #: W&B's pending step, defined metrics, watched models, TensorBoard sync: made on first use.
        self._wb: WandbExtras | None = None
        #: The thread that started the run: its death by an exception ends the run (tracker.write.crash).
        self._thread = threading.get_ident()

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name Run does not have: W&B's run methods that tracker does not
        # offer say what to use instead; anything else is an ordinary AttributeError.
        from tracker.write.runstate import UNSUPPORTED, unsupported

        if name in UNSUPPORTED:
            raise unsupported(name, "run")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def store(self) -> Path:
        """The store folder this run lives in."""
        return self._att.store

    @property
    def writer_id(self) -> str:
        """The id of this process's segment of the run."""
        return self._att.writer.id

    def log(self, values: dict[str, Any] = LEFT_OUT, step: int | None = None, commit: bool | None = None) -> None:
        """Log scalar metrics (schema ``metrics``): ``{name: number}``.

        W&B's rules hold too (docs/wandb.md): ``commit=False`` merges
        ``values`` into a pending step, written at the next committed ``log``
        (or at ``finish``); nested dicts are flattened with ``/``;
        ``tracker.Image``, ``tracker.Histogram`` and ``tracker.Table`` values
        (and lists of them) become ``image``, ``histogram`` and ``table`` records at the step.

        :param values: metric names to floats, ints (within ±2**53), bools, numpy
            scalars or 0-d tensors; NaN and infinities are data and round-trip exactly.
            Strings are stored as ``text`` records beside the metrics, at the same step.
            Left out (W&B's ``wandb.log()``): commit the pending step, or an empty one.
        :param step: the step; by default the next one (one more than the
            largest so far; each call gets its own, also from several threads).
        :param commit: ``False``: hold the values for the pending step; ``None`` or ``True``: write.
        :raises SchemaError: for a bad name, value or step; nothing is written.
        :raises StoreError: when the line could not be written.
        """
        if step is not None:
            step = resolve_step(step, METRICS)
        # A plain dict of floats, ints and bools under ordinary names is checked
        # by the types of its values only: the route's one orjson call also
        # refuses non-str names, lone surrogates and ints beyond ±(2**53 - 1)
        # with a TypeError, before writing anything. Anything else takes the
        # full check, which names the problem. A finished run has no routes.
        route = self._routes.get(METRICS)
        if route is not None and commit is None and (self._wb is None or not self._wb.has_pending) \
                and type(values) is dict \
                and _all_numbers(map(type, values.values())) and _not_metric_names.isdisjoint(values):
            try:
                route.append(self._steps, step, _time(), values, strict=True)
                return
            except TypeError:
                pass
        if self.status != "running":
            if self.status == "stopped":
                return  # a trial its sweep stopped: further values are dropped, as W&B drops them
            raise self._not_running()
        if values is LEFT_OUT:
            values = {}
        if commit is not None or self._wb is not None or _wandb_values(values):
            self._wandb().log(values, step, commit)
            return
        self._write(METRICS, check_metrics(values), step, _time())

    if not TYPE_CHECKING:
        # With the C extension: run.log(values[, step]) of plain numbers in C (tracker/write/_fastline.c),
        # anything else by the method above.
        log = fast_method(log, "log")

    def log_at(self, time: float, values: dict[str, Any], step: int | None = None) -> None:
        """:meth:`log` with the record's wall time given: for importers, which keep the source's times.

        :param time: seconds since the epoch, a finite number.
        :raises SchemaError: for a bad time, name, value or step; nothing is written.
        """
        if self.status != "running":
            raise self._not_running()
        at = check_time(time)
        self._write(METRICS, check_metrics(values), None if step is None else resolve_step(step, METRICS), at)

    def log_record(self, schema: Any, record: Any = None, /, step: int | None = None,
                   **fields: Any) -> None:
        """Log a typed record of a plugin's schema.

        ``run.log_record("fft.loss_point", step=3, total_loss=0.4, ...)``, or
        with a mapping or an instance of the schema's attrs class as the second
        argument; ``run.log_record(instance)`` finds the schema by its class.

        :raises SchemaError: unknown schema, missing or unknown field, wrong
            type, failed validator, bad step; every problem is named, nothing is written.
        """
        if not isinstance(schema, str):
            if record is not None:
                raise TypeError("log_record(schema, record): schema must be a schema name (str)")
            schema, record = self._schema_of(schema), schema
        if self.status != "running":
            raise self._not_running()
        compiled = self._host.schemas.get(schema) or self._host.schema(schema)
        if record is None:
            record = fields
        elif fields:
            if attrs.has(type(record)):
                record = {**attrs.asdict(record, recurse=False), **fields}
            else:
                record = {**record, **fields}
        data = compiled.validate(record)
        if step is not None:
            step = resolve_step(step, schema)
        route = self._routes.get(schema)
        if route is None:
            self._write(schema, data, step, _time())
        else:
            route.append(self._steps, step, _time(), data)

    if not TYPE_CHECKING:
        # With the C extension: a flat schema's record given as keywords or a dict, in C; anything else
        # (an attrs instance, numpy values, a schema with converters) by the method above.
        log_record = fast_method(log_record, "log_record")

    def _write(self, schema: str, data: dict[str, Any], step: int | None, time: float,
               advance: bool = True) -> None:
        """Write a checked record: by its schema's route, or as an Event when a plugin wants it too.

        :param step: the step, or ``None`` for this object's next automatic step.
        :param advance: let ``step`` advance the automatic steps (capture's records at the latest step do not).
        """
        steps = self._steps if advance else [step]
        route = self._att.route(schema)
        if route is not None:
            route.append(steps, step, time, data)
            return
        w = self._att.writer
        step, before = w.take_step(steps, step)
        try:
            self._host.bus.publish(Event(RECORD, self.id, step, time, schema, data))
        except SchemaError:  # refused before anything was written
            w.untake_step(steps, step, before)
            raise

    def _log_side(self, schema: str, data: Any, step: int, latest: bool) -> float:
        """Write a record of ``schema`` at ``step`` for the capture features (artifacts, media, samples).

        Unlike :meth:`log_record`, a record at the latest step (``latest``)
        leaves the automatic step alone; the system sampler calls this from
        its own thread (the writer appends under its lock). Returns the record's time.
        """
        if self.status != "running":
            raise self._not_running()
        compiled = self._host.schemas.get(schema) or self._host.schema(schema)
        time = _time()
        self._write(compiled.name, compiled.validate(data), step, time, advance=not latest)
        return time

    def _schema_of(self, record: Any) -> str:
        for name, c in self._host.schemas.items():
            if type(record) is c.cls:
                return name
        raise SchemaError(type(record).__name__, [("(schema)", f"expected a schema name or an instance "
                                                               f"of a registered schema class, given {given(record)}")])

    def _not_running(self) -> TrackerError:
        return TrackerError(f"run {self.id} has {self.status}; start or resume a run to log more")

    def finish(self, status: str | int | None = None, error: dict[str, Any] | BaseException | None = None, *,
               exit_code: int | None = None, quiet: bool | None = None, time: float | None = None) -> None:
        """End the run (idempotent): write ``run_finished`` and close the segment.

        :param status: ``finished``, ``failed`` or ``crashed``; by default
            ``failed`` for a non-zero ``exit_code``, else ``finished``. An int
            here is an exit code (W&B's ``run.finish(1)``).
        :param error: for a failed run, the exception or ``{"type", "message"}``.
        :param exit_code: the process's exit code, as in W&B; non-zero means ``failed``.
        :param quiet: accepted for W&B scripts; nothing is printed anyway.
        :param time: the end time in seconds since the epoch (default: now); importers give the source's.
        """
        end = None if time is None else check_time(time)
        if type(status) is int and exit_code is None:
            status, exit_code = None, status
        if exit_code is not None and type(exit_code) is not int:
            raise TypeError(f"exit_code: expected an int, given {given(exit_code)}")
        if status is None:
            status = "failed" if exit_code else "finished"
        elif exit_code and status == "finished":
            raise ValueError(f"status 'finished' with exit code {exit_code}: a non-zero exit code means failed")
        if exit_code and error is None:
            error = {"type": "ExitCode", "message": f"exit code {exit_code}", "traceback": ""}
        if self._wb is not None and self.status == "running":
            self._wb.close()  # the pending step, define_metric summaries, hooks and patches
        att = self._att
        if self.status == "running" and att.refs == 1 and att.recorders is not None:
            # The last console lines and the environment record go in while the run still takes records.
            stop_recorders(att)
        with _lock:
            if self.status != "running":
                return
            if status not in STATUSES:
                raise ValueError(f"status: expected one of {STATUSES}, given {status!r}")
            if isinstance(error, BaseException):
                error = error_facts(type(error), error, error.__traceback__)
            elif error is not None:
                error = storable(error)  # the finish event is always storable
            self.status = status
            self._routes = {}  # ``log`` takes no route any more: it finds the status and refuses
            if self in _active:
                _active.remove(self)
            if not _active:
                crash.uninstall()
            _stopped[:] = [self] if status == "stopped" else []

            def last_words() -> None:
                att = self._att
                system = None
                if att.sampler is not None:
                    att.sampler.stop()
                    system = att.sampler.totals()
                    att.sampler = None
                w = att.writer
                data = {"status": status, "error": error, "records": w.records, "max_step": w.max_step,
                        "last": w.last}
                if system:
                    data["system"] = system  # peaks and means for the runs table (RunInfo.system)
                self._host.bus.publish(Event(RUN_FINISHED, self.id, None, _time() if end is None else end, None,
                                             data))

            detach(self._att, last_words)
        if att.refs == 0 and _ships_to_server(self._host.config):
            # Out of the lock: the other runs of the process log on while this one's last lines go.
            from tracker.write.stream import wait_shipped

            wait_shipped(att.store, self.id, self._host.config)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.finish("finished")
            return
        try:
            self.finish(_ended_status(exc_type), error_facts(exc_type, exc, tb))
        except Exception as failure:  # noqa: BLE001 - the user's exception propagates, never ours
            warnings.warn(f"tracker: run {self.id}: its failure could not be recorded: "
                          f"{type(failure).__name__}: {failure}", TrackerWarning, stacklevel=2)

    def __repr__(self) -> str:
        return f"<Run {self.id} name={self.name!r} project={self.project!r} {self.status}>"


def _ships_to_server(config: Any) -> bool:
    """Whether runs stream to a tracker server (``[team] url``, ``TRACKER_TEAM_URL`` or ``TRACKER_URL`` an
    ``http(s)://`` URL): then ``finish()`` waits for the run's last lines to be there (``[team] finish_timeout``)."""
    url = getattr(config, "team_url", None) or os.environ.get("TRACKER_TEAM_URL") or os.environ.get("TRACKER_URL")
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


def _ended_status(exc_type: type[BaseException] | None) -> str:
    """``stopped`` for a Ctrl-C (KeyboardInterrupt), ``failed`` for any other exception."""
    return "stopped" if exc_type is not None and issubclass(exc_type, KeyboardInterrupt) else "failed"


def _on_exception(exc_type: type[BaseException], exc: BaseException | None, tb: TracebackType | None,
                  thread: int | None) -> None:
    """An exception nobody caught (``thread``: the ident of a thread it ended): the runs it ends, ended."""
    error = error_facts(exc_type, exc, tb)
    for run in list(reversed(_active)):
        if thread is None or run._thread == thread:
            try:
                run.finish(_ended_status(exc_type), error)
            except Exception:  # noqa: BLE001, S110 - the next run is still ended
                pass


def check_time(time: Any) -> float:
    """A wall time given by a caller (importers): a finite number of seconds since the epoch.

    :raises SchemaError: anything else, named.
    """
    u = unwrap_numpy(time)
    if type(u) not in (int, float) or not math.isfinite(u):
        raise SchemaError("metrics", [("time", f"expected a finite number of seconds since the epoch, "
                                               f"given {given(time)}")])
    return float(u)


def resolve_step(step: Any, schema: str) -> int:
    """A given step as the int it stands for (numpy ints too), within ±2**53.

    :raises SchemaError: naming ``schema``, the record's schema, and the step given.
    """
    if type(step) is int and -MAX_INT <= step <= MAX_INT:
        return step
    u = unwrap_numpy(step)
    if type(u) is not int or not -MAX_INT <= u <= MAX_INT:
        raise SchemaError(schema, [("step", f"expected an int within ±2**53, given {given(step)}")])
    return u


def _wandb_values(values: Any) -> bool:
    """Whether ``values`` holds what only W&B's ``log`` takes: nested dicts, media objects, lists, strings."""
    if type(values) is not dict:
        return False
    for v in values.values():
        t = type(v)
        if t is dict or t is list or t is tuple or t is str or hasattr(v, "_tracker_media"):
            return True
    return False


def start_run(project: str | None = None, name: str | None = None, *, config: dict[str, Any] | None = None,
              tags: list[str] | None = None, store: str | os.PathLike[str] | None = None,
              run_id: str | None = None, resume: bool = False, system_metrics: bool | float | None = None,
              notes: str | None = None, created_at: float | None = None, group: str | None = None,
              job_type: str | None = None, console: bool | str | None = None,
              environment: bool | None = None) -> Run:
    """Start (or, with ``resume=True``, attach to) a run; use it as a context manager.

    ``TRACKER_RUN_ID=X`` in the environment means ``run_id=X, resume=True``,
    so data-parallel ranks can all make the same call.

    :param project: free-text project name (never used as a path).
    :param name: free-text run name.
    :param config: the run's configuration, nested dicts of JSON values.
    :param tags: free-text tags.
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param run_id: the run's id, ``[A-Za-z0-9_-]{1,64}``; a fresh one by default.
    :param resume: attach to ``run_id`` if it exists (creating it if not).
    :param system_metrics: sample CPU, memory and GPUs in a background thread:
        ``None`` follows tracker.toml's ``[system]`` (on every 10 s when psutil is
        installed), ``False`` turns it off, a number is the seconds between samples.
    :param notes: free-text notes on the run (``tracker note`` changes them later).
    :param created_at: when the run (or, resuming, this process's segment) started, in seconds
        since the epoch (default: now); importers give the source run's start time.
    :param group: the group the run belongs to (e.g. the seeds of one ablation): charts and
        tables of groups aggregate its runs (``store.aggregate``, ``tracker runs --group-by``).
    :param job_type: what kind of job the run is (``train``, ``eval``...), W&B's ``job_type``.
    :param console: keep what the process prints as ``console`` records: ``None`` follows
        ``TRACKER_CONSOLE``, else tracker.toml's ``[run] console`` (on), ``True`` or ``"wrap"`` the
        ``sys.stdout`` and ``sys.stderr`` streams, ``"fd"`` descriptors 1 and 2 (C extensions,
        child processes), ``False`` off (docs/provenance.md).
    :param environment: record Python, platform, GPUs, packages, command and git in the background:
        ``None`` follows ``TRACKER_ENVIRONMENT``, else ``[run] environment`` (on), ``False`` turns it off.
    :raises TrackerError: a bad run id, or an existing run without ``resume``.
    """
    host = get_host()
    at = None if created_at is None else check_time(created_at)
    if system_metrics not in (None, True, False) and not (type(system_metrics) in (int, float)
                                                          and system_metrics > 0):
        raise TypeError("system_metrics: expected None, False, True or a positive number of seconds, "
                        f"given {system_metrics!r}")
    from tracker.capture import console_mode, environment_on

    console = console_mode(console, host.config)  # "wrap", "fd" or None; a bad value is refused here
    environment = environment_on(environment, host.config)
    run_id_from_env = os.environ.get("TRACKER_RUN_ID")
    # A script a sweep's agent started: its config fills in what the trial's sampled values leave out.
    trial = run_id is None and bool(run_id_from_env) and bool(os.environ.get("TRACKER_SWEEP_ID"))
    if run_id is None and run_id_from_env:
        run_id, resume = run_id_from_env, True
    run_id = new_run_id() if run_id is None else check_run_id(run_id)
    fields, labels = run_fields(project, name, notes, tags, config, group, job_type)
    config_data = fields["config"]
    root = resolve_store_path(store, host.config).absolute()
    runs = root / "runs"
    try:
        runs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the store at {root}: {exc.strerror}") from None
    run_dir = runs / run_id
    if not resume and run_dir.exists():
        raise TrackerError(f"run {run_id} already exists in {root}; pass resume=True to append to it")
    meta = {**fields, "env": origin_facts(environment)}  # name, project, config, tags, env: the order of the first line
    paths = nonfinite_paths(config_data)
    if paths:
        # Where the config's NaN and infinities are: the line holds them as the store's strings, which
        # readers turn back into floats there only, so that a str "NaN" stays a str.
        meta["config_nonfinite"] = paths
    if notes is not None:
        meta["notes"] = notes
    meta.update(labels)
    # Made by this call (as far as one can tell): its config is the run's; else run.config reads the store.
    new = not run_dir.exists()
    att = attach(host, root, run_id, resume, meta, at)
    run = Run(host, att, name, project, run_dir)
    run.group, run.job_type = labels.get("group"), labels.get("job_type")
    if new and att.refs == 1:
        run._initial_config = config_data
    if trial and config_data:
        missing = {k: v for k, v in config_data.items() if k not in run.config}
        if missing:
            run.config.update(missing)
    with _lock:
        _active.append(run)
        _stopped.clear()
        if att.refs == 1 and att.sampler is None:
            att.sampler = sampler_for(run, system_metrics, host)
        if att.refs == 1 and att.recorders is None:
            att.recorders = recorders_for(run, console, environment)
        crash.install(_on_exception)
    return run


def current_run() -> Run | None:
    """The most recently started run of the process that has not finished, if any."""
    return _active[-1] if _active else None


def _require_run() -> Run:
    run = current_run()
    if run is None:
        raise TrackerError("no active run: call tracker.start_run() or tracker.init() first")
    return run


def log(values: dict[str, Any] = LEFT_OUT, step: int | None = None, commit: bool | None = None) -> None:
    """``Run.log`` on the active run (W&B's ``wandb.log``, ``commit`` included).

    :raises TrackerError: when no run is active.
    """
    if not _active and _stopped:
        return  # the trial's run was stopped by its sweep: values are dropped, as W&B drops them
    _require_run().log(values, step, commit)


def log_record(schema: Any, record: Any = None, /, step: int | None = None, **fields: Any) -> None:
    """``Run.log_record`` on the active run.

    :raises TrackerError: when no run is active.
    """
    _require_run().log_record(schema, record, step=step, **fields)


def finish(status: str | int | None = None, *, exit_code: int | None = None, quiet: bool | None = None) -> None:
    """Finish the active run, if any: ``tracker.finish()``, ``tracker.finish(exit_code=1)`` (failed).

    As in W&B, an int as the first argument is the exit code.
    """
    run = current_run()
    if run is not None:
        run.finish(status, exit_code=exit_code)


@atexit.register
def _finish_at_exit() -> None:
    # A run left open when the interpreter exits normally is finished; after an
    # uncaught exception it is failed with that exception.
    exc = getattr(sys, "last_value", None)
    for run in list(reversed(_active)):
        try:
            if exc is not None:
                run.finish(_ended_status(type(exc)), exc)
            else:
                run.finish("finished")
        except Exception:  # noqa: BLE001, S110 - never raise at interpreter exit
            pass
