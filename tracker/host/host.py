"""The host: the plugins of a process, the registries they fill, and the bus.

``Host`` calls each plugin's hooks on their own, so it knows which plugin
offered which schema, summarizer and handler, validates each item, and
reports a plugin that raises as broken without stopping the others. The
process's host is built on first use by :func:`get_host`, never at import.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pluggy

from tracker.core.config import Config, load_config
from tracker.core.errors import SchemaError
from tracker.core.figures import Panel
from tracker.core.schema import CompiledSchema, Schema, make_converter
from tracker.core.summary import Summarizer
from tracker.host.bus import EventBus, TrackerWarning
from tracker.host.pluginmanager import PluginInfo, PluginManager, get_plugin_manager, wrapper_error

SCHEMA_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*\Z")


class Host:
    """The plugins of a process: registries of schemas and summarizers, and the bus."""

    def __init__(self, pm: PluginManager | None = None, config: Config | None = None) -> None:
        self.config = config if config is not None else load_config()
        self.pm = pm if pm is not None else get_plugin_manager(blocked=self.config.disable)
        self.converter = make_converter()
        self.schemas: dict[str, CompiledSchema] = {}
        self.schema_owner: dict[str, str] = {}
        self.summarizers: dict[str, Summarizer] = {}
        self.summarizer_owner: dict[str, str] = {}
        self._panels: dict[str, Panel] | None = None
        self.panel_owner: dict[str, str] = {}
        self._panels_lock = threading.Lock()
        self.bus = EventBus()
        self.bus.on_report = self._handler_reported
        self._trace = os.environ.get("TRACKER_TRACE_PLUGINS", "") not in ("", "0")
        hook = self.pm.hook
        self.call_each(hook.tracker_configure, config=self.config)
        self.call_each(hook.tracker_schemas, collect=self._add_schemas)
        self.call_each(hook.tracker_summarizers, collect=self._add_summarizers)
        self.call_each(hook.tracker_subscribe, bus=self.bus)

    def call_each(self, caller: pluggy.HookCaller, collect: Callable[[str, Any], None] | None = None,
                  **kwargs: Any) -> None:
        """Call the hook of ``caller`` (e.g. ``host.pm.hook.tracker_schemas``) of each plugin on its own.

        In pluggy's order: ``tryfirst`` implementations first, ``trylast``
        ones last, the others the plugin loaded last first. What
        they return is collected in load order (built-ins first), so that a
        name offered twice stays with the plugin loaded first, whatever the
        markers. A plugin that raises is reported broken and the others still
        run; a wrapper (refused when a plugin is added) is never called.

        :param collect: called as ``collect(plugin name, result)`` with each plugin's result.
        :param kwargs: the hook's arguments; each implementation gets those it asks for.
        """
        hook = caller.name
        results = []
        for impl in reversed(caller.get_hookimpls()):  # pluggy calls its list from the end
            name = impl.plugin_name
            if impl.hookwrapper or getattr(impl, "wrapper", False):
                self.break_plugin(name, wrapper_error([hook]))
                continue
            if self._trace:
                print(f"tracker: {hook}() of plugin {name!r}", file=sys.stderr)
            self.bus.owner = name
            try:
                results.append((name, impl.function(*[kwargs[a] for a in impl.argnames])))
            except Exception as exc:  # noqa: BLE001 - a broken plugin never stops the others
                self.break_plugin(name, f"{hook} raised {type(exc).__name__}: {exc}")
            finally:
                self.bus.owner = None
        if collect is None:
            return
        loaded = {name: i for i, name in enumerate(self.pm.infos)}
        for name, result in sorted(results, key=lambda r: loaded.get(r[0], len(loaded))):
            if self.pm.infos.get(name, PluginInfo(name=name)).status == "broken":
                continue
            try:
                collect(name, result)
            except Exception as exc:  # noqa: BLE001 - a broken plugin never stops the others
                self.break_plugin(name, f"{hook} raised {type(exc).__name__}: {exc}")

    def break_plugin(self, name: str, error: str) -> None:
        """Drop everything plugin ``name`` registered and report it broken."""
        for table, owners in ((self.schemas, self.schema_owner), (self.summarizers, self.summarizer_owner)):
            for key in [k for k, o in owners.items() if o == name]:
                del table[key], owners[key]
        for sub in self.bus.subscriptions:
            if sub.owner == name:
                sub.unsubscribe()
        self.pm.break_plugin(name, error)

    def _handler_reported(self, plugin: str | None, error: str) -> None:
        """A handler of ``plugin`` raised or was slow: list the plugin as broken.

        Its schemas, summarizers and handlers stay registered, so that no
        record of it is refused and no event is withheld from it.
        """
        if plugin is None:
            return
        info = self.pm.infos.setdefault(plugin, PluginInfo(name=plugin))
        if info.status == "ok":
            info.status, info.error = "broken", error

    def _add_schemas(self, plugin: str, result: Any) -> None:
        compiled = []
        for item in _as_list(result, "tracker_schemas"):
            if not isinstance(item, Schema):
                raise TypeError(f"tracker_schemas returned {type(item).__name__}, expected tracker.Schema")
            if not SCHEMA_NAME_RE.match(item.name) or len(item.name) > 100:
                raise ValueError(f"invalid schema name {item.name!r}: expected dotted words, e.g. 'fft.loss_point'")
            if item.name in self.schema_owner:
                raise ValueError(f"schema {item.name!r} is already offered by plugin "
                                 f"{self.schema_owner[item.name]!r}; plugin {plugin!r} offers it too")
            compiled.append(CompiledSchema(item, self.converter))
        for c in compiled:
            self.schemas[c.name] = c
            self.schema_owner[c.name] = plugin
        self.pm.infos.setdefault(plugin, PluginInfo(name=plugin)).schemas = [c.name for c in compiled]

    def _add_summarizers(self, plugin: str, result: Any) -> None:
        items = _as_list(result, "tracker_summarizers")
        for item in items:
            if not isinstance(item, Summarizer):
                raise TypeError(f"tracker_summarizers returned {type(item).__name__}, expected tracker.Summarizer")
            if item.name in self.summarizer_owner:
                raise ValueError(f"summarizer {item.name!r} is already offered by plugin "
                                 f"{self.summarizer_owner[item.name]!r}; plugin {plugin!r} offers it too")
        for item in items:
            self.summarizers[item.name] = item
            self.summarizer_owner[item.name] = plugin
        self.pm.infos.setdefault(plugin, PluginInfo(name=plugin)).summarizers = [s.name for s in items]

    def schema(self, name: str) -> CompiledSchema:
        """The compiled schema ``name``.

        :raises SchemaError: for an unknown name, listing the known ones.
        """
        try:
            return self.schemas[name]
        except (KeyError, TypeError):
            shown = repr(name) if len(repr(name)) < 80 else repr(name)[:77] + "..."
            known = ", ".join(sorted(self.schemas))
            raise SchemaError(str(name)[:80], [("(schema)", f"expected a known schema ({known}), "
                                                            f"given unknown schema {shown}")]) from None

    @property
    def panels(self) -> dict[str, Panel]:
        """The dashboard panels plugins offer, by name (collected on first use: only ``tracker ui`` asks).

        A plugin whose ``tracker_panels`` raises, or offers a bad panel, is
        reported broken; its schemas and summarizers stay registered.
        """
        with self._panels_lock:
            if self._panels is None:
                panels: dict[str, Panel] = {}
                for impl in list(self.pm.hook.tracker_panels.get_hookimpls()):
                    name = impl.plugin_name
                    if self._trace:
                        print(f"tracker: tracker_panels() of plugin {name!r}", file=sys.stderr)
                    try:
                        self._add_panels(panels, name, impl.function())
                    except Exception as exc:  # noqa: BLE001 - a broken panel never stops the others
                        self._handler_reported(name, f"tracker_panels raised {type(exc).__name__}: {exc}")
                        warnings.warn(f"tracker: plugin {name!r}: tracker_panels raised {type(exc).__name__}: "
                                      f"{exc}", TrackerWarning, stacklevel=2)
                self._panels = panels
            return self._panels

    def _add_panels(self, panels: dict[str, Panel], plugin: str, result: Any) -> None:
        items = _as_list(result, "tracker_panels")
        for item in items:
            if not isinstance(item, Panel):
                raise TypeError(f"tracker_panels returned {type(item).__name__}, expected tracker.Panel")
            if not isinstance(item.schema, str) or not callable(item.fn):
                raise TypeError(f"panel {item.name!r}: expected a schema name and a function fn(table, run)")
            if item.name in panels:
                raise ValueError(f"panel {item.name!r} is already offered by plugin "
                                 f"{self.panel_owner[item.name]!r}; plugin {plugin!r} offers it too")
        for item in items:
            panels[item.name] = item
            self.panel_owner[item.name] = plugin

    def summarizers_for(self, schema: str) -> list[Summarizer]:
        """The summarizers that read ``schema``, in registration order."""
        return [s for s in self.summarizers.values() if s.schema == schema]

    def plugins(self) -> list[PluginInfo]:
        """Every plugin known to the manager, loaded, broken or disabled."""
        return list(self.pm.infos.values())


def _as_list(result: Any, hook: str) -> list[Any]:
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return list(result)
    raise TypeError(f"{hook} returned {type(result).__name__}, expected a list")


_host: Host | None = None
_host_lock = threading.Lock()


def get_host() -> Host:
    """The process's host, built on first use (plugins loaded, bus subscribed)."""
    global _host
    if _host is None:
        with _host_lock:
            if _host is None:
                _host = Host()
    return _host


def set_host(host: Host | None) -> Host | None:
    """Replace the process's host (``None``: build a fresh one on next use); returns the old one."""
    global _host
    with _host_lock:
        old, _host = _host, host
    return old


def list_plugins() -> list[PluginInfo]:
    """Every plugin of the process's host (built on first use)."""
    return get_host().plugins()
