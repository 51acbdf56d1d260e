"""Fixtures of the lifecycle tests: a store under tmp_path, a real host, the real command in-process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner, Result

import tracker
from tracker.cli import make_cli


@pytest.fixture
def host() -> Iterator[tracker.Host]:
    """A host with every installed plugin and default settings, installed as the process's host."""
    h = tracker.Host(tracker.get_plugin_manager(), tracker.Config())
    old = tracker.set_host(h)
    yield h
    tracker.set_host(old)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: tracker.Host) -> Path:
    """An empty store folder under tmp_path, set as TRACKER_STORE; the test runs in an empty folder."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in ("TRACKER_RUN_ID", "TRACKER_CONFIG", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "store"
    path.mkdir()
    monkeypatch.setenv("TRACKER_STORE", str(path))
    return path


@pytest.fixture
def cli(host: tracker.Host) -> Callable[..., Result]:
    """``cli("tag", RUN, "--add", "x")`` runs the real ``tracker`` group in-process (stdin not a terminal)."""
    group = make_cli(host)

    def invoke(*args: str, **kwargs: Any) -> Result:
        return CliRunner().invoke(group, list(args), catch_exceptions=False, **kwargs)

    return invoke


@pytest.fixture
def cmd(cli: Callable[..., Result]) -> Callable[..., SimpleNamespace]:
    """Like ``support.tracker_cmd`` but in-process: ``cmd("rm", RUN, "--yes").returncode``."""

    def invoke(*args: str, stdin: str | None = None) -> SimpleNamespace:
        r = cli(*args, input=stdin)
        return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)

    return invoke
