"""Fixtures of the MCP tests: the `alert` built-in loaded here and in the server's process."""

from __future__ import annotations

import pytest

from ..entrypoints import ensure_core_entry_points


@pytest.fixture(scope="session", autouse=True)
def core_entry_points(tmp_path_factory: pytest.TempPathFactory) -> None:
    ensure_core_entry_points(tmp_path_factory.mktemp("entry-points"))
