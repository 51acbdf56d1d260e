"""Fixtures of the phase trainer tests: a fresh store and a real plugin host."""

import pytest

import tracker


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A store folder under ``tmp_path``, set as ``TRACKER_STORE``, and a
    process host built from the installed entry points (defaults config)."""
    monkeypatch.chdir(tmp_path)
    for name in ("TRACKER_CONFIG", "TRACKER_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "store"
    monkeypatch.setenv("TRACKER_STORE", str(path))
    old = tracker.set_host(tracker.Host(tracker.get_plugin_manager(), tracker.Config()))
    yield path
    tracker.set_host(old)
