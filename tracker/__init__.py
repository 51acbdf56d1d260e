"""tracker: a local-first, plugin-based experiment tracker.

Log from a training loop::

    import tracker

    with tracker.start_run(project="fft", config={"n_fft": 512}) as run:
        run.log({"loss": 0.41}, step=10)

Read back with :func:`open_store`, or from the shell with ``tracker runs``.
Handlers on the bus tell events apart by their ``kind``, one of
:data:`EVENT_KINDS`: :data:`RUN_STARTED`, :data:`WRITER_STARTED`,
:data:`RECORD` and :data:`RUN_FINISHED`.
Nothing heavy happens at import: each name loads its module on first use
(``tracker.Store`` imports the reader, ``tracker.start_run`` the logging API),
so that ``tracker --help`` starts fast; the plugin manager and the bus are
built on first use.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for type checkers and readers; loaded lazily below
    from tracker.cli import CliContext
    from tracker.core import validators
    from tracker.core.config import Config, load_config
    from tracker.core.errors import (
        ArtifactNotFound,
        ConfigError,
        PluginError,
        QueryError,
        RunNotFound,
        SchemaError,
        StoreError,
        TrackerError,
    )
    from tracker.core.figures import Band, BarChart, Heatmap, LineChart, Panel, Series, TableFigure
    from tracker.core.format import EVENT_KINDS, RECORD, RUN_FINISHED, RUN_STARTED, WRITER_STARTED
    from tracker.core.records import Event, Problem, Record, RunInfo
    from tracker.core.schema import Schema
    from tracker.core.summary import MISSING, Summarizer, Summary, Table
    from tracker.core.version import __version__
    from tracker.host.bus import EventBus, Subscription, TrackerWarning
    from tracker.host.hookspecs import hookimpl, hookspec
    from tracker.host.host import Host, get_host, list_plugins, set_host
    from tracker.host.pluginmanager import PluginInfo, PluginManager, get_plugin_manager
    from tracker.integrations.wandb.init import (
        AlertLevel,
        Api,
        Audio,
        Histogram,
        Html,
        Image,
        Object3D,
        Settings,
        UnsupportedError,
        Video,
        alert,
        box3d,
        define_metric,
        init,
        log_artifact,
        log_model,
        login,
        save,
        unwatch,
        use_artifact,
        use_model,
        watch,
    )
    from tracker.store import RunView, Store, open_store, remove_alias, set_alias
    from tracker.sweeps import agent, sweep
    from tracker.write.api import Run, current_run, finish, log, log_record, start_run
    from tracker.write.wandb.artifact import Artifact, ArtifactCollection


#: Public name -> the module (relative to this package) that defines it, imported on first use.
_LAZY: dict[str, str] = {}
for _module, _names in {
    "write.api": "Run current_run finish log log_record start_run",
    "host.bus": "EventBus Subscription TrackerWarning",
    "write.wandb.artifact": "Artifact ArtifactCollection",
    "cli": "CliContext",
    "core.config": "Config load_config",
    "core.errors": (
        "ArtifactNotFound ConfigError PluginError QueryError RunNotFound SchemaError StoreError TrackerError"),
    "core.version": "__version__",
    "core.figures": "Band BarChart Heatmap LineChart Panel Series TableFigure",
    "core.format": "EVENT_KINDS RECORD RUN_FINISHED RUN_STARTED WRITER_STARTED",
    "host.hookspecs": "hookimpl hookspec",
    "host.host": "Host get_host list_plugins set_host",
    "host.pluginmanager": "PluginInfo PluginManager get_plugin_manager",
    "core.records": "Event Problem Record RunInfo",
    "core.schema": "Schema",
    "store": "RunView Store open_store remove_alias set_alias",
    "core.summary": "MISSING Summarizer Summary Table",
    "sweeps": "agent sweep",
    "integrations.wandb.init": (
        "AlertLevel Api Audio Histogram Html Image Object3D Video Settings UnsupportedError alert box3d define_metric "
        "init login save unwatch watch log_artifact log_model use_artifact use_model"),
}.items():
    _LAZY.update(dict.fromkeys(_names.split(), _module))
del _module, _names


#: Where the modules of 0.3 live since 0.4 (the changelog lists them). The old dotted names still
#: import, as the very same module objects, so a plugin written against 0.3 runs unchanged.
MOVED: dict[str, str] = {
    **{f"tracker.{m}": f"tracker.core.{m}" for m in (
        "errors", "format", "values", "records", "schema", "validators", "rules", "config", "files",
        "figures", "summary", "display")},
    **{f"tracker.{m}": f"tracker.host.{m}" for m in ("bus", "pluginmanager", "hookspecs")},
    **{f"tracker.{m}": f"tracker.read.{m}" for m in (
        "segment", "edits", "columns", "reader", "frames", "verify", "index")},
    **{f"tracker.{m}": f"tracker.write.{m}" for m in ("writer", "route", "origin", "api", "runstate")},
    "tracker.cli.text": "tracker.core.text",
    "tracker.query.protocol": "tracker.read.protocol",
    "tracker.query.team": "tracker.team.postgres",
    "tracker.lifecycle.edits": "tracker.write.edits",
    "tracker.capture.web": "tracker.ui.capture",
    "tracker.wandb": "tracker.integrations.wandb.init",
    **{f"tracker.integrations.wandb.{m}": f"tracker.write.wandb.{m}" for m in ("logging", "media", "watch")},
}


def _moved(fullname: str) -> str | None:
    """The 0.4 name of a module imported by its 0.3 name (``tracker.index.catalog`` too), else None."""
    head, tail = fullname, ""
    while head:
        if head in MOVED:
            return MOVED[head] + tail
        head, _, last = head.rpartition(".")
        tail = f".{last}{tail}"
    return None


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module name with the module at its new home (consulted only when nothing else finds it)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        new = _moved(fullname) if fullname.startswith("tracker.") else None
        return importlib.util.spec_from_loader(fullname, self) if new else None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = importlib.import_module(_moved(spec.name))  # type: ignore[arg-type]
        module.__dict__.setdefault("_own_spec", module.__spec__)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system stamped the alias's spec on the real module: give it its own back.
        module.__spec__ = module.__dict__["_own_spec"]


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if name == "Table":  # the W&B layer teaches it W&B's form, Table(columns=..., data=...)
        importlib.import_module(f"{__name__}.integrations.wandb.init")
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # once loaded, a plain attribute
        return value
    if name == "validators":
        return importlib.import_module(f"{__name__}.core.validators")
    if name.startswith("__"):
        raise AttributeError(f"module 'tracker' has no attribute {name!r}")
    if _is_submodule(name):
        # `tracker.cli` without importing it first, and the import system's own question
        # before `from . import hookspecs`: the submodule, imported now.
        return importlib.import_module(f"{__name__}.{name}")
    if name == "run":  # W&B's `wandb.run`: the active run, or None
        return __getattr__("current_run")()  # type: ignore[operator]
    if name == "show":  # the dashboard in a notebook: loads Starlette and uvicorn only when called for
        from tracker.ui.notebook import show

        return show
    from tracker.integrations.wandb.init import UNSUPPORTED, unsupported

    if name in UNSUPPORTED:
        raise unsupported(name)
    raise AttributeError(f"module 'tracker' has no attribute {name!r}")


def _is_submodule(name: str) -> bool:
    if f"{__name__}.{name}" in MOVED:
        return True
    here = os.path.dirname(__file__)
    return os.path.isfile(os.path.join(here, f"{name}.py")) or os.path.isfile(os.path.join(here, name, "__init__.py"))


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """This module's type: ``tracker.config`` and ``tracker.summary`` are W&B's, the active run's.

    They are properties of the module's class, so they win over the submodules
    of the same names that the import system sets as attributes when
    :mod:`tracker.config` or :mod:`tracker.summary` is imported; the modules
    stay importable, and their own names resolve through the proxies
    (``tracker.core.config.load_config``).
    """

    def _proxy(self, what: str) -> Any:
        cache = self.__dict__.setdefault("_proxies", {})
        if what not in cache:
            from tracker.integrations.wandb.init import ActiveProxy

            cache[what] = ActiveProxy(importlib.import_module(f"{__name__}.core.{what}"), what)
        return cache[what]

    def _set(self, what: str, value: Any) -> None:
        # The import system sets the submodule when it is imported: the proxy stays. Anything
        # else replaces the name, as for a plain module attribute (monkeypatch.setattr, say).
        if value is not sys.modules.get(f"{__name__}.{what}"):
            self.__dict__.setdefault("_proxies", {})[what] = value

    @property
    def config(self) -> Any:
        """The active run's config (W&B's ``wandb.config``)."""
        return self._proxy("config")

    @config.setter
    def config(self, value: Any) -> None:
        self._set("config", value)

    @property
    def summary(self) -> Any:
        """The active run's summary (W&B's ``wandb.summary``)."""
        return self._proxy("summary")

    @summary.setter
    def summary(self, value: Any) -> None:
        self._set("summary", value)


sys.modules[__name__].__class__ = _Package


__all__ = [  # one name per line: additions merge cleanly
    "AlertLevel",
    "alert",
    "Api",
    "Histogram",
    "Image",
    "Audio",
    "Html",
    "Object3D",
    "Video",
    "box3d",
    "Settings",
    "define_metric",
    "save",
    "unwatch",
    "watch",
    "Artifact",
    "ArtifactCollection",
    "ArtifactNotFound",
    "log_artifact",
    "log_model",
    "remove_alias",
    "set_alias",
    "use_artifact",
    "use_model",
    "Band",
    "BarChart",
    "CliContext",
    "Config",
    "ConfigError",
    "EVENT_KINDS",
    "Event",
    "EventBus",
    "Heatmap",
    "Host",
    "LineChart",
    "MISSING",
    "Panel",
    "PluginError",
    "PluginInfo",
    "PluginManager",
    "Problem",
    "QueryError",
    "RECORD",
    "RUN_FINISHED",
    "RUN_STARTED",
    "Record",
    "Run",
    "RunInfo",
    "RunNotFound",
    "RunView",
    "Schema",
    "SchemaError",
    "Series",
    "Store",
    "StoreError",
    "Subscription",
    "Summarizer",
    "Summary",
    "Table",
    "TableFigure",
    "TrackerError",
    "TrackerWarning",
    "UnsupportedError",
    "WRITER_STARTED",
    "__version__",
    "config",
    "current_run",
    "finish",
    "get_host",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "init",
    "list_plugins",
    "load_config",
    "log",
    "log_record",
    "show",
    "login",
    "open_store",
    "set_host",
    "start_run",
    "summary",
    "validators",
    "sweep",
    "agent",
]
