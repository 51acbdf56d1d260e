"""Fixtures of the alert tests: a host built from a tracker.toml of the test's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tracker.host import set_host


@pytest.fixture
def host_of(tmp_store: Path) -> Iterator:
    """``host_of(toml_text)``: a tracker.toml written in the test's folder and the process host built from it."""
    old = set_host(None)

    def make(text: str):
        import tracker

        cfg = Path.cwd() / "tracker.toml"
        cfg.write_text(text)
        host = tracker.Host(config=tracker.load_config(cfg))
        set_host(host)
        return host

    yield make
    set_host(old)
