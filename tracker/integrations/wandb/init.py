"""The W&B-style API: ``init``, ``log``, ``config``, ``summary`` and the rest of what W&B scripts call.

A W&B script runs after ``import tracker as wandb``: ``init`` is
:func:`tracker.start_run` with W&B's argument names and environment
variables; the run it returns is an ordinary :class:`tracker.Run` whose
``config`` and ``summary`` write their changes as edit events (see
:mod:`tracker.lifecycle`) and whose ``log`` follows W&B's step and
``commit`` rules. Media classes, ``define_metric``, ``save``, ``watch``,
``sync_tensorboard`` and ``Api`` live in :mod:`tracker.integrations.wandb`.
Calls of W&B that tracker does not offer raise :class:`UnsupportedError`
naming the call and what to use instead (docs/wandb.md lists every call).
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.core.errors import TrackerError
from tracker.core.summary import Table as _SummaryTable
from tracker.integrations.wandb.public import Api
from tracker.write.runstate import (
    UNSUPPORTED,
    RunConfig,
    RunSummary,
    UnsupportedError,
    _as_mapping,
    _ReadsAsDict,
    unsupported,
)
from tracker.write.wandb.media import Audio, Histogram, Html, Image, Object3D, Table, Video, box3d

if TYPE_CHECKING:
    from tracker.write.api import Run

# ``tracker.Table(columns=..., data=...)`` (W&B's call) makes a W&B table; tracker.Table stays the column table.
_SummaryTable.wandb_table = Table

__all__ = ["UNSUPPORTED", "AlertLevel", "Api", "Audio", "Histogram", "Html", "Image", "Object3D", "RunConfig",
           "RunSummary", "Settings",
           "Table", "Video", "box3d",
           "UnsupportedError", "alert",
           "define_metric", "init", "log_artifact", "log_model", "login", "save", "unsupported", "unwatch",
           "use_artifact", "use_model", "watch"]


# --- init ---------------------------------------------------------------------------------------

_NEW = (None, False, "never")
_ANY = (True, "allow", "auto")
#: W&B arguments of ``init`` that mean nothing for a local store: accepted and ignored.
IGNORED_INIT_ARGS = frozenset({"entity", "reinit", "anonymous", "allow_val_change",
                               "magic", "force", "fork_from", "resume_from", "tensorboard"})
#: W&B's ``Settings(console=...)`` and ``WANDB_CONSOLE`` values as ``start_run(console=)`` (``None``: tracker.toml).
CONSOLE_SETTINGS = {"auto": None, "off": False, "wrap": "wrap", "wrap_raw": "wrap", "wrap_emu": "wrap",
                    "redirect": "fd"}
_started_by_init: list[Any] = []


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


def _env_resume(value: str | None) -> bool | str | None:
    """``WANDB_RESUME`` as ``init``'s ``resume``: ``allow``, ``must``, ``never``, ``auto``, or true/false words."""
    if value is None:
        return None
    low = value.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    return low


