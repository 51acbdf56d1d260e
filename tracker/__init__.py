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
import os
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for type checkers and readers; loaded lazily below
    from . import validators
    from .api import Run, current_run, finish, log, log_record, start_run
    from .bus import EventBus, Subscription, TrackerWarning
    from .capture.artifacts import Artifact
    from .cli import CliContext
    from .config import Config, load_config
    from .errors import ConfigError, PluginError, QueryError, RunNotFound, SchemaError, StoreError, TrackerError
    from .figures import Band, BarChart, Heatmap, LineChart, Panel, Series, TableFigure
    from .format import EVENT_KINDS, RECORD, RUN_FINISHED, RUN_STARTED, WRITER_STARTED
    from .hookspecs import hookimpl, hookspec
    from .host import Host, get_host, list_plugins, set_host
    from .pluginmanager import PluginInfo, PluginManager, get_plugin_manager
    from .records import Event, Problem, Record, RunInfo
    from .schema import Schema
    from .store import RunView, Store, open_store
    from .summary import MISSING, Summarizer, Summary, Table
    from .wandb import (
        AlertLevel,
        Api,
        Histogram,
        Image,
        Settings,
        UnsupportedError,
        alert,
        define_metric,
        init,
        login,
        save,
        unwatch,
        watch,
    )

__version__ = "0.1.0"

#: Public name -> the module (relative to this package) that defines it, imported on first use.
_LAZY: dict[str, str] = {}
for _module, _names in {
    "api": "Run current_run finish log log_record start_run",
    "bus": "EventBus Subscription TrackerWarning",
    "capture.artifacts": "Artifact",
    "cli": "CliContext",
    "config": "Config load_config",
    "errors": "ConfigError PluginError QueryError RunNotFound SchemaError StoreError TrackerError",
    "figures": "Band BarChart Heatmap LineChart Panel Series TableFigure",
    "format": "EVENT_KINDS RECORD RUN_FINISHED RUN_STARTED WRITER_STARTED",
    "hookspecs": "hookimpl hookspec",
    "host": "Host get_host list_plugins set_host",
    "pluginmanager": "PluginInfo PluginManager get_plugin_manager",
    "records": "Event Problem Record RunInfo",
    "schema": "Schema",
    "store": "RunView Store open_store",
    "summary": "MISSING Summarizer Summary Table",
    "wandb": "AlertLevel Api Histogram Image Settings UnsupportedError alert define_metric init login save unwatch "
             "watch",
}.items():
    _LAZY.update(dict.fromkeys(_names.split(), _module))
del _module, _names


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if name == "Table":  # tracker.wandb teaches it W&B's form, Table(columns=..., data=...)
        importlib.import_module(f"{__name__}.wandb")
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # once loaded, a plain attribute
        return value
    if name == "validators":
        return importlib.import_module(f"{__name__}.validators")
    if name.startswith("__"):
        raise AttributeError(f"module 'tracker' has no attribute {name!r}")
    if _is_submodule(name):
        # `tracker.reader` without importing it first, and the import system's own question
        # before `from . import hookspecs`: the submodule, imported now.
        return importlib.import_module(f"{__name__}.{name}")
    if name == "run":  # W&B's `wandb.run`: the active run, or None
        return __getattr__("current_run")()  # type: ignore[operator]
    if name == "show":  # the dashboard in a notebook: loads Starlette and uvicorn only when called for
        from .ui.notebook import show

        return show
    from .wandb import UNSUPPORTED, unsupported

    if name in UNSUPPORTED:
        raise unsupported(name)
    raise AttributeError(f"module 'tracker' has no attribute {name!r}")


def _is_submodule(name: str) -> bool:
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
    (``tracker.config.load_config``).
    """

    def _proxy(self, what: str) -> Any:
        cache = self.__dict__.setdefault("_proxies", {})
        if what not in cache:
            from .wandb import ActiveProxy

            cache[what] = ActiveProxy(importlib.import_module(f"{__name__}.{what}"), what)
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
    "Settings",
    "define_metric",
    "save",
    "unwatch",
    "watch",
    "Artifact",
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
]
