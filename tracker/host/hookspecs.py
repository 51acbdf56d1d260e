"""The whole plugin contract of tracker.

A plugin is a module (or object) registered in the entry-point group
``tracker`` whose functions are marked ``@tracker.hookimpl``. The host calls
each plugin's implementation on its own, so it knows which plugin offered
what, and a plugin that raises is reported as broken without stopping the
others.

Order in which the hooks fire, once per process, when the plugin manager is
first needed (not at import):

1. ``tracker_configure(config)``: every plugin sees the loaded tracker.toml.
2. ``tracker_schemas()``: schemas are collected; a name offered twice stays
   with the first plugin and the second is reported broken.
3. ``tracker_summarizers()``: summarizers are collected and checked against
   the schemas.
4. ``tracker_subscribe(bus)``: plugins subscribe handlers to the one bus of
   the process; no hook is called per record after this.
5. ``tracker_commands(cli)``: only when the command line is built.
6. ``tracker_panels()``: only when the dashboard (``tracker ui``) first asks
   for a run's panels; never while logging.
7. ``tracker_alert_channels()``: only when an alert is first delivered
   (``run.alert``, ``tracker watch``); never while logging.
8. ``tracker_artifact_sources(config)``: only when ``run.use_artifact`` or a
   folder store's ``artifact()`` is asked for a name (or a version or alias
   of it) that the store does not know; never while logging.

Within one hook, implementations are called in pluggy's order:
``@hookimpl(tryfirst=True)`` first, ``@hookimpl(trylast=True)`` last, the
others the plugin loaded last first. What ``tracker_schemas`` and
``tracker_summarizers`` return is registered in load order (built-ins first,
then by distribution and name), so a name offered twice stays with the
plugin loaded first whatever the markers.

Hook wrappers are not supported: a plugin with an implementation marked
``wrapper=True`` or ``hookwrapper=True`` is refused when it is loaded and
listed broken, with an error naming the hook. The host calls each plugin's
implementation on its own (to know which plugin offered what), so a wrapper
would have nothing to wrap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from tracker.core.config import Config
    from tracker.core.figures import Panel
    from tracker.core.schema import Schema
    from tracker.core.summary import Summarizer
    from tracker.host.bus import EventBus

PROJECT = "tracker"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

#: The hook names in the order they fire.
HOOK_ORDER = ("tracker_configure", "tracker_schemas", "tracker_summarizers",
              "tracker_subscribe", "tracker_commands", "tracker_panels", "tracker_alert_channels",
              "tracker_artifact_sources")


@hookspec
def tracker_configure(config: Config) -> None:
    """See the loaded configuration before anything else.

    Called once per plugin manager, first of all hooks. A plugin reads its
    own table with ``config.plugin_config("<its name>")`` (the
    ``[plugins.<name>]`` table of tracker.toml). The return value is ignored.

    :param config: the loaded :class:`tracker.Config`.

    .. versionadded:: 0.1
    """


@hookspec
def tracker_schemas() -> list[Schema]:
    """Offer record schemas.

    Called once per plugin manager, after ``tracker_configure``. Each
    ``Schema(name, cls)`` names an attrs class that records of that name are
    validated against. Names are dotted and owned by one plugin.

    :returns: the schemas; a name another plugin already offered leaves this
        plugin reported broken, naming both.

    .. versionadded:: 0.1
    """


@hookspec
def tracker_summarizers() -> list[Summarizer]:
    """Offer summarizers for the records of one schema in one run.

    Called once per plugin manager, after schemas are collected. Each
    ``Summarizer(name, schema, fn)`` names the schema it reads; ``fn`` takes
    that run's records as a columnar ``Table`` (and, if it accepts a second
    argument, the ``RunView``) and returns a ``Summary``.

    :returns: the summarizers; a name offered twice is an error.

    .. versionadded:: 0.1
    """


@hookspec
def tracker_subscribe(bus: EventBus) -> None:
    """Subscribe handlers to the events of every run of the process.

    Called once per process, when the bus is built, after schemas and
    summarizers are collected. Use ``bus.subscribe(handler, kinds=...,
    schemas=...)``; who gets which event is resolved then, so no hook is
    called on the per-record path. A handler that raises is reported once,
    naming this plugin, and logging goes on. The return value is ignored.

    :param bus: the process's :class:`tracker.EventBus`.

    .. versionadded:: 0.1
    """


@hookspec
def tracker_commands(cli: click.Group) -> None:
    """Add commands to the ``tracker`` command line.

    Called when the CLI is built, after the core commands are added. Add a
    group of your own (``tracker fft report``) rather than flat verbs. The
    command's ``click`` context object is a :class:`tracker.CliContext`.

    :param cli: the root ``click.Group``.

    .. versionadded:: 0.1
    """


@hookspec
def tracker_panels() -> list[Panel]:
    """Offer panels: figures of one schema's records on the dashboard's run page.

    Called once per plugin manager, the first time the dashboard
    (``tracker ui``) asks for a run's panels; never while logging. Each
    ``Panel(name, schema, fn, title="")`` names the schema it reads and shows
    on the page of every run holding records of it. ``fn(table, run)`` gets
    that run's records of the schema as a columnar ``Table`` and its
    ``RunView``, and returns a list of figures built with ``tracker.LineChart``,
    ``tracker.Heatmap``, ``tracker.BarChart`` and ``tracker.TableFigure``;
    the dashboard draws them (a plugin never writes HTML or JavaScript). A
    panel function that raises shows its error in place of its figures, and
    the other panels still render. A plugin whose ``tracker_panels`` raises is
    listed as broken, but keeps its schemas and summarizers.

    :returns: the panels; a name offered twice is an error.

    .. versionadded:: 0.2
    """


@hookspec
def tracker_alert_channels() -> dict[str, Callable[[str, dict[str, Any]], Any]]:
    """Offer channel types for alerts, by type name: where ``run.alert`` and ``tracker watch`` deliver.

    Called once per plugin manager, the first time an alert is delivered
    (``run.alert`` with channels configured, or ``tracker watch`` starting);
    never while logging. Each entry maps a type name (what
    ``[alerts.channels.<name>] type = "..."`` names in tracker.toml) to a
    factory ``factory(name, options)``: ``name`` is the channel's name, and
    ``options`` its table (``type`` included). The factory returns an object
    with a ``send(alert)`` method, which gets a ``tracker.alerts.channels.Alert``
    (``title``, ``text``, ``level``, ``run_id``, ``run_name``, ``project``,
    ``condition``, ``step``, ``body()``) and raises on failure: it is called
    from a background thread and retried with backoff, so it may block on the
    network. A factory that raises for bad options makes a configuration error
    naming the channel. The built-in types (``webhook``, ``email``,
    ``command``, ``desktop``) cannot be taken over.

    :returns: a dict of type name -> factory; a name already offered leaves
        this plugin reported broken, naming the first owner.

    .. versionadded:: 0.4
    """


@hookspec
def tracker_artifact_sources(config: Config) -> dict[str, Callable[[], Any]]:
    """Offer other stores to resolve artifact names in, after the store a run or a reader is on.

    Called each time ``run.use_artifact`` (W&B's ``use_artifact`` too) or a
    folder store's ``artifact()`` (``Api().artifact``, ``tracker artifact
    get``) is asked for a name, or a version or alias of it, that the store
    does not know; never while logging, and never when the store knows the
    name and what was asked of it. Each entry maps a label (what messages
    call the source, e.g. ``"the team database"``) to an opener: a function
    of no arguments that opens the store and returns it (a store as
    :func:`tracker.open_store` returns, whose artifact registry answers the
    same questions), or raises :class:`tracker.TrackerError` in one line when
    it cannot (an unreachable server). The sources are asked in the order
    offered; the first that knows the name and what was asked of it answers,
    and the version's bytes are read from that store. The built-in
    ``artifact`` plugin offers the team database when ``[team] url`` (or
    ``TRACKER_TEAM_URL``) is set.

    :param config: the loaded :class:`tracker.Config` of the run's or the store's host.
    :returns: a dict of label -> opener.

    .. versionadded:: 0.5
    """