def init(project: str | None = None, name: str | None = None, config: Mapping[str, Any] | Any = None,
         tags: list[str] | tuple[str, ...] | None = None, notes: str | None = None, id: str | None = None,  # noqa: A002 - W&B's name
         resume: bool | str | None = None, dir: str | os.PathLike[str] | None = None,  # noqa: A002 - W&B's name
         *, group: str | None = None, job_type: str | None = None, mode: str | None = None,
         config_exclude_keys: list[str] | None = None, config_include_keys: list[str] | None = None,
         sync_tensorboard: bool | None = None, settings: Any = None, save_code: bool | None = None,
         monitor_gym: bool | None = None, **wandb_args: Any) -> Run:
    """Start a run and make it the active one: :func:`tracker.start_run` with W&B's names.

    ``import tracker as wandb`` makes a W&B script log here. A run started
    by an earlier ``init`` of this process that is still open is finished
    first, as W&B does. An argument left out is taken from W&B's environment
    variable, as in W&B: ``WANDB_PROJECT``, ``WANDB_NAME``, ``WANDB_RUN_ID``,
    ``WANDB_RESUME``, ``WANDB_TAGS`` (comma-separated), ``WANDB_NOTES``,
    ``WANDB_DIR`` (the store), ``WANDB_RUN_GROUP``, ``WANDB_JOB_TYPE`` and ``WANDB_MODE``.

    :param config: a dict, an argparse Namespace, a dataclass or an OmegaConf
        DictConfig, stored as plain values; ``run.config`` afterwards.
    :param tags: free-text tags.
    :param group: the run's group (``RunInfo.group``: charts and tables aggregate a group's runs).
    :param job_type: the run's job type (``RunInfo.job_type``).
    :param notes: the run's notes (``tracker note`` changes them later).
    :param id: the run id; an existing one needs ``resume``.
    :param resume: ``None``, ``False`` or ``"never"``: a new run (an existing
        id is an error); ``True``, ``"allow"`` or ``"auto"``: resume the run
        ``id`` or create it; ``"must"``: resume it, an error if it does not exist.
        A resumed run's automatic steps continue after its largest step.
    :param dir: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param mode: ``"online"``, ``"offline"``, ``None`` (the store is local anyway) or
        ``"disabled"``: a run that takes every call and stores nothing.
    :param sync_tensorboard: also log what ``torch.utils.tensorboard`` and tensorboardX writers log.
    :param monitor_gym: log each video gymnasium's ``RecordVideo`` writes as a ``video`` record (under
        W&B's key, ``videos``), as cleanrl's ``--capture_video`` expects.
    :param settings: ``wandb.Settings(...)``: its ``console`` (``"off"``, ``"wrap"``, ``"redirect"``,
        ``"auto"``; also ``WANDB_CONSOLE``) sets the console capture (``"redirect"`` is
        ``console="fd"``); ``save_code`` and ``code_dir`` as below. Other settings are accepted.
    :param save_code: store the script (with ``settings.code_dir``, every ``.py`` file under that
        folder) as the run's ``code`` artifact; also ``WANDB_SAVE_CODE``.
    :raises TrackerError: a bad id, an existing run without ``resume``, a
        missing run with ``resume="must"``, an unsupported ``mode``, a ``console`` setting not offered.
    :raises TypeError: an argument W&B's ``init`` does not have either.
    """
    from tracker.core.config import resolve_store_path
    from tracker.core.format import check_run_id
    from tracker.host.host import get_host
    from tracker.write.api import start_run

    unknown = sorted(set(wandb_args) - IGNORED_INIT_ARGS)
    if unknown:
        raise TypeError(f"init() got an unexpected keyword argument {unknown[0]!r}")
    project = project if project is not None else _env("WANDB_PROJECT")
    name = name if name is not None else _env("WANDB_NAME")
    notes = notes if notes is not None else _env("WANDB_NOTES")
    group = group if group is not None else _env("WANDB_RUN_GROUP")
    job_type = job_type if job_type is not None else _env("WANDB_JOB_TYPE")
    mode = mode if mode is not None else _env("WANDB_MODE")
    if tags is None and _env("WANDB_TAGS"):
        tags = [t.strip() for t in os.environ["WANDB_TAGS"].split(",") if t.strip()]
    if dir is None and _env("WANDB_DIR"):
        dir = os.environ["WANDB_DIR"]  # noqa: A001 - W&B's name
    if id is None and _env("WANDB_RUN_ID"):
        id = os.environ["WANDB_RUN_ID"]  # noqa: A001 - W&B's name
    if resume is None:
        resume = _env_resume(_env("WANDB_RESUME"))
    if mode in ("disabled", "dryrun"):
        values = _as_mapping(config, "init(config=...)")
        while _started_by_init:
            _started_by_init.pop().finish()
        from tracker.integrations.wandb.disabled import start_disabled

        run = start_disabled(project, name, values)
        _started_by_init.append(run)
        return run  # type: ignore[return-value] - a Run that stores nothing
    if mode not in (None, "online", "offline", "shared"):
        raise UnsupportedError(f"init(mode={mode!r}) is not offered: tracker always logs to its local store "
                               "(modes 'online', 'offline' and 'disabled' are accepted)")
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
    console, code = _settings(settings, save_code)
    if monitor_gym:
        from tracker.integrations.wandb.gym import monitor

        monitor()  # before the run starts: without gymnasium, no run is made
    while _started_by_init:
        _started_by_init.pop().finish()
    run = start_run(project, name, config=values, tags=tag_list, store=dir, run_id=id, resume=resuming,
                    notes=notes, group=group, job_type=job_type, console=console)
    if code is not None:
        _save_code(run, code)
    if resuming and values:
        # On a resume, the config given is applied over the stored one, as in W&B.
        run.config.update(values)
    if sync_tensorboard:
        from tracker.integrations.wandb.tbsync import TensorBoardSync

        run._wandb().tensorboard = TensorBoardSync(run)
    _started_by_init.append(run)
    return run


def _setting(settings: Any, key: str) -> Any:
    if settings is None:
        return None
    if isinstance(settings, Mapping):
        return settings.get(key)
    return getattr(settings, key, None)


def _settings(settings: Any, save_code: bool | None) -> tuple[Any, Path | None]:
    """``start_run``'s ``console`` and the folder of code to store (or ``None``) from W&B's settings.

    :raises TrackerError: a ``console`` value W&B does not have either.
    """
    console = _setting(settings, "console") or _env("WANDB_CONSOLE")
    if console is not None:
        if str(console).lower() not in CONSOLE_SETTINGS:
            raise TrackerError(f"Settings(console={console!r}): expected one of {', '.join(CONSOLE_SETTINGS)}")
        console = CONSOLE_SETTINGS[str(console).lower()]
    if save_code is None:
        save_code = _setting(settings, "save_code")
    if save_code is None and _env("WANDB_SAVE_CODE"):
        save_code = os.environ["WANDB_SAVE_CODE"].strip().lower() in ("1", "true", "yes")
    if not save_code:
        return console, None
    code_dir = _setting(settings, "code_dir")
    if code_dir:
        return console, Path(code_dir)
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] not in ("", "-c") else None
    return console, script if script is not None and script.is_file() else None


