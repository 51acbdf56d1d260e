"""Fixtures of the query tests: one store with every kind of run, shared by the module."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import build_store


@pytest.fixture(scope="package")
def rich_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store with NaN, repeated steps, several writers, failed, crashed, torn, damaged and running runs.

    The run ``live`` keeps running until the tests of the package are done.
    """
    pytest.importorskip("duckdb", reason="the query extra (duckdb) is not installed")
    store = tmp_path_factory.mktemp("rich") / "store"
    live = build_store(store)
    yield store
    live.kill()
    live.wait()


@pytest.fixture
def store_copy(rich_store: Path, tmp_path: Path) -> Path:
    """A copy of the rich store a test may change (its live writer is the same process: still running)."""
    dest = tmp_path / "store"
    shutil.copytree(rich_store, dest)
    return dest


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """A PostgreSQL server started for the test session (skipped only when Debian's postgresql is missing)."""
    pytest.importorskip("psycopg", reason="the team extra (psycopg) is not installed")
    from ..sysdeps import require_postgres
    from .pg import Server

    server = Server(require_postgres())
    yield server
    server.stop()


_dbs = iter(range(1, 10_000))


@pytest.fixture
def pg_url(pg_server: object) -> str:
    """The URL of a fresh, empty database on the test server."""
    import psycopg

    name = f"t{next(_dbs)}_{os.getpid()}"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:  # type: ignore[attr-defined]
        conn.execute(f"CREATE DATABASE {name}")
    return pg_server.url(name)  # type: ignore[attr-defined]
