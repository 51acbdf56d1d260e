"""Fixtures of the query tests: one store with every kind of run, shared by the module."""

from __future__ import annotations

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
    """A copy of the rich store a test may change (the running run reads as crashed in it)."""
    dest = tmp_path / "store"
    shutil.copytree(rich_store, dest)
    return dest
