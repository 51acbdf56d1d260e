"""Console capture inside this process: streams restored as found, pytest's capture untouched, steps left alone."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

import tracker
from tracker.capture import console

from .conftest import texts


def test_streams_are_wrapped_in_place_and_restored_even_when_replaced_meanwhile(
        tmp_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = sys.stdout, sys.stderr
    own_before = "write" in vars(out)
    run = tracker.start_run(project="p", console=True, environment=False)
    assert sys.stdout is out and sys.stderr is err  # same objects: type, identity and isatty() unchanged
    print("captured line")
    print("captured error", file=sys.stderr)
    replacement = io.StringIO()
    sys.stdout = replacement  # the script replaces stdout and never puts it back
    print("into the replacement")
    run.finish()
    try:
        assert sys.stdout is replacement  # the user's own choice stays
        assert ("write" in vars(out)) == own_before  # the object found is as it was
        print("after finish", file=out)
    finally:
        sys.stdout = out
    printed = capsys.readouterr()
    assert printed.out == "captured line\nafter finish\n" and printed.err == "captured error\n"
    view = tracker.open_store().run(run.id)
    assert texts(view, "stdout") == ["captured line"] and texts(view, "stderr") == ["captured error"]


def test_a_wrapper_put_over_ours_keeps_working_and_ours_stops_recording(
        tmp_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = sys.stdout
    run = tracker.start_run(project="p", console=True, environment=False)
    seen = []
    inner = out.write

    def other_tool(s: str) -> int:
        seen.append(s)
        return inner(s)

    out.write = other_tool  # another tool wraps the stream after us
    try:
        print("during the run")
        run.finish()
        print("after the run")
    finally:
        del out.write
    assert "".join(seen) == "during the run\nafter the run\n"
    assert capsys.readouterr().out == "during the run\nafter the run\n"
    assert texts(tracker.open_store().run(run.id)) == ["during the run"]


def test_two_runs_at_once_both_keep_what_was_printed_while_they_were_open(tmp_store: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    a = tracker.start_run(project="p", name="a", console=True, environment=False)
    print("only a")
    console.flush_all()
    b = tracker.start_run(project="p", name="b", console=True, environment=False)
    print("both")
    a.finish()
    print("only b")
    b.finish()
    store = tracker.open_store()
    assert texts(store.run(a.id)) == ["only a", "both"]
    assert texts(store.run(b.id)) == ["both", "only b"]
    assert "write" not in vars(sys.stdout)


def test_console_records_carry_the_latest_step_and_never_advance_the_automatic_step(tmp_store: Path) -> None:
    run = tracker.start_run(project="p", console=True, environment=False)
    print("before any step")
    console.flush_all()
    run.log({"loss": 1.0})
    print("after step 0")
    console.flush_all()
    run.log({"loss": 0.5})
    run.finish()
    view = tracker.open_store().run(run.id)
    assert view.metrics()["step"].tolist() == [0, 1]
    assert [(r.step, r.data["text"]) for r in view.records("console")] == [(0, "before any step"),
                                                                          (0, "after step 0")]


def test_console_off_and_a_bad_value_are_refused_before_anything_is_made(tmp_store: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    run = tracker.start_run(project="p", console=False, environment=False)
    print("not kept")
    run.finish()
    assert "console" not in tracker.open_store().run(run.id).schemas()
    with pytest.raises(TypeError, match="console: expected"):
        tracker.start_run(project="p", console="loud")
    monkeypatch.setenv("TRACKER_CONSOLE", "loud")
    with pytest.raises(tracker.TrackerError, match="TRACKER_CONSOLE: expected off, wrap or fd, given 'loud'"):
        tracker.start_run(project="p")
    assert len(tracker.open_store().runs()) == 1
