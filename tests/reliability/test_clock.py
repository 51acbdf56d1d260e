"""Wall clocks that step (issue 10, item 1): an NTP correction, a virtual machine resumed with a reset clock.

The writer is a real child process whose ``time.time`` steps back 0.4 s, then
jumps to 1000 s after the epoch, so that it finishes earlier than it started;
a second child resumes the run with a true clock. Readers must order each
writer's records by its sequence (never by its clock), and no time value may
make a reader fail, for this run or for the others of the store.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import tracker
from tests.reliability.support import ack_lines, child_env, cli, event, event_line, read_run, spawn, verify
from tracker.read.columns import metric_columns
from tracker.read.reader import merge_log_order


def write_stepping_run(work: Path, store: Path) -> list[float]:
    """Run the two clock children; returns the times the first one's clock gave, in log order."""
    times = []
    for child in (0, 1):
        out = work / f"clock-{child}.txt"
        p = spawn("clock", work, out, child_env(work), "--store", str(store), "--run-id", "stepped",
                  "--child", str(child))
        assert p.wait(60) == 0, out.with_suffix(".err").read_text()
        acks = ack_lines(out)
        assert [int(a[0]) for a in acks] == (list(range(15)) if child == 0 else list(range(15, 20)))
        if child == 0:
            times = [float(a[1]) for a in acks]
    return times


def test_a_clock_stepping_back_never_reorders_a_writers_records_or_breaks_a_reader(tmp_path: Path,
                                                                                  host: tracker.Host) -> None:
    store = tmp_path / "store"
    with tracker.start_run(project="other", store=store, run_id="healthy") as run:
        run.log({"k": 1.0})
    times = write_stepping_run(tmp_path, store)
    # The fault really happened: the clock went back within the run and ended before it began.
    assert times[5] < times[4] and times[10] < times[0]

    # Listing the store works, for the stepped run and for the other one.
    infos = {i.id: i for i in tracker.open_store(store).runs()}
    assert set(infos) == {"healthy", "stepped"}
    assert infos["stepped"].status == "finished" and infos["healthy"].status == "finished"
    assert infos["stepped"].name == "clock-0" and infos["stepped"].records == 20
    res = cli("--store", str(store), "runs", "--format", "json", env=child_env(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert {d["id"] for d in json.loads(res.stdout)} == {"healthy", "stepped"}
    res = cli("--store", str(store), "show", "stepped", env=child_env(tmp_path), cwd=tmp_path)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr

    # Log order: each writer's records in its own order, the resumed writer's after them.
    view, records = read_run(store, "stepped")
    assert [r.step for r in records] == list(range(20))
    assert view.problems == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", tracker.TrackerWarning)
        cols = view.metrics()
        assert cols["step"].tolist() == list(range(20))
        assert cols["k"].tolist() == [float(s) for s in range(20)]
        table = view.table("metrics")
        assert [row.values["k"] for row in table.rows()] == list(range(20))
    # The times are kept as logged, never corrected.
    logged = [r.time for r in records]
    assert logged[5] < logged[4] and logged[10] < logged[0] and logged[15] > logged[9]
    assert cols["time"].tolist() == logged
    code, report = verify(store, work=tmp_path)
    assert code == 0 and report["problems"] == []


def test_a_run_whose_only_writer_ended_before_it_began_reads_as_finished(tmp_path: Path,
                                                                         host: tracker.Host) -> None:
    store = tmp_path / "store"
    out = tmp_path / "clock.txt"
    p = spawn("clock", tmp_path, out, child_env(tmp_path), "--store", str(store), "--run-id", "alone",
              "--child", "0")
    assert p.wait(60) == 0, out.with_suffix(".err").read_text()
    (info,) = tracker.open_store(store).runs()
    assert info.status == "finished" and info.records == 15 and info.last_step == 14
    assert info.ended_at is not None and info.ended_at < info.created_at  # as the clock said
    res = cli("--store", str(store), "runs", env=child_env(tmp_path), cwd=tmp_path)
    assert res.returncode == 0 and "alone"[:4] in res.stdout, res.stderr


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.floats(-1e12, 1e12, allow_nan=False), max_size=8), min_size=1, max_size=5))
def test_records_and_columns_merge_segments_alike_and_keep_each_writers_order(segments: list[list[float]]) -> None:
    sources = [[tracker.Record(k, t, "metrics", {"seg": i, "k": k}, f"w{i}", k + 2) for k, t in enumerate(times)]
               for i, times in enumerate(segments)]
    merged = [(r.data["seg"], r.data["k"]) for r in merge_log_order(sources)]
    for i, times in enumerate(segments):  # nothing lost, each writer in its own order
        assert [k for s, k in merged if s == i] == list(range(len(times)))
    chunks = [(f"seg{i}", [[event_line(event("record", k + 2, writer=f"w{i}", time=t, schema="metrics", step=k,
                                             data={"seg": i, "k": k}))[:-1] for k, t in enumerate(times)]])
              for i, times in enumerate(segments)]
    problems: list = []
    cols, n = metric_columns(chunks, problems.append)
    assert problems == [] and n == len(merged)
    got = [(int(s), int(k)) for s, k in zip(cols["seg"], cols["k"], strict=True)] if n else []
    assert got == merged


EXTREME_TIMES = {"huge": 1e300, "negative": -1e18, "epoch": 0, "year_10000": 253402300800.0, "int_time": 1_700_000_000}


def test_no_time_value_makes_a_reader_or_a_command_fail(tmp_path: Path, host: tracker.Host) -> None:
    """Clocks far off (a dead real-time clock, a corrupted NTP answer): every time a number, none a failure."""
    store = tmp_path / "store"
    for rid, t in EXTREME_TIMES.items():
        run_dir = store / "runs" / rid
        run_dir.mkdir(parents=True)
        w = "gone-host-1-abcdef"
        lines = [event("run_started", 1, writer=w, time=t, data={"host": "gone-host", "pid": 1, "name": rid}),
                 event("record", 2, writer=w, time=t, schema="metrics", step=0, data={"k": 1.0}),
                 event("run_finished", 3, writer=w, time=t, data={"status": "finished", "records": 1,
                                                                  "max_step": 0, "last": {"k": 1.0}})]
        (run_dir / f"{w}.jsonl").write_bytes(b"".join(event_line(e) for e in lines))
    infos = tracker.open_store(store).runs()
    assert sorted(i.id for i in infos) == sorted(EXTREME_TIMES)
    for rid in EXTREME_TIMES:
        view, records = read_run(store, rid)
        assert [r.data for r in records] == [{"k": 1.0}] and view.metrics()["k"].tolist() == [1.0]
    env = child_env(tmp_path)
    for command in (["runs"], ["show", "negative"], ["tail", "huge"], ["compare", *EXTREME_TIMES]):
        res = cli("--store", str(store), *command, env=env, cwd=tmp_path)
        assert res.returncode == 0 and "Traceback" not in res.stderr, (command, res.stderr)
