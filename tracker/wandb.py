"""The W&B-style API: ``init``, ``run.config``, ``run.summary``; a W&B script runs after ``import tracker as wandb``.

``init`` is :func:`tracker.start_run` with W&B's argument names; the run it
returns is an ordinary :class:`tracker.Run` whose ``config`` and ``summary``
write their changes as edit events (see :mod:`tracker.lifecycle`). Calls of
W&B that tracker does not offer raise :class:`UnsupportedError` naming the
call and what to use instead (docs/wandb.md lists them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .errors import TrackerError

if TYPE_CHECKING:
    from .api import Run


class UnsupportedError(TrackerError, AttributeError):
    """A W&B call that tracker does not offer; the message says what to use instead.

    An :class:`AttributeError` too, so that ``hasattr(tracker, "watch")`` and
    duck-typing code see a missing name, while a call still reads the message.
    """


#: W&B names tracker does not offer, and what to use instead.
UNSUPPORTED: dict[str, str] = {
    "define_metric": "summaries come from `tracker summary RUN`; set a value with run.summary[key] = value",
    "Artifact": "log files and folders with run.log_artifact(path, name=...)",
    "use_artifact": "read an artifact of another run with tracker.open_store().run(ID).copy_artifact(name, dest)",
    "log_artifact": "use run.log_artifact(path, name=...)",
    "link_artifact": "use run.log_artifact(path, name=...) and tag the run (`tracker tag`)",
    "log_model": "use run.log_artifact(model_path, name=...)",
    "use_model": "use tracker.open_store().run(ID).copy_artifact(name, dest)",
    "Table": "log rows as typed records with run.log_record(schema, ...) (a plugin's schema)",
    "Image": "use run.log_image(name, array_or_path, step=...)",
    "Histogram": "use run.log_histogram(name, values, step=...)",
    "Video": "log the file with run.log_artifact(path)",
    "Audio": "log the file with run.log_artifact(path)",
    "Html": "log the file with run.log_artifact(path)",
    "Object3D": "log the file with run.log_artifact(path)",
    "Molecule": "log the file with run.log_artifact(path)",
    "plot": "plugins draw figures in the dashboard (the tracker_panels hook)",
    "plot_table": "plugins draw figures in the dashboard (the tracker_panels hook)",
    "watch": "log gradient norms yourself with run.log({...}) (no model hooks)",
    "unwatch": "nothing to undo: tracker.watch is not offered",
    "alert": "no notifications; watch a run with `tracker tail RUN -f`",
    "save": "use run.log_artifact(path)",
    "restore": "use tracker.open_store().run(ID).copy_artifact(name, dest)",
    "sweep": "run your own sweep loop; each trial calls tracker.init(config=...)",
    "agent": "run your own sweep loop; each trial calls tracker.init(config=...)",
    "controller": "run your own sweep loop; each trial calls tracker.init(config=...)",
    "Api": "read runs with tracker.open_store() (runs(), run(ID).metrics(), .info)",
    "log_code": "the run records its git commit and command line in its env",
    "mark_preempting": "resume a run with tracker.init(id=ID, resume='allow')",
    "use_run": "read a run with tracker.open_store().run(ID)",
    "Settings": "configure the store in tracker.toml",
}


def unsupported(name: str, owner: str = "tracker") -> UnsupportedError:
    """The error for W&B's ``name``."""
    return UnsupportedError(f"{owner}.{name}() is a W&B call that tracker does not offer: "
                            f"{UNSUPPORTED[name]} (see docs/wandb.md)")


# --- run.config, run.summary --------------------------------------------------------------------

