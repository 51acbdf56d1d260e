"""Fixtures of the dashboard tests: one store of known runs per session, and a 1,000,000-record run."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import make_big_run, make_runs


@pytest.fixture(scope="session")
def runs_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A store with alpha (finished), beta (failed), an XSS-named run and two runs sharing a prefix."""
    store = tmp_path_factory.mktemp("ui") / "store"
    return store, make_runs(store)


@pytest.fixture(scope="session")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one run of 1,000,000 metrics records."""
    store = tmp_path_factory.mktemp("ui-big") / "store"
    return store, make_big_run(store)


@pytest.fixture
def client(runs_store):
    from starlette.testclient import TestClient

    import tracker.ui

    store, _ = runs_store
    with TestClient(tracker.ui.create_app(store)) as c:
        yield c


def pytest_configure(config: pytest.Config) -> None:
    # Starlette's test client still works on httpx; its notice about httpx2 is not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore:Using `httpx` with `starlette.testclient`")


@pytest.fixture(scope="session")
def plugin_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A store with one run per bundled plugin (through the installed entry points)."""
    from .support import make_plugin_runs

    store = tmp_path_factory.mktemp("ui-plugins") / "store"
    return store, make_plugin_runs(store)
