"""Hostile names and paths: nothing a user passes reaches outside the store.

Run ids, names, projects, tags, config keys and schema names with ``..``, ``/``,
``\\``, NUL, absolute paths, 10,000 characters or only dots. The folder around
the store is snapshotted before and after: the only new paths may be a valid
run's folder and its segment, under ``<store>/runs/``.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

import tracker
from tests.reliability.support import child_env, cli, local_host, read_run, same, snapshot
from tracker.cli import make_cli
from tracker.core.rules import MAX_LABEL

HOSTILE = [
    "..", ".", "...", "....", "../escape", "../../etc/passwd", "a/b", "a\\b", "..\\..\\escape", "a\x00b", "\x00",
    "/tmp/absolute", "C:\\Windows", "//server/share", "~", "~/x", "x" * 10_000, "." * 10_000, "", " ", "a b", "é",
    "run\n", "-" * 65, "a:b", "a*b", "\ud800",
]
HOSTILE_IDS = [pytest.param(v, id=repr(v)[:30]) for v in HOSTILE]
VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


@pytest.fixture
def around(tmp_path: Path, host: tracker.Host, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder that holds the store (and the working directory); snapshotted by the tests."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACKER_RUN_ID", raising=False)
    monkeypatch.setenv("TRACKER_STORE", str(tmp_path / "store"))
    return tmp_path


def new_paths(before: set[str], root: Path) -> set[str]:
    return snapshot(root) - before


@pytest.mark.parametrize("run_id", HOSTILE_IDS)
def test_hostile_run_id_is_refused_and_creates_nothing(around: Path, run_id: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    assert not VALID_ID.match(run_id)
    before = snapshot(around)
    for resume in (False, True):
        with pytest.raises(tracker.TrackerError, match="invalid run id") as info:
            tracker.start_run(run_id=run_id, resume=resume)
        assert len(str(info.value)) < 300  # a 10,000-character id is not echoed whole
    if "\x00" not in run_id and "\ud800" not in run_id and run_id:
        monkeypatch.setenv("TRACKER_RUN_ID", run_id)  # (an environment variable cannot hold NUL or surrogates)
        with pytest.raises(tracker.TrackerError, match="invalid run id"):
            tracker.start_run()
    assert new_paths(before, around) == set()


@pytest.mark.parametrize("run_id", HOSTILE_IDS)
def test_hostile_run_id_is_never_read_as_a_path(around: Path, run_id: str) -> None:
    with tracker.start_run(run_id="real") as run:
        run.log({"x": 1.0})
    # Something readable sits next to the store, where ".." would lead.
    (around / "runs").mkdir()
    (around / "runs" / "decoy.jsonl").write_text("{}\n")
    before = snapshot(around)
    store = tracker.open_store(around / "store")
    with pytest.raises(tracker.RunNotFound):
        store.run(run_id)
    with pytest.raises(tracker.TrackerError):
        tracker.RunView(around / "store", run_id)
    assert new_paths(before, around) == set()


def test_command_line_refuses_hostile_run_references(around: Path, host: tracker.Host) -> None:
    with tracker.start_run(run_id="real") as run:
        run.log({"x": 1.0})
    before = snapshot(around)
    runner = CliRunner()
    for ref in ("..", "../..", "/etc", "a/../real", "." * 100, "x" * 10_000, ""):
        for command in ("show", "summary", "export", "verify"):
            res = runner.invoke(make_cli(host), ["--store", str(around / "store"), command, ref])
            assert res.exit_code not in (0, None), (command, ref, res.output)
            assert res.exception is None or isinstance(res.exception, SystemExit), (command, ref, res.exception)
            assert res.stderr.strip() and "Traceback" not in res.stderr, (command, ref, res.stderr)
    assert new_paths(before, around) == set()
    # A child process too: one clear line on stderr, no traceback.
    res = cli("show", "../..", env=child_env(around, TRACKER_STORE=str(around / "store")), cwd=around)
    assert res.returncode != 0 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


FREE_TEXT = ["..", "../../etc", "/abs/path", "a\\b", "a\x00b", "x" * 10_000, "." * 10_000, "NaN", "null", "é"]


@pytest.mark.parametrize("text", [pytest.param(t, id=repr(t)[:30]) for t in FREE_TEXT])
def test_hostile_names_projects_tags_and_config_are_data(around: Path, text: str) -> None:
    before = snapshot(around)
    tags = [text] if len(text) <= MAX_LABEL else []
    if not tags:  # longer than a tag may be: start_run refuses it as `tracker tag --add` does, creating nothing
        with pytest.raises(tracker.TrackerError, match=f"at most {MAX_LABEL} characters"):
            tracker.start_run(project=text, tags=[text])
    with tracker.start_run(project=text, name=text, tags=tags, config={text: text, "nested": {text: [text]}}) as run:
        run.log({text: 1.0})
    created = new_paths(before, around)
    assert created == {"store", "store/runs", f"store/runs/{run.id}", f"store/runs/{run.id}/{run.writer_id}.jsonl"}
    info = tracker.open_store().run(run.id).info
    assert (info.name, info.project, info.tags) == (text, text, tags)
    assert info.config == {text: text, "nested": {text: [text]}}
    _, records = read_run(around / "store", run.id)
    assert [r.data for r in records] == [{text: 1.0}]
    assert tracker.open_store().runs(project=text)[0].id == run.id


@pytest.mark.parametrize("what", ["name", "project", "tags", "config"])
def test_unencodable_names_are_refused_before_anything_is_created(around: Path, what: str) -> None:
    bad = "lone \ud800 surrogate"
    kwargs = {"name": {"name": bad}, "project": {"project": bad}, "tags": {"tags": [bad]},
              "config": {"config": {bad: 1}}}[what]
    before = snapshot(around)
    with pytest.raises((tracker.SchemaError, TypeError)):
        tracker.start_run(**kwargs)
    assert new_paths(before, around) <= {"store", "store/runs"}
    assert tracker.current_run() is None


@attrs.frozen
class Point:
    value: float


@pytest.mark.parametrize("name", [pytest.param(v, id=repr(v)[:30]) for v in HOSTILE + ["../metrics", "metrics/../x"]])
def test_hostile_schema_names(around: Path, name: str) -> None:
    # Logged: an unknown schema, refused with nothing written.
    with tracker.start_run() as run:
        (seg,) = run.path.glob("*.jsonl")
        size = seg.stat().st_size
        with pytest.raises(tracker.SchemaError) as info:
            run.log_record(name, {"value": 1.0})
        assert seg.stat().st_size == size
        assert len(str(info.value)) < 2000
    # Offered by a plugin: the plugin is broken, naming the bad name; no other plugin is affected.
    class Offers:
        @tracker.hookimpl
        def tracker_schemas(self) -> list[tracker.Schema]:
            return [tracker.Schema(name, Point)]

    before = snapshot(around)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h = local_host(Offers(), names=["offers_bad_name"])
    (info,) = [p for p in h.plugins() if p.name == "offers_bad_name"]
    assert info.status == "broken" and "invalid schema name" in info.error
    assert name not in h.schemas and "metrics" in h.schemas
    assert sum("offers_bad_name" in str(w.message) for w in caught) == 1
    assert new_paths(before, around) == set()


def test_store_path_given_by_the_user_is_used_as_is(around: Path) -> None:
    # The store's own location is the user's choice (like any output path); ids inside it are checked.
    odd = around / "a b" / ".." / "store with spaces"
    with tracker.start_run(store=odd, name="../..") as run:
        run.log({"x": 0.0})
    assert Path(os.path.normpath(odd), "runs", run.id).is_dir()
    view, records = read_run(Path(os.path.normpath(odd)), run.id)
    assert same(records[0].data, {"x": 0.0}) and view.info.name == "../.."
