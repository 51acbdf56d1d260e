"""Fixtures of the CLI tests: a store in tmp_path, a real plugin host, the real command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
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
    """A store folder under tmp_path, set as TRACKER_STORE; the test runs in an empty folder."""
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
    """``cli("runs", "--format", "json")`` runs the real ``tracker`` group in-process."""
    group = make_cli(host)

    def invoke(*args: str, **kwargs: Any) -> Result:
        return CliRunner().invoke(group, list(args), catch_exceptions=False, **kwargs)

    return invoke
