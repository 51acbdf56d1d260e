"""The plugin manager: pluggy, the entry points of group ``tracker``, and what each plugin is.

``get_plugin_manager()`` builds a pluggy manager and loads the entry points of
group ``tracker`` one by one, so that a plugin that fails to import is
reported as broken instead of stopping the others. :class:`tracker.Host`
(in :mod:`tracker.host.host`) calls the hooks and owns what they register.
"""

from __future__ import annotations

import importlib.metadata
import warnings
from collections.abc import Iterable
from typing import Any

import attrs
import pluggy

from tracker.host import hookspecs
from tracker.host.bus import TrackerWarning

CORE_DISTRIBUTION = "tracker-core"


@attrs.define(kw_only=True)
class PluginInfo:
    """One plugin as ``tracker plugins`` lists it.

    ``status`` is ``ok``, ``broken`` (with ``error``) or ``disabled``.
    """

    name: str
    distribution: str | None = None
    version: str | None = None
    builtin: bool = False
    status: str = "ok"
    error: str | None = None
    hooks: list[str] = attrs.field(factory=list)
    schemas: list[str] = attrs.field(factory=list)
    summarizers: list[str] = attrs.field(factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The info as plain data."""
        return attrs.asdict(self)


class PluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers every plugin's distribution and state."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.infos: dict[str, PluginInfo] = {}

    def add_plugin(self, plugin: object, name: str, *, distribution: str | None = None,
                   version: str | None = None, builtin: bool = False) -> PluginInfo:
        """Register ``plugin`` under ``name``; an invalid one is recorded as broken."""
        info = PluginInfo(name=name, distribution=distribution, version=version, builtin=builtin)
        self.infos[name] = info
        try:
            self.register(plugin, name=name)
            unknown = [i.name for i in self.get_hookcallers(plugin) or []
                       if i.name.startswith("tracker_") and i.spec is None]
            if unknown:
                raise pluggy.PluginValidationError(plugin, f"unknown hooks {unknown}")
            wrappers = wrapper_hooks(self, plugin)
            if wrappers:
                raise pluggy.PluginValidationError(plugin, wrapper_error(wrappers))
        except (ValueError, pluggy.PluginValidationError) as exc:
            self.break_plugin(name, f"invalid plugin: {exc}")
            return info
        info.hooks = sorted(i.name for i in self.get_hookcallers(plugin) or [])
        return info

    def break_plugin(self, name: str, error: str) -> None:
        """Mark plugin ``name`` broken, unregister it, and warn once."""
        info = self.infos.setdefault(name, PluginInfo(name=name))
        if info.status == "broken":
            return
        info.status, info.error = "broken", error
        if self.get_plugin(name) is not None:
            self.unregister(name=name)
        warnings.warn(f"tracker: plugin {name!r} is broken: {error}", TrackerWarning, stacklevel=2)


def wrapper_hooks(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """The hooks ``plugin`` implements as a wrapper (``wrapper=True`` or ``hookwrapper=True``)."""
    return sorted(caller.name for caller in pm.get_hookcallers(plugin) or []
                  for impl in caller.get_hookimpls()
                  if impl.plugin is plugin and (impl.hookwrapper or getattr(impl, "wrapper", False)))


def wrapper_error(hooks: list[str]) -> str:
    """Why a plugin with hook wrappers is refused (see hookspecs.py)."""
    return (f"hook wrappers are not supported ({', '.join(hooks)} marked wrapper=True or hookwrapper=True): "
            "tracker calls each plugin's implementation on its own, so a wrapper would never run; "
            "implement the hook plainly, with tryfirst=True or trylast=True to choose its place")


def get_plugin_manager(autoload: bool = True, blocked: Iterable[str] = ()) -> PluginManager:
    """A fresh plugin manager: specs added, ``blocked`` names blocked, entry points loaded.

    :param autoload: load the entry points of group ``tracker``.
    :param blocked: plugin names not to load (``[plugins] disable``); they are
        listed as disabled.
    """
    pm = PluginManager()
    blocked = set(blocked)
    for name in blocked:
        pm.set_blocked(name)
    if autoload:
        _load_entry_points(pm, blocked)
    return pm


def _load_entry_points(pm: PluginManager, blocked: set[str]) -> None:
    eps = list(importlib.metadata.entry_points(group=hookspecs.PROJECT))

    def dist_of(ep: importlib.metadata.EntryPoint) -> tuple[str | None, str | None]:
        dist = getattr(ep, "dist", None)
        return (dist.metadata["Name"], dist.version) if dist is not None else (None, None)

    # Built-ins first, then by distribution and name: "first loaded" is stable.
    eps.sort(key=lambda ep: (dist_of(ep)[0] != CORE_DISTRIBUTION, dist_of(ep)[0] or "", ep.name))
    for ep in eps:
        dist, version = dist_of(ep)
        builtin = dist == CORE_DISTRIBUTION
        if ep.name in pm.infos:
            first = pm.infos[ep.name].distribution
            pm.infos[f"{ep.name} ({dist})"] = PluginInfo(
                name=ep.name, distribution=dist, version=version, status="broken",
                error=f"entry point name {ep.name!r} is already taken by distribution {first!r}")
            continue
        if ep.name in blocked:
            pm.infos[ep.name] = PluginInfo(name=ep.name, distribution=dist, version=version,
                                           builtin=builtin, status="disabled")
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # noqa: BLE001 - a plugin that fails to import is reported, not fatal
            pm.infos[ep.name] = PluginInfo(name=ep.name, distribution=dist, version=version, builtin=builtin)
            pm.break_plugin(ep.name, f"failed to import {ep.value}: {type(exc).__name__}: {exc}")
            continue
        pm.add_plugin(plugin, ep.name, distribution=dist, version=version, builtin=builtin)
