"""Readers of a store that eight processes log into in tight loops: each read returns, never chasing the tail.

A writer on the C path appends faster than a reader parses, so a reader that
followed each segment to its end would never return (listing runs was still
running after minutes). Readers build derived data up to the size each
segment had when the read began: each read here must come back with at least
the records the writers had acknowledged before it started.

The seven reads run at once, each in its own process, all started (imports
done) before the writers log their first record: each takes what was there
when it began, while eight writers share the machine's cores with them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.support import CHILD, child_env, wait_for_line

READER = Path(__file__).with_name("live_reader.py")
WRITERS = 8
READS = ("runs", "api_runs", "metrics_w0", "metrics_ranks", "show", "api_metrics", "query")
#: A read that has not come back by then has chased the tail (it never would).
HANG_S = 90


def _run_of(child: str) -> str:
    i = int(child[1:])
    return f"w{i}" if i < 6 else "ranks"  # six runs of one writer, one run two ranks write


def test_reads_of_a_store_eight_processes_log_into_return_with_what_was_acknowledged(tmp_path: Path):
    pytest.importorskip("starlette")
    pytest.importorskip("duckdb")
    store, acks, go = tmp_path / "store", tmp_path / "acks", tmp_path / "go"
    acks.mkdir()
    env = child_env(tmp_path)
    readers, writers = [], []
    try:
        for name in READS:
            out = tmp_path / f"read-{name}.out"
            with open(out, "wb") as so, open(out.with_suffix(".err"), "wb") as se:
                readers.append((subprocess.Popen(
                    [sys.executable, str(READER), str(store), str(acks), str(go), str(WRITERS), name],
                    stdout=so, stderr=se, env=env, cwd=tmp_path), out))
        for proc, out in readers:
            wait_for_line(out, proc)
        for i in range(WRITERS):
            out = acks / f"c{i}.out"
            with open(out, "wb") as so, open(out.with_suffix(".err"), "wb") as se:
                writers.append((subprocess.Popen(
                    [sys.executable, str(CHILD), "burst", "--store", str(store), "--run-id", _run_of(f"c{i}"),
                     "--child", str(i), "--go", str(go)], stdout=so, stderr=se, env=env, cwd=tmp_path), out))
        for proc, out in writers:
            wait_for_line(out, proc)
        go.touch()
        for proc, out in readers:
            try:
                proc.wait(timeout=HANG_S)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"{out.stem} did not return within {HANG_S} s: it chases the tail") from None
            assert proc.returncode == 0, out.with_suffix(".err").read_text()[-3000:]
        assert all(proc.poll() is None for proc, _ in writers), "a writer stopped while the store was read"
    finally:
        for proc, _ in writers + readers:
            proc.kill()
            proc.wait()

    reads = {}
    for _, out in readers:
        r = json.loads(out.read_text().split("\n")[1])
        reads[r["read"]] = r

    def per_run(acked: dict[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for c, n in acked.items():
            out[_run_of(c)] = out.get(_run_of(c), 0) + n
        return out

    for name in ("runs", "api_runs", "query"):
        want, found = per_run(reads[name]["acked"]), reads[name]["found"]
        assert set(found) == set(want), name
        # Every record acknowledged before the read began is in its answer.
        assert all(found[r] >= want[r] for r in want), (name, found, want)
    for name, children in (("metrics_w0", ["c0"]), ("metrics_ranks", ["c6", "c7"])):
        found, acked = reads[name]["found"], reads[name]["acked"]
        assert set(found) == set(children)
        assert all(found[c] >= acked[c] for c in children), (name, found, acked)
    assert reads["show"]["found"] == {"exit": 0, "names_run": True}
    assert reads["api_metrics"]["found"]["k_max"] >= reads["api_metrics"]["acked"]["c0"] - 1
    # What each read took, for the record (timing is the benchmarks' to judge).
    print({name: round(r["seconds"], 2) for name, r in reads.items()})


def test_the_live_read_benchmark_runs(tmp_path: Path):
    """benchmarks/bench_live_read.py --quick: each read next to its floor (the same read, writer stopped)."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_live_read.py"
    proc = subprocess.run([sys.executable, str(script), "--quick", "--repeat", "1"], capture_output=True, text=True,
                          cwd=tmp_path, env=child_env(tmp_path), timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["name"].split(",")[0] for r in rows] == ["Store.runs() (tracker runs", "the same", "view.metrics()",
                                                       "the same"]
    assert all(r["value"] > 0 and r["floor"] > 0 for r in rows)
    assert all(r["records_live"] >= r["records_idle"] for r in rows if "records_live" in r)


def test_each_look_of_tail_takes_what_is_there(tmp_path: Path):
    """`tracker tail -f`'s follower: a look at a run that logs in a tight loop ends, with what was acknowledged."""
    import threading

    import tracker
    from tracker.read.tail import Follower

    store, go, out = tmp_path / "store", tmp_path / "go", tmp_path / "c0.out"
    env = child_env(tmp_path)
    with open(out, "wb") as so, open(out.with_suffix(".err"), "wb") as se:
        writer = subprocess.Popen([sys.executable, str(CHILD), "burst", "--store", str(store), "--run-id", "w0",
                                   "--child", "0", "--go", str(go)], stdout=so, stderr=se, env=env, cwd=tmp_path)
    try:
        wait_for_line(out, writer)
        go.touch()
        follower = Follower(tracker.open_store(store).run("w0"), "metrics")
        seen: list[int] = []
        for _ in range(3):  # the first look reads the derived data, the next ones the lines since
            acked = 0
            while acked < 1000 * (len(seen) + 1):
                lines = out.read_text().split("\n")[:-1]
                acked = max([int(x) for x in lines if x.isdigit()], default=0)
            done = threading.Event()
            counted: list[int] = []

            def look(counted: list[int] = counted, done: threading.Event = done) -> None:
                counted.append(sum(1 for _ in follower.read()))
                done.set()

            threading.Thread(target=look, daemon=True).start()
            assert done.wait(HANG_S), "a look of the follower chases the run's tail"
            seen.append(counted[0])
            assert sum(seen) >= acked, (seen, acked)
            assert writer.poll() is None
    finally:
        writer.kill()
        writer.wait()
