"""A store never read: `tracker runs` and `tracker show` build its derived data with a progress line."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracker
from tracker.cli import terminal, warmup
from tracker.read.index import index_file
from tracker.read.index.cold import cold_bytes


def _run_of(store: Path, n: int) -> str:
    with tracker.start_run(project="p", name="cold", store=store, system_metrics=False) as run:
        for i in range(n):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
    return run.id


def _segments_built(store: Path, rid: str) -> bool:
    return all(index_file(store, rid, seg).exists() for seg in (store / "runs" / rid).glob("*.jsonl"))


@pytest.mark.parametrize("command", ["runs", "show"])
def test_a_terminal_sees_a_progress_line_while_derived_data_is_built(cli, store, monkeypatch, command) -> None:
    rid = _run_of(store, 2000)
    assert not _segments_built(store, rid)  # never read: nothing derived yet
    before = cold_bytes(store, rid)
    assert before["unbuilt_bytes"] == before["jsonl_bytes"] > 0
    # stderr a terminal, and the line shown at once (a real one waits half a second: here the
    # build of 2,000 records would often be done before it)
    monkeypatch.setattr(terminal, "is_terminal", lambda stream=None: True)
    monkeypatch.setattr(warmup, "SHOW_AFTER_S", 0.0)
    result = cli("--store", str(store), command, *([rid] if command == "show" else []))
    assert result.exit_code == 0, result.output
    assert "for the first time" in result.stderr and "[##############################]" in result.stderr
    assert _segments_built(store, rid)
    assert cold_bytes(store, rid)["unbuilt_bytes"] == 0
    # read again: nothing left to build, no line
    again = cli("--store", str(store), command, *([rid] if command == "show" else []))
    assert "for the first time" not in again.stderr


def test_off_a_terminal_nothing_is_printed_and_readers_build_as_always(cli, store, monkeypatch) -> None:
    rid = _run_of(store, 200)
    monkeypatch.setattr(warmup, "SHOW_AFTER_S", 0.0)
    result = cli("--store", str(store), "runs")
    assert result.exit_code == 0 and "first time" not in result.stderr and rid[:8] in result.output