def _save_code(run: Any, where: Path) -> None:
    """W&B's ``save_code``: the script (a file) or every ``.py`` file under a folder as the ``code`` artifact."""
    from tracker.capture.environment import code_files, store_code

    if where.is_file():
        root, files = where.parent, [where.name]
    else:
        root, files = where, code_files(where, ("*.py",))
    store_code(root, files, lambda folder, name: run.log_artifact(folder, name=name, type="code"))


def _active_run(call: str) -> Any:
    from tracker.write.api import current_run

    run = current_run()
    if run is None:
        raise TrackerError(f"tracker.{call}(): no active run: call tracker.init() first")
    return run


def define_metric(name: str, step_metric: str | None = None, *, summary: str | None = None,
                  goal: str | None = None, **options: Any) -> None:
    """W&B's ``define_metric`` on the active run: ``summary="min"``, ``"max"``, ``"mean"``, ``"last"``,
    ``"first"``, ``"best"`` (with ``goal``), comma-separated, set ``run.summary[name]`` at ``finish``."""
    _active_run("define_metric").define_metric(name, step_metric, summary=summary, goal=goal, **options)


def save(glob_str: str | os.PathLike[str], base_path: str | os.PathLike[str] | None = None,
         policy: str = "live") -> list[str]:
    """W&B's ``save`` on the active run: the matching files are logged as artifacts (again at ``finish`` if changed)."""
    return _active_run("save").save(glob_str, base_path, policy)


def log_artifact(artifact_or_path: Any, name: str | None = None, type: str | None = None,
                 aliases: list[str] | None = None, tags: list[str] | None = None) -> Any:
    """W&B's ``wandb.log_artifact`` on the active run (see :meth:`tracker.Run.log_artifact`)."""
    return _active_run("log_artifact").log_artifact(artifact_or_path, name, type, aliases)


def use_artifact(artifact_or_name: Any, type: str | None = None, aliases: list[str] | None = None,
                 use_as: str | None = None) -> Any:
    """W&B's ``wandb.use_artifact`` on the active run (see :meth:`tracker.Run.use_artifact`)."""
    return _active_run("use_artifact").use_artifact(artifact_or_name, type, aliases, use_as)


def log_model(path: str | os.PathLike[str], name: str | None = None, aliases: list[str] | None = None) -> Any:
    """W&B's ``wandb.log_model`` on the active run: the file or folder as a ``model`` artifact."""
    return _active_run("log_model").log_model(path, name, aliases)


def use_model(name: str) -> Any:
    """W&B's ``wandb.use_model`` on the active run: the model version used and downloaded; its local path."""
    return _active_run("use_model").use_model(name)


def watch(models: Any, criterion: Any = None, log: str | None = "gradients", log_freq: int = 1000,
          idx: int | None = None, log_graph: bool = False) -> None:
    """W&B's ``watch`` on the active run: gradient/parameter histograms of torch models every ``log_freq`` calls."""
    _active_run("watch").watch(models, criterion, log, log_freq, idx, log_graph)


def unwatch(models: Any = None) -> None:
    """Remove the hooks of :func:`watch`."""
    _active_run("unwatch").unwatch(models)


class AlertLevel(str, enum.Enum):
    """W&B's ``wandb.AlertLevel``: the level of :func:`alert` (plain strings work too)."""

    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


def alert(title: str, text: str, level: Any = None, wait_duration: Any = None) -> bool:
    """W&B's ``wandb.alert`` on the active run: see :meth:`tracker.Run.alert`."""
    return _active_run("alert").alert(title, text, level, wait_duration)


class Settings(dict):
    """W&B's ``wandb.Settings(...)``: ``console``, ``save_code`` and ``code_dir`` are used by :func:`init`;
    the others are accepted so that ``init(settings=...)`` runs unchanged. Settings read as attributes too."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(settings)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def login(*args: Any, **kwargs: Any) -> bool:
    """Nothing to log in to: the store is local. Accepted so that W&B scripts run unchanged."""
    return True


# --- tracker.config, tracker.summary -----------------------------------------------------------

class ActiveProxy(_ReadsAsDict):
    """``tracker.config`` / ``tracker.summary``: the active run's ``config`` / ``summary``, as in W&B.

    The modules of the same names (:mod:`tracker.config`, :mod:`tracker.summary`)
    stay importable as before, and their own names still resolve through
    this object (``tracker.core.config.load_config``).
    """

    def __init__(self, module: Any, what: str) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_what", what)

    def _mapping(self) -> dict[str, Any]:
        return self._target()._mapping()

    def _target(self, required: bool = True) -> Any:
        from tracker.write.api import current_run

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
