"""Pytest fixtures for plugin authors; opt in with ``pytest_plugins = ["tracker.testing"]``.

- ``tracker_store``: a temporary store folder, also set as ``TRACKER_STORE``;
  the test runs in an empty working folder with ``TRACKER_CONFIG`` and
  ``TRACKER_RUN_ID`` cleared, and the process's host is rebuilt on first use
  from the installed entry points (so no tracker.toml or run id of the
  developer's shell reaches the test).
- ``make_tracker_host``: ``make_tracker_host(plugin, ..., config=None)`` builds a
  host with the built-in ``metrics`` plugin and the given plugins registered
  (no entry points loaded) and makes it the process's host for the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tracker.core.config import Config
from tracker.host.host import Host, set_host
from tracker.host.pluginmanager import get_plugin_manager


def make_host(*plugins: object, config: Config | None = None, names: list[str] | None = None) -> Host:
    """A host with the built-in ``metrics`` plugin and ``plugins`` registered, in order.

    :param names: the plugins' names (default: each module's or class's name).
    """
    from tracker.builtin import metrics

    pm = get_plugin_manager(autoload=False)
    pm.add_plugin(metrics, "metrics", distribution="tracker-core", builtin=True)
    for i, plugin in enumerate(plugins):
        name = names[i] if names else getattr(plugin, "__name__", type(plugin).__name__)
        pm.add_plugin(plugin, name)
    return Host(pm, config if config is not None else Config())


#: Environment variables that would point a test at the developer's own config or run.
_CLEARED = ("TRACKER_CONFIG", "TRACKER_RUN_ID")


@pytest.fixture
def tracker_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh store folder ``tmp_path / "store"``, set as ``TRACKER_STORE`` for the test.

    The test runs in the empty folder ``tmp_path / "work"`` with
    ``TRACKER_CONFIG`` and ``TRACKER_RUN_ID`` unset, so neither a tracker.toml
    nor a run id of the surrounding shell applies. The process's host is
    dropped for the test (rebuilt from the installed entry points with the
    default config on first use) and restored afterwards.
    """
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    store = tmp_path / "store"
    monkeypatch.setenv("TRACKER_STORE", str(store))
    old = set_host(None)
    yield store
    set_host(old)


@pytest.fixture
def make_tracker_host() -> Iterator[Callable[..., Host]]:
    """Build a host with given plugins and install it for the test's duration."""
    old = set_host(None)

    def factory(*plugins: object, config: Config | None = None, names: list[str] | None = None) -> Host:
        host = make_host(*plugins, config=config, names=names)
        set_host(host)
        return host

    yield factory
    set_host(old)
