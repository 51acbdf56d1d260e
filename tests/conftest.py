"""Shared fixtures: a temporary store, fresh plugin managers, small run helpers."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker
from tracker.host.host import set_host
from tracker.host.pluginmanager import get_plugin_manager

from .sysdeps import packages_of

pytest_plugins = ["tracker.testing"]

# A shell ignores SIGINT in the commands it starts in the background, and child processes inherit
# that: the tests that stop a child with SIGINT (what Ctrl-C sends) would then wait for nothing.
# With Python's own handler here, children start with the default disposition again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# What a run printed and ran on (console and environment records, docs/provenance.md) is recorded by
# default; the suite's other tests count records, lines and blobs exactly, so it runs with both off
# unless the environment says otherwise. tests/provenance/ turns them on where they are the subject.
os.environ.setdefault("TRACKER_CONSOLE", "off")
os.environ.setdefault("TRACKER_ENVIRONMENT", "off")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Iterator[None]:
    """One line at the end naming the tests skipped for a missing system package, per package.

    A wrapper, so that the line comes after pytest's own short summary, just above the counts.
    """
    yield
    skipped: dict[tuple[str, ...], int] = {}
    for rep in terminalreporter.stats.get("skipped", []):
        text = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        packages = packages_of(text)
        if packages:
            skipped[packages] = skipped.get(packages, 0) + 1
    if not skipped:
        return
    parts = [f"{n} test{'s need' if n > 1 else ' needs'} {' and '.join(p)}" for p, n in sorted(skipped.items())]
    every = " ".join(dict.fromkeys(p for packages in sorted(skipped) for p in packages))
    terminalreporter.write_line(f"skipped for missing system packages: {'; '.join(parts)} "
                                f"(install with `sudo apt-get install {every}`)", yellow=True)


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


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    """One headless Chromium per test module, at 1440x900 with the browser's log kept.

    Skips (or, under ``TRACKER_REQUIRE_SYSTEM_PACKAGES=1``, fails) naming the package when Chromium or
    its driver is missing (tests/sysdeps.py).
    """
    from .sysdeps import chrome, require_chromium

    drv = chrome(*require_chromium(), size="1440,900", logs=True)
    drv.set_page_load_timeout(30)
    yield drv
    drv.quit()


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