class _ReadsAsDict:
    """Dict reads (``[k]``, ``in``, iteration, ``len``, ``get``, ``keys``, ``values``, ``items``,
    ``as_dict``) over the dict that ``_mapping()`` gives."""

    def _mapping(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self._mapping()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._mapping()

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._mapping().get(key, default)

    def keys(self) -> Any:
        """The keys."""
        return self._mapping().keys()

    def values(self) -> Any:
        """The values."""
        return self._mapping().values()

    def items(self) -> Any:
        """The ``(key, value)`` pairs."""
        return self._mapping().items()

    def as_dict(self) -> dict[str, Any]:
        """A copy as a plain dict."""
        return dict(self._mapping())


class RunConfig(_ReadsAsDict):
    """A run's config with attribute and item access; changes are appended as edit events.

    ``run.config.lr``, ``run.config["lr"]``, ``run.config.update({"bs": 64})``,
    ``run.config.bs = 64``. Values are JSON values (nested dicts and lists).
    """

    def __init__(self, run: Run, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "_values", dict(values))

    def _write(self, data: dict[str, Any]) -> None:
        from .lifecycle import check_values, write_edit

        data = check_values(data, "config")
        changed = {k: v for k, v in data.items() if k not in self._values or self._values[k] != v}
        if changed:
            write_edit(self._run.path, {"config": changed}, fsync=self._run._host.config.fsync)
            self._values.update(changed)

    def update(self, values: Mapping[str, Any] | Any = None, allow_val_change: bool | None = None,
               **more: Any) -> None:
        """Set several keys at once (one event); ``values`` may also be an argparse Namespace."""
        self._write({**_as_mapping(values, "config.update"), **more})

    def setdefaults(self, values: Mapping[str, Any]) -> None:
        """Set the keys of ``values`` that the config does not have yet."""
        self._write({k: v for k, v in _as_mapping(values, "config.setdefaults").items() if k not in self._values})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"run config has no key {name!r} (keys: "
                                 f"{', '.join(sorted(self._values)) or 'none'})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._write({name: value})

    def _mapping(self) -> dict[str, Any]:
        return self._values

    def __setitem__(self, key: str, value: Any) -> None:
        self._write({key: value})

    def __repr__(self) -> str:
        return f"RunConfig({self._values!r})"


class RunSummary(_ReadsAsDict):
    """A run's summary: values set with ``run.summary[key] = value``, appended as edit events.

    Reading a key that was never set gives the last logged value of that
    metric, as in W&B. ``RunInfo.summary`` holds the values that were set.
    """

    def __init__(self, run: Run, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "_values", dict(values))

    def _mapping(self) -> dict[str, Any]:
        # keys never set read the last logged value of that metric
        return {**self._run._last_metrics(), **self._values}

    def update(self, values: Mapping[str, Any] | None = None, **more: Any) -> None:
        """Set several values at once (one event)."""
        from .lifecycle import check_values, write_edit

        data = check_values({**dict(values or {}), **more}, "summary")
        if data:
            write_edit(self._run.path, {"summary": data}, fsync=self._run._host.config.fsync)
            self._values.update(data)

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._mapping()[name]
        except KeyError:
            raise AttributeError(f"run summary has no key {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self.update({name: value})

    def __repr__(self) -> str:
        return f"RunSummary({self._mapping()!r})"


def _as_mapping(values: Any, what: str) -> dict[str, Any]:
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return dict(values)
    if hasattr(values, "__dict__") and not isinstance(values, type):  # argparse.Namespace and the like
        return {k: v for k, v in vars(values).items() if not k.startswith("_")}
    from .values import given

    raise TypeError(f"{what}: expected a dict or an argparse Namespace, given {given(values)}")


# --- init ---------------------------------------------------------------------------------------

_NEW = (None, False, "never")
_ANY = (True, "allow", "auto")
#: W&B arguments of ``init`` that mean nothing for a local store: accepted and ignored.
IGNORED_INIT_ARGS = frozenset({"entity", "reinit", "settings", "save_code", "anonymous", "allow_val_change",
                               "sync_tensorboard", "monitor_gym", "magic", "force", "fork_from",
                               "resume_from", "tensorboard"})
_started_by_init: list[Run] = []


def init(project: str | None = None, name: str | None = None, config: Mapping[str, Any] | Any = None,
         tags: list[str] | tuple[str, ...] | None = None, notes: str | None = None, id: str | None = None,  # noqa: A002 - W&B's name
         resume: bool | str | None = None, dir: str | os.PathLike[str] | None = None,  # noqa: A002 - W&B's name
         *, group: str | None = None, job_type: str | None = None, mode: str | None = None,
         config_exclude_keys: list[str] | None = None, config_include_keys: list[str] | None = None,
         **wandb_args: Any) -> Run:
    """Start a run and make it the active one: :func:`tracker.start_run` with W&B's names.

    ``import tracker as wandb`` makes a W&B script log here. A run started
    by an earlier ``init`` of this process that is still open is finished
    first, as W&B does.

    :param config: a dict or an argparse Namespace; ``run.config`` afterwards.
    :param tags: free-text tags; ``group`` and ``job_type`` are added as the
        tags ``group:<group>`` and ``job_type:<job_type>``.
    :param notes: the run's notes (``tracker note`` changes them later).
    :param id: the run id; an existing one needs ``resume``.
    :param resume: ``None``, ``False`` or ``"never"``: a new run (an existing
        id is an error); ``True``, ``"allow"`` or ``"auto"``: resume the run
        ``id`` or create it; ``"must"``: resume it, an error if it does not exist.
    :param dir: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param mode: ``"online"``, ``"offline"`` or ``None`` (the store is local anyway).
    :raises TrackerError: a bad id, an existing run without ``resume``, a
        missing run with ``resume="must"``, an unsupported ``mode``.
    :raises TypeError: an argument W&B's ``init`` does not have either.
    """
    from .api import start_run
    from .config import resolve_store_path
    from .format import check_run_id
    from .host import get_host

    unknown = sorted(set(wandb_args) - IGNORED_INIT_ARGS)
    if unknown:
        raise TypeError(f"init() got an unexpected keyword argument {unknown[0]!r}")
    if mode not in (None, "online", "offline"):
        raise UnsupportedError(f"init(mode={mode!r}) is not offered: tracker always logs to its local store "
                               "(modes 'online' and 'offline' are accepted)")
    if resume in _NEW:
        resuming = False
    elif resume in _ANY or resume == "must":
        resuming = True
    else:
        raise TrackerError(f"init(resume={resume!r}): expected None, False, 'never', True, 'allow', 'auto' "
                           "or 'must'")
    values = _as_mapping(config, "init(config=...)")
    if config_include_keys is not None:
        values = {k: v for k, v in values.items() if k in set(config_include_keys)}
    if config_exclude_keys is not None:
        values = {k: v for k, v in values.items() if k not in set(config_exclude_keys)}
    tag_list = list(tags or [])
    if group is not None:
        tag_list.append(f"group:{group}")
    if job_type is not None:
        tag_list.append(f"job_type:{job_type}")
    if id is not None:
        check_run_id(id)
        root = resolve_store_path(dir, get_host().config)
        exists = (root / "runs" / id).is_dir()
        if resume == "must" and not exists:
            raise TrackerError(f"init(id={id!r}, resume='must'): no run {id} in store {root}")
        if not resuming and exists:
            raise TrackerError(f"init(id={id!r}): run {id} exists in store {root}; pass resume='allow' "
                               "(or 'must') to log to it again")
    elif resume == "must":
        raise TrackerError("init(resume='must') needs the id of the run to resume: init(id=..., resume='must')")
    while _started_by_init:
        _started_by_init.pop().finish()
    run = start_run(project, name, config=values, tags=tag_list, store=dir, run_id=id, resume=resuming,
                    notes=notes)
    if resuming and values:
        # On a resume, the config given is applied over the stored one, as in W&B.
        run.config.update(values)
    _started_by_init.append(run)
    return run


def login(*args: Any, **kwargs: Any) -> bool:
    """Nothing to log in to: the store is local. Accepted so that W&B scripts run unchanged."""
    return True


# --- tracker.config, tracker.summary -----------------------------------------------------------

class ActiveProxy(_ReadsAsDict):
    """``tracker.config`` / ``tracker.summary``: the active run's ``config`` / ``summary``, as in W&B.

    The modules of the same names (:mod:`tracker.config`, :mod:`tracker.summary`)
    stay importable as before, and their own names still resolve through
    this object (``tracker.config.load_config``).
    """

    def __init__(self, module: Any, what: str) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_what", what)

    def _mapping(self) -> dict[str, Any]:
        return self._target()._mapping()

    def _target(self, required: bool = True) -> Any:
        from .api import current_run

        run = current_run()
        if run is None:
            if required:
                raise TrackerError(f"tracker.{self._what}: no active run: call tracker.init() first")
            return None
        return getattr(run, self._what)

    def __getattr__(self, name: str) -> Any:
        target = self._target(required=False)
        if target is not None and name in target:
            return target[name]
        if hasattr(self._module, name):
            return getattr(self._module, name)
        if target is None:
            raise TrackerError(f"tracker.{self._what}.{name}: no active run: call tracker.init() first")
        return getattr(target, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target(), name, value)

    def __setitem__(self, key: str, value: Any) -> None:
        self._target()[key] = value

    def __contains__(self, key: object) -> bool:
        target = self._target(required=False)
        return target is not None and key in target

    def update(self, *args: Any, **kwargs: Any) -> None:
        """``update`` of the active run's config or summary."""
        self._target().update(*args, **kwargs)

    def __repr__(self) -> str:
        target = self._target(required=False)
        return f"<tracker.{self._what} of the active run: {target!r}>" if target is not None else \
            f"<tracker.{self._what}: no active run>"
