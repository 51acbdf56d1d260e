"""Fixtures of the team tests: a folder store of every kind of run, and the database it was synced to."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..query.conftest import pg_server  # noqa: F401 - the one PostgreSQL server of the session
from .support import build_store


def pytest_configure(config: pytest.Config) -> None:
    # Starlette's test client still works on httpx; its notice about httpx2 is not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore:Using `httpx` with `starlette.testclient`")


_dbs = iter(range(1, 10_000))


def new_database(server: object) -> str:
    """The URL of a fresh, empty database on the test server."""
    import psycopg

    name = f"team{next(_dbs)}_{os.getpid()}"
    with psycopg.connect(server.url(), autocommit=True) as conn:  # type: ignore[attr-defined]
        conn.execute(f"CREATE DATABASE {name}")
    return server.url(name)  # type: ignore[attr-defined]


@pytest.fixture
def pg_url(pg_server: object) -> str:  # noqa: F811 - the fixture above, used here
    """A fresh, empty database."""
    return new_database(pg_server)


@pytest.fixture(scope="package")
def pair(pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, dict[str, str]]]:  # noqa: F811
    """``(folder, url, ids)``: a store of every kind of run, and a database it was synced to with ``tracker sync``."""
    import tracker
    from tracker.team.postgres import sync

    store = tmp_path_factory.mktemp("team") / "store"
    ids = build_store(store)
    url = new_database(pg_server)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Small batches: the columns and figures of a writer are built over several commits.
        sync(tracker.open_store(store), url, batch=7)
    yield store, url, ids
