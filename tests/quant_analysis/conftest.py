"""A store in tmp_path and a host built from the installed entry points."""

import pytest

import tracker


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty store, no tracker.toml in reach, and a host rebuilt from installed entry points."""
    monkeypatch.chdir(tmp_path)
    for var in ("TRACKER_RUN_ID", "TRACKER_CONFIG", "TRACKER_STORE"):
        monkeypatch.delenv(var, raising=False)
    old = tracker.set_host(None)
    yield tmp_path / "store"
    tracker.set_host(old)
