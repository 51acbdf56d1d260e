"""Fixtures of the lifecycle tests: the CLI tests' store, host and in-process command, and ``cmd``."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import pytest
from click.testing import Result

from tests.cli.conftest import cli, host, store  # noqa: F401 - the same fixtures, one copy


@pytest.fixture
def cmd(cli: Callable[..., Result]) -> Callable[..., SimpleNamespace]:  # noqa: F811 - the fixture
    """Like ``support.tracker_cmd`` but in-process: ``cmd("rm", RUN, "--yes").returncode``."""

    def invoke(*args: str, stdin: str | None = None) -> SimpleNamespace:
        r = cli(*args, input=stdin)
        return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)

    return invoke
