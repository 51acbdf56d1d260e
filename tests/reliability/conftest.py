"""Fixtures of the fault-injection suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import tracker
from tests.reliability.support import local_host


@pytest.fixture
def host() -> Iterator[tracker.Host]:
    """A host with only the built-in ``metrics`` plugin, installed as the process's host for the test."""
    h = local_host()
    old = tracker.set_host(h)
    yield h
    tracker.set_host(old)
