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
def host(tracker_store: Path) -> Iterator[tracker.Host]:
    """A host with every installed plugin and default settings, installed as the process's host.

    It depends on ``tracker_store`` so that the store's reset of the host comes first.
    """
    h = tracker.Host(tracker.get_plugin_manager(), tracker.Config())
    old = tracker.set_host(h)
    yield h
    tracker.set_host(old)


@pytest.fixture
def store(tracker_store: Path, monkeypatch: pytest.MonkeyPatch, host: tracker.Host) -> Path:
    """``tracker.testing``'s store, created, with NO_COLOR unset and the real host installed."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    tracker_store.mkdir()
    return tracker_store


@pytest.fixture
def cli(host: tracker.Host) -> Callable[..., Result]:
    """``cli("runs", "--format", "json")`` runs the real ``tracker`` group in-process."""
    group = make_cli(host)

    def invoke(*args: str, **kwargs: Any) -> Result:
        return CliRunner().invoke(group, list(args), catch_exceptions=False, **kwargs)

    return invoke
