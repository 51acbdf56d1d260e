"""Several lines of a stream in one ``console`` record: stores written one line per record (before 0.6) and
stores written in batches read as the same lines everywhere (the reader, ``tracker logs``, the summary)."""

from __future__ import annotations

import json
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import tracker
from tracker.capture.lines import MIDS, STDERR, STDOUT, TAILS, Batch, lines_py, write_batch
from tracker.cli import make_cli
from tracker.core.records import Record
from tracker.read.console import ConsoleLines, console_lines

from .conftest import killed_when_ready, only_run, texts

RED = "epoch 1 \x1b[31mred\x1b[0m"
#: What a process printed, as line states (stream, text, partial), cut into the batches a recorder took.
BATCHES = [
    [(STDOUT, "epoch 0", False), (STDOUT, "", False), (STDOUT, RED, False), (STDERR, "warn", False),
     (STDOUT, "prog 10%", True)],
    [(STDOUT, "prog 50%", True)],
    [(STDOUT, "prog 100%", False), (STDOUT, "done", False), (STDERR, "a warning", False)],
]
LINES = [(1, "stdout", "epoch 0"), (2, "stdout", ""), (3, "stdout", RED), (4, "stderr", "warn"),
         (5, "stdout", "prog 100%"), (6, "stdout", "done"), (7, "stderr", "a warning")]


def write_run(batches: list[list[tuple[int, str, bool]]]) -> str:
    """A run whose console records are written from ``batches`` by the recorder's own writer."""
    run = tracker.start_run(project="p", console=False, environment=False, system_metrics=False)
    for states in batches:
        b = Batch()
        for stream, text, partial in states:
            b.add(stream, text, partial)
        write_batch(run, b, time.time())
    run.finish()
    return run.id


def two_runs() -> tuple[Any, Any]:
    """The same output stored one line per record (as before 0.6) and in batches."""
    store = tracker.open_store()
    old = write_run([[state] for states in BATCHES for state in states])
    new = write_run(BATCHES)
    return store.run(old), store.run(new)


