"""Concurrent writers: 8 real processes and 8 threads logging to one run at the same time."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import (
    ack_lines,
    child_env,
    local_host,
    read_run,
    spawn,
    strict_json_lines,
    verify,
)

RANKS = 8
PER_RANK = 10_000
THREADS = 8
PER_THREAD = 5_000


def check_writers(records: list[tracker.Record], who: str, groups: int, per_group: int) -> None:
    """All records there once, each writer's sequence numbers increasing, each group's order kept."""
    assert len(records) == groups * per_group
    assert len({(r.writer, r.seq) for r in records}) == len(records), "duplicated (writer, seq)"
    by_group: dict[int, list[tracker.Record]] = defaultdict(list)
    by_writer: dict[str, list[int]] = defaultdict(list)
    for r in records:
        by_group[r.data[who]].append(r)
        by_writer[r.writer].append(r.seq)
    assert sorted(by_group) == list(range(groups))
    for g, recs in by_group.items():
        # records() merges writers by time; within one group, order is log order.
        assert [r.data["i"] for r in sorted(recs, key=lambda r: (r.writer, r.seq))] == list(range(per_group)), g
        assert all(r.step == r.data["i"] and r.data["x"] == r.data["i"] * 0.5 for r in recs)
    for seqs in by_writer.values():
        assert seqs == sorted(seqs)


@pytest.mark.slow
def test_eight_processes_log_ten_thousand_records_each_to_one_run(tmp_path: Path) -> None:
    store, run_id = tmp_path / "store", "ddp"
    env = child_env(tmp_path, TRACKER_RUN_ID=run_id)
    go = tmp_path / "go"
    procs = [spawn("rank", tmp_path, tmp_path / f"rank-{r}.txt", env, "--store", str(store),
                   "--child", str(r), "--count", str(PER_RANK), "--go", str(go)) for r in range(RANKS)]
    deadline = time.monotonic() + 120
    # Every rank has attached (all at once, through TRACKER_RUN_ID) before any logs: they all write together.
    while not all((tmp_path / f"ready-{r}").exists() for r in range(RANKS)):
        assert all(p.poll() is None for p in procs), [(tmp_path / f"rank-{r}.err").read_text() for r in range(RANKS)]
        assert time.monotonic() < deadline
        time.sleep(0.005)
    go.touch()
    for r, p in enumerate(procs):
        assert p.wait(300) == 0, (tmp_path / f"rank-{r}.err").read_text()
        assert ack_lines(tmp_path / f"rank-{r}.txt")[0][0] == "done"
    view, records = read_run(store, run_id)
    assert view.problems == []
    check_writers(records, "rank", RANKS, PER_RANK)
    info = view.info
    assert (info.status, info.writers, info.records) == ("finished", RANKS, RANKS * PER_RANK)
    assert len({r.writer for r in records}) == RANKS
    segments = view.segment_paths()
    assert len(segments) == RANKS
    # Every line of every segment is strict JSON: no two writes were ever interleaved.
    assert strict_json_lines(segments) == RANKS * PER_RANK + 2 * RANKS
    cols = tracker.RunView(store, run_id).metrics()
    assert cols["i"].size == RANKS * PER_RANK
    code, report = verify(store, run_id, work=tmp_path)
    assert (code, report["problems"], report["records"]) == (0, [], RANKS * PER_RANK)


def _thread_writers(store: Path, shared: bool) -> list[tracker.Record]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)
    shared_run = tracker.start_run(store=store, run_id="threads", resume=True) if shared else None

    def work(t: int) -> None:
        try:
            run = shared_run or tracker.start_run(store=store, run_id="threads", resume=True)
            barrier.wait()
            for i in range(PER_THREAD):
                run.log({"thread": t, "i": i, "x": i * 0.5}, step=i)
            if not shared:
                run.finish()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if shared_run is not None:
        shared_run.finish()
    assert not errors, errors
    view, records = read_run(store, "threads")
    assert view.problems == []
    info = view.info
    assert (info.status, info.writers, info.records) == ("finished", 1, THREADS * PER_THREAD)
    strict_json_lines(view.segment_paths())
    return records


@pytest.mark.parametrize("shared", [True, False], ids=["one-run-object", "run-object-per-thread"])
def test_eight_threads_log_to_one_run(tmp_path: Path, shared: bool) -> None:
    old = tracker.set_host(local_host())
    try:
        records = _thread_writers(tmp_path / "store", shared)
    finally:
        tracker.set_host(old)
    check_writers(records, "thread", THREADS, PER_THREAD)
    # One process, one segment: sequence numbers are 2..N+1 in file order (1 is the start event).
    assert sorted(r.seq for r in records) == list(range(2, THREADS * PER_THREAD + 2))
