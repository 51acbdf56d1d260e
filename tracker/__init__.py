"""tracker: a local-first, plugin-based experiment tracker.

Log from a training loop::

    import tracker

    with tracker.start_run(project="fft", config={"n_fft": 512}) as run:
        run.log({"loss": 0.41}, step=10)

Read back with :func:`open_store`, or from the shell with ``tracker runs``.
Handlers on the bus tell events apart by their ``kind``, one of
:data:`EVENT_KINDS`: :data:`RUN_STARTED`, :data:`WRITER_STARTED`,
:data:`RECORD` and :data:`RUN_FINISHED`.
Nothing heavy happens at import: the plugin manager and the bus are built on
first use.
"""

from __future__ import annotations

import sys

from . import validators
from .api import Run, current_run, finish, log, log_record, start_run
from .bus import EventBus, Subscription, TrackerWarning
from .capture.artifacts import Artifact
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

__version__ = "0.1.0"


from .wandb import ActiveProxy as _ActiveProxy
from .wandb import UnsupportedError, init, login

# W&B's module-level `config` and `summary`: the active run's. The modules
# tracker.config and tracker.summary stay importable, and their names resolve through these.
config = _ActiveProxy(sys.modules[__name__ + ".config"], "config")
summary = _ActiveProxy(sys.modules[__name__ + ".summary"], "summary")


def __getattr__(name: str) -> object:
    # The CLI pulls in click's formatting machinery: load it only when asked.
    if name == "CliContext":
        from .cli import CliContext

        return CliContext
    if name == "run":  # W&B's `wandb.run`: the active run, or None
        return current_run()
    from .wandb import UNSUPPORTED, unsupported

    if name in UNSUPPORTED:
        raise unsupported(name)
    raise AttributeError(f"module 'tracker' has no attribute {name!r}")


__all__ = [  # one name per line: additions merge cleanly
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
    "login",
    "open_store",
    "set_host",
    "start_run",
    "summary",
    "validators",
]