def logs(*args: str) -> list[tuple[int, str, str, bool]]:
    res = CliRunner().invoke(make_cli(), ["logs", *args, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.stderr
    return [(ln["n"], ln["stream"], ln["text"], ln["partial"]) for ln in json.loads(res.stdout)["lines"]]


def test_one_line_records_and_batched_records_read_as_the_same_lines(tmp_store: Path) -> None:
    old, new = two_runs()
    assert len(list(old.records("console"))) == 9
    assert [r.data["text"] for r in new.records("console")] == ["epoch 0\n\n" + RED, "warn", "prog 10%", "prog 50%",
                                                                "prog 100%\ndone", "a warning"]
    for view in (old, new):
        assert [(ln.n, ln.stream, ln.text) for ln in console_lines(view)] == LINES
        assert not any(ln.partial for ln in console_lines(view))
    for args in ([], ["--tail", "3"], ["--stream", "stdout"], ["--grep", "^(epoch|prog)"], ["--grep", "red"],
                 ["--stream", "stderr", "--tail", "1"]):
        assert logs(old.id, *args) == logs(new.id, *args), args
    assert [n for n, *_ in logs(new.id, "--grep", "^epoch")] == [1, 3]
    assert logs(new.id, "--tail", "2") == [(6, "stdout", "done", False), (7, "stderr", "a warning", False)]
    (summary_old,) = old.summarize("console")
    (summary_new,) = new.summarize("console")
    assert summary_old.rows == summary_new.rows
    assert [(r["stream"], r["lines"], r["last"]) for r in summary_new.rows] == [("stdout", 5, "done"),
                                                                                ("stderr", 2, "a warning")]


def test_a_partial_last_line_of_a_batch_is_replaced_by_its_later_state(tmp_store: Path) -> None:
    _, new = two_runs()
    records = list(new.records("console"))
    reader = ConsoleLines()
    first = [(ln.n, ln.text, ln.partial, is_new) for ln, is_new in reader.feed(records[:3])]
    assert first == [(1, "epoch 0", False, True), (2, "", False, True), (3, RED, False, True), (4, "warn", False, True),
                     (5, "prog 10%", True, True)]
    later = [(ln.n, ln.text, ln.partial, is_new) for ln, is_new in reader.feed(records[3:])]
    assert later == [(5, "prog 50%", True, False), (5, "prog 100%", False, False), (6, "done", False, True),
                     (7, "a warning", False, True)]
    assert reader.count == 7 and not reader.pending
    # A run still printing: its summary counts the unfinished line once, in its last state.
    run = tracker.start_run(project="p", console=False, environment=False, system_metrics=False)
    b = Batch()
    for text in ("a", "b", "load 1/3"):
        b.add(STDOUT, text, text.startswith("load"))
    write_batch(run, b, time.time())
    b = Batch()
    b.add(STDOUT, "load 2/3", True)
    write_batch(run, b, time.time())
    view = tracker.open_store().run(run.id)
    (summary,) = view.summarize("console")
    assert summary.rows == [{"stream": "stdout", "lines": 3, "characters": 10, "last": "load 2/3"}]
    assert [(ln.text, ln.partial) for ln in console_lines(view)] == [("a", False), ("b", False), ("load 2/3", True)]
    run.finish()


def test_a_batch_is_cut_at_64_kib_of_text(tmp_store: Path) -> None:
    long = ["x" * 30_000, "y" * 30_000, "z" * 30_000]
    run_id = write_run([[(STDOUT, t, False) for t in long]])
    view = tracker.open_store().run(run_id)
    assert [len(r.data["text"].encode()) for r in view.records("console")] == [60_001, 30_000]
    assert texts(view) == long


MANY = """
import sys, time, tracker
run = tracker.start_run(project="p")
for i in range(3000):
    print(f"line {i}")
time.sleep(1.0)  # lines are on disk within 0.5 s; twice that here
open(sys.argv[1], "w").close()
time.sleep(60)
"""


def test_kill_9_after_many_prints_keeps_every_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    killed_when_ready(tmp_path, MANY, store)
    view = only_run(store)
    assert view.info.status == "crashed"
    assert texts(view) == [f"line {i}" for i in range(3000)]
    assert len(list(view.records("console"))) < 3000  # lines share records


PRE = b'{"v":1,"kind":"record","schema":"console","step":0,"time":1.5,"w":"w","seq":'
states_st = st.lists(st.tuples(st.integers(0, 1), st.text(st.characters(blacklist_categories=("Cs",),
                                                                       blacklist_characters="\n"), max_size=20)
                               | st.sampled_from(["x" * 40_000, "é" * 20_000]), st.booleans()), max_size=12)


def read_back(blob: bytes) -> list[tuple[int, str, str, bool]]:
    records = [Record(0, 1.5, "console", orjson.loads(line)["data"], "w", 0) for line in blob.splitlines()]
    return [(ln.n, ln.stream, ln.text, ln.partial) for ln in ConsoleLines().lines(records)]


@settings(max_examples=200, deadline=None)
@given(states=states_st)
def test_any_output_reads_the_same_batched_or_one_line_per_record(states: list[tuple[int, str, bool]]) -> None:
    kinds = bytes(s | (2 if p else 0) for s, _, p in states)
    texts_ = [t for _, t, _ in states]
    crc = zlib.crc32(PRE)
    batched = lines_py(PRE, crc, 0, texts_, MIDS, TAILS, kinds)
    one_each = b"".join(lines_py(PRE, crc, i, [t], MIDS, TAILS, kinds[i:i + 1]) for i, t in enumerate(texts_))
    assert read_back(batched) == read_back(one_each)
    assert all(len(orjson.loads(line)["data"]["text"].encode()) <= 64 * 1024 for line in batched.splitlines())
