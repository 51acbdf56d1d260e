"""``tracker verify``: damage written by hand is found and named by file and line; exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tracker
from tests.cli.support import run_on_terminal, run_tracker, write_run
from tracker.read.segment import hostname

N = 20  # records; the segment's lines: 1 start, 2..21 records, 22 finish


@pytest.fixture
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def segment(store, dead_pid) -> Path:
    """A finished run's segment whose writer process is gone."""
    return write_run(store, "victim", [(s, {"loss": 1.0 / (s + 1)}) for s in range(N)],
                     writer_host=hostname(), pid=dead_pid)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _problems(cli, *args: str) -> tuple[int, list[dict]]:
    result = cli("verify", *args, "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["ok"] == (result.exit_code == 0)
    return result.exit_code, doc["problems"]


def test_clean_store(cli, store, segment):
    with tracker.start_run() as run:
        run.log({"x": 1.0})
    result = cli("verify")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "2 runs, 2 segments, 25 events checked: ok"
    doc = json.loads(cli("verify", "--format", "json").stdout)
    assert doc["ok"] is True and doc["records"] == N + 1 and doc["problems"] == []


def _truncate_last_line(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    path.write_bytes(data[:-25])
    return N + 2, "torn"


def _garbage_line(path: Path) -> tuple[int, str]:
    lines = _lines(path)
    lines.insert(5, b"this is not json\n")
    path.write_bytes(b"".join(lines))
    return 6, "corrupt"


def _flip_one_byte(path: Path) -> tuple[int, str]:
    lines = _lines(path)
    line = bytearray(lines[9])
    i = line.index(b'"loss":') + 8  # a digit of the value
    line[i] = ord("7") if line[i] != ord("7") else ord("8")
    lines[9] = bytes(line)
    path.write_bytes(b"".join(lines))
    return 10, "checksum"


def _drop_a_line(path: Path) -> tuple[int, str]:
    lines = _lines(path)
    del lines[7]
    path.write_bytes(b"".join(lines))
    return 8, "gap"


def _repeat_a_line(path: Path) -> tuple[int, str]:
    lines = _lines(path)
    lines.insert(8, lines[7])
    path.write_bytes(b"".join(lines))
    return 9, "duplicate"


@pytest.mark.parametrize("damage", [_truncate_last_line, _garbage_line, _flip_one_byte, _drop_a_line,
                                    _repeat_a_line])
def test_damage_is_named_by_file_and_line(cli, segment, damage):
    line, kind = damage(segment)
    result = cli("verify")
    assert result.exit_code == 1
    assert f"{segment}:{line}: {kind}: " in result.stdout, result.stdout
    code, problems = _problems(cli, "victim")
    assert code == 1
    assert {"path": str(segment), "line": line, "kind": kind} in [
        {k: p[k] for k in ("path", "line", "kind")} for p in problems]


def test_corrupt_line_is_not_also_a_gap(cli, segment):
    _garbage_line(segment)
    _, problems = _problems(cli)
    assert [p["kind"] for p in problems] == ["corrupt"]


def test_dropped_line_also_breaks_the_finish_count(cli, segment):
    _drop_a_line(segment)
    _, problems = _problems(cli)
    assert [(p["kind"], p["line"]) for p in problems] == [("gap", 8), ("gap", N + 1)]
    assert "counts 20 records, the segment holds 19" in problems[1]["message"]


def test_empty_segment_and_missing_start(cli, store, segment, dead_pid):
    empty = segment.parent / f"{hostname()}-{dead_pid}-cccccc.jsonl"
    empty.write_bytes(b"")
    orphan = write_run(store, "orphan", [(0, {"x": 1.0})], start_kind="writer_started")
    result = cli("verify")
    assert result.exit_code == 1
    assert f"{empty}: empty: " in result.stdout
    assert f"{orphan.parent}: no_start: " in result.stdout


def test_only_named_runs(cli, store, segment):
    write_run(store, "healthy", [(0, {"x": 1.0})])
    _garbage_line(segment)
    assert cli("verify", "healthy").exit_code == 0
    assert cli("verify", "healthy", "victim").exit_code == 1


def test_running_writer_may_have_a_partial_last_line(cli, store):
    run = tracker.start_run()
    try:
        run.log({"x": 1.0})
        with open(next(run.path.glob("*.jsonl")), "ab") as f:
            f.write(b'{"v":1,"kind":"rec')  # a write in progress
        assert cli("verify").exit_code == 0
    finally:
        run.finish()


def test_progress_bar_only_on_a_terminal(store):
    write_run(store, "big", [(s, {"loss": 1.0 / (s + 1), "acc": 0.5}) for s in range(12_000)])
    assert sum(p.stat().st_size for p in store.rglob("*.jsonl")) > 1 << 20
    args = ["--store", str(store), "verify"]
    on_tty = run_on_terminal(args, stream="stderr")
    assert "verifying" in on_tty and "100%" in on_tty
    assert run_tracker(*args).stderr == ""
