"""Fixtures of the integration tests: a store, scripts run in a fresh interpreter, segment lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    # Tiny models on a shared machine: one intra-op thread is faster than contention.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


@pytest.fixture
def store(tracker_store: Path) -> Iterator[Path]:
    """A fresh store with the installed plugins; the built-in ``table`` schema added if not installed yet."""
    from tracker.builtin import table
    from tracker.host.host import Host, set_host
    from tracker.host.pluginmanager import get_plugin_manager

    pm = get_plugin_manager()
    if "table" not in pm.infos:
        pm.add_plugin(table, "table", distribution="tracker-core", builtin=True)
    old = set_host(Host(pm))
    yield tracker_store
    set_host(old)


def run_script(code: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None,
               timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Write ``code`` to a script in ``tmp_path`` and run it with this interpreter; fail with its output."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.pop("TRACKER_RUN_ID", None)
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=full_env,
                          cwd=tmp_path, timeout=timeout)
    return proc


def segment_lines(path: Path) -> list[dict[str, Any]]:
    """The parsed lines of one segment file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def metric_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(step, data)`` of every metrics record of one segment, in order."""
    return [(e["step"], e["data"]) for e in segment_lines(path)
            if e.get("kind") == "record" and e.get("schema") == "metrics"]
