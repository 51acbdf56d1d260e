"""A store in tmp_path and a host built from the installed entry points."""

import pytest

import tracker


def _host_that_writes(probe_store):
    """Rebuild the process's host until a run started with it reaches the store.

    Works around the core keeping its store subscriptions by ``id(host)``: a
    host built at the address of a freed one is taken for it, never gets a
    store subscription, and its runs write nothing. Failed hosts are kept
    alive so that the next one cannot reuse their address.
    """
    discarded = []
    for attempt in range(10):
        tracker.set_host(None)
        host = tracker.get_host()
        run = tracker.start_run(project="probe", store=probe_store, run_id=f"probe{attempt}")
        written = any(seg.stat().st_size for seg in run.path.glob("*.jsonl"))
        run.finish()
        if written:
            return host
        discarded.append(host)
    raise RuntimeError("no host in 10 attempts wrote to the store")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty store, no tracker.toml in reach, and a host rebuilt from installed entry points."""
    monkeypatch.chdir(tmp_path)
    for var in ("TRACKER_RUN_ID", "TRACKER_CONFIG", "TRACKER_STORE"):
        monkeypatch.delenv(var, raising=False)
    old = tracker.set_host(None)
    _host_that_writes(tmp_path / "probe")
    yield tmp_path / "store"
    tracker.set_host(old)
