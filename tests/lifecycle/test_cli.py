"""Every new command's table and JSON output, and its errors, through the real command group."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

import tracker

from .support import make_runs


def _one_line_error(result: Result, text: str, listing: bool = False) -> None:
    assert result.exit_code == 1 and (listing or result.stdout == "")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("tracker: ") and text in result.stderr


def test_tag(store: Path, cli: Callable[..., Result]) -> None:
    make_runs(store, 2)
    r = cli("tag", "run0", "run1", "--add", "keep", "--add", "cnn", "--remove", "t0")
    assert r.exit_code == 0
    lines = [line.split() for line in r.stdout.splitlines()]
    assert [lines[0], *lines[2:]] == [
        ["id", "name", "tags"], ["run0", "run0-name-0", "keep,", "cnn"], ["run1", "run1-name-1", "t1,", "keep,", "cnn"]]
    doc = json.loads(cli("tag", "run0", "--format", "json").stdout)
    assert doc == [{"id": "run0", "short_id": "run0", "name": "run0-name-0", "tags": ["keep", "cnn"]}]
    _one_line_error(cli("tag", "run0", "--add", "a\nb"), "must be one line")
    _one_line_error(cli("tag", "zzz", "--add", "a"), "no run matches 'zzz'")
    assert cli("tag").exit_code == 2  # click's usage error


def test_rename(store: Path, cli: Callable[..., Result]) -> None:
    make_runs(store, 1)
    r = cli("rename", "run0", "better name")
    assert r.exit_code == 0 and [ln.split(None, 2) for ln in r.stdout.splitlines()][2] == [
        "run0", "run0-name-0", "better name"]
    doc = json.loads(cli("rename", "better name", "best", "--format", "json").stdout)
    assert doc == {"id": "run0", "short_id": "run0", "name": "best", "previous": "better name"}
    assert tracker.open_store(store).run("run0").info.name == "best"
    _one_line_error(cli("rename", "run0", " "), "must not be empty")


def test_note(store: Path, cli: Callable[..., Result]) -> None:
    make_runs(store, 1)
    r = cli("note", "run0", "line one")
    assert r.exit_code == 0 and r.stdout == "run0 (run0-name-0):\n  line one\n"
    doc = json.loads(cli("note", "run0", "line two", "--append", "--format", "json").stdout)
    assert doc["notes"] == "line one\nline two"
    r = cli("note", "run0", "-", input="from stdin\nsecond line\n")
    assert r.exit_code == 0 and tracker.open_store(store).run("run0").info.notes == "from stdin\nsecond line"
    r = cli("note", "run0", "")
    assert r.exit_code == 0 and "(no notes)" in r.stdout
    _one_line_error(cli("note", "nope", "x"), "no run matches 'nope'")


def test_rm_restore_and_runs_trash(store: Path, cli: Callable[..., Result]) -> None:
    make_runs(store, 3)
    r = cli("rm", "run0", "run1", "--dry-run")
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["id", "name", "project", "status", "start", "size"]
    assert [ln.split()[0] for ln in lines[2:4]] == ["run0", "run1"]
    assert lines[-1].startswith("dry run: would move 2 runs, ")
    _one_line_error(cli("rm", "run0"), "stdin is not a terminal", listing=True)
    doc = json.loads(cli("rm", "run0", "--yes", "--format", "json").stdout)
    assert doc["count"] == 1 and doc["removed"][0]["id"] == "run0" and doc["removed"][0]["bytes"] > 0
    r = cli("runs", "--trash")
    assert r.exit_code == 0 and "run0" in r.stdout and "run1" not in r.stdout
    docs = json.loads(cli("runs", "--trash", "--format", "json").stdout)
    assert [d["id"] for d in docs] == ["run0"]
    assert [d["id"] for d in json.loads(cli("runs", "--format", "json").stdout)] == ["run2", "run1"]
    _one_line_error(cli("show", "run0"), "no run matches 'run0'")
    doc = json.loads(cli("restore", "run0", "--format", "json").stdout)
    assert doc["restored"][0]["id"] == "run0" and doc["restored"][0]["status"] == "finished"
    assert cli("rm", "run0", "--yes").exit_code == 0
    r = cli("restore", "run0")
    assert r.exit_code == 0 and r.stdout.splitlines()[-1] == "restored 1 run"
    _one_line_error(cli("restore", "run0"), "no run matches 'run0'")
    _one_line_error(cli("rm", "nosuch", "--yes"), "no run matches 'nosuch'")


def test_gc_and_du_tables(store: Path, cli: Callable[..., Result]) -> None:
    make_runs(store, 2)
    cli("rm", "run1", "--yes")
    r = cli("gc", "--dry-run")
    assert r.exit_code == 0 and r.stdout.splitlines()[0].startswith("trash: would remove 1 run (")
    r = cli("gc")
    assert r.stdout.splitlines()[0].startswith("trash: removed 1 run (")
    doc = json.loads(cli("gc", "--format", "json").stdout)
    assert doc["trash_runs"] == [] and doc["dry_run"] is False
    r = cli("du")
    assert r.exit_code == 0 and r.stdout.splitlines()[2].split()[0] == "run0"
    doc = json.loads(cli("du", "--format", "json").stdout)
    assert [x["id"] for x in doc["runs"]] == ["run0"] and doc["trash"] == 0
