"""Shared fixtures: a temporary store, fresh plugin managers, small run helpers."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker
from tracker.host import set_host
from tracker.pluginmanager import get_plugin_manager

pytest_plugins = ["tracker.testing"]

# A shell ignores SIGINT in the commands it starts in the background, and child processes inherit
# that: the tests that stop a child with SIGINT (what Ctrl-C sends) would then wait for nothing.
# With Python's own handler here, children start with the default disposition again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def tmp_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh store set as TRACKER_STORE; the test runs in an empty folder (no tracker.toml)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("TRACKER_RUN_ID", raising=False)
    monkeypatch.delenv("TRACKER_CONFIG", raising=False)
    store = tmp_path / "store"
    monkeypatch.setenv("TRACKER_STORE", str(store))
    return store


@pytest.fixture
def pm() -> tracker.PluginManager:
    """A fresh plugin manager with no entry points loaded."""
    return get_plugin_manager(autoload=False)


@pytest.fixture
def fresh_host() -> Iterator[None]:
    """Drop the process's host before and after the test, so it is rebuilt from entry points."""
    old = set_host(None)
    yield
    set_host(old)


def strict_lines(path: Path) -> list[dict]:
    """Every line of every segment under ``path``, parsed by a strict JSON parser."""

    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON constant {token}")

    out = []
    for seg in sorted(path.rglob("*.jsonl")):
        for line in seg.read_text(encoding="utf-8").splitlines():
            out.append(json.loads(line, parse_constant=refuse))
    return out
