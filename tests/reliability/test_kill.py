"""kill -9: real child processes SIGKILLed at seeded random moments lose nothing acknowledged.

A child logs in a tight loop and prints each record's counter after ``log`` has
returned; the parent SIGKILLs it and then reads the run back. Every printed
(acknowledged) record must be there, exactly once, and at most one more (the
record logged but not yet printed when the kill came); the run reads
``crashed`` at once; readers find at most a torn last line per segment.
"""

from __future__ import annotations

import os
import random
import signal
import time
import warnings
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import (
    ack_lines,
    assert_at_most_torn_tails,
    assert_verify_finds_at_most_torn_tails,
    child_env,
    local_host,
    read_run,
    spawn,
    strict_json_lines,
)

SEED = 90125
FRESH_KILLS = 40        # fresh runs, one kill each
CHAIN_KILLS = 15        # one run resumed after each kill
FSYNC_KILLS = 10        # durability = "fsync"
CREATE_KILLS = 12       # while start_run creates or joins a run, three processes at a time
SEEN = {"torn": 0}      # torn last lines met: a kill can land inside a write that spans two pages


class Child:
    """One loop child and when to kill it: seconds after it printed ``word`` (or after it was spawned)."""

    def __init__(self, work: Path, store: Path, run_id: str, child: int, delay: float, from_spawn: bool,
                 env: dict[str, str], fsync_probe: bool = False, word: str = "ready") -> None:
        self.out = work / f"out-{child}.txt"
        args = ["--store", str(store), "--run-id", run_id, "--child", str(child)]
        if fsync_probe:
            args.append("--fsync-probe")
        self.run_id, self.delay, self.from_spawn, self.word = run_id, delay, from_spawn, word.encode()
        self.spawned = time.monotonic()
        self.proc = spawn("loop", work, self.out, env, *args)
        self.ready_at: float | None = None

    def due(self) -> bool:
        now = time.monotonic()
        if self.from_spawn:
            return now - self.spawned >= self.delay
        lines = self.out.read_bytes().split(b"\n")[:-1]
        if self.ready_at is None and any(line.startswith(self.word) for line in lines):
            self.ready_at = now
        return self.ready_at is not None and now - self.ready_at >= self.delay

    def kill(self) -> None:
        assert self.proc.poll() is None, self.out.with_suffix(".err").read_text(errors="replace")
        os.kill(self.proc.pid, signal.SIGKILL)
        assert self.proc.wait(30) == -signal.SIGKILL

    def acks(self) -> list[list[str]]:
        lines = ack_lines(self.out)
        assert [line[0] for line in lines[:2]] == ["pre", "ready"][:len(lines)]
        return lines[2:]


def start_run_seconds(work: Path, env: dict[str, str]) -> float:
    """Seconds between a child's ``pre`` (imports done) and its ``ready`` (start_run returned), in its own store."""
    work.mkdir()
    c = Child(work, work / "store", "calibrate", 0, 0.0, False, env)
    seen: dict[bytes, float] = {}
    deadline = time.monotonic() + 90.0
    while len(seen) < 2:
        for line in c.out.read_bytes().split(b"\n")[:-1]:
            word = line.split(b" ")[0].split(b"\t")[0]
            if word in (b"pre", b"ready"):
                seen.setdefault(word, time.monotonic())
        assert c.proc.poll() is None and time.monotonic() < deadline, "the calibrating child never became ready"
        time.sleep(0.0005)
    c.kill()
    return max(0.005, seen[b"ready"] - seen[b"pre"])


def kill_all(children: list[Child], timeout: float = 90.0) -> None:
    pending = list(children)
    deadline = time.monotonic() + timeout
    while pending:
        for c in list(pending):
            if c.due():
                c.kill()
                pending.remove(c)
            elif c.proc.poll() is not None:
                raise AssertionError(f"child died on its own:\n{c.out.with_suffix('.err').read_text()}")
        assert time.monotonic() < deadline, "children never became ready"
        time.sleep(0.0005)


def check_killed_run(store: Path, run_id: str, acked: list[int], child: int) -> list[tracker.Record]:
    """The guarantees after a kill; returns the run's records."""
    view, records = read_run(store, run_id)
    assert view.info.status == "crashed"  # the writer's pid is gone: no waiting for a timeout
    assert_at_most_torn_tails(view)
    mine = [r for r in records if r.data["c"] == child]
    ks = [r.data["k"] for r in mine]
    assert len(set(ks)) == len(ks), "a record was stored twice"
    assert ks == list(range(len(ks))), "records are missing or out of order"
    assert len(acked) <= len(ks) <= len(acked) + 1, (len(acked), len(ks))
    assert acked == ks[:len(acked)]
    assert all(r.data["x"] == r.data["k"] / 7 for r in mine)
    assert len({(r.writer, r.seq) for r in records}) == len(records)
    # The columnar reader sees the same records, and the same torn tail if any.
    cols_view = tracker.RunView(store, run_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tracker.TrackerWarning)
        cols = cols_view.metrics()
    assert {(p.path, p.line) for p in cols_view.problems} == {(p.path, p.line) for p in view.problems}
    if records:
        assert cols["k"][cols["c"] == child].tolist() == [float(k) for k in ks]
    else:
        assert cols["step"].size == 0
    strict_json_lines(view.segment_paths())
    SEEN["torn"] += len(view.problems)
    return records


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_record(tmp_path: Path, record_property) -> None:
    rng = random.Random(SEED)
    store = tmp_path / "store"
    env = child_env(tmp_path)
    kills = acked_total = stored_total = 0
    for batch in range(FRESH_KILLS // 4):
        children = []
        for j in range(4):
            child = batch * 4 + j
            # One in four is killed at any moment from its spawn: during import, start_run or logging.
            from_spawn = j == 3
            delay = rng.uniform(0.0, 1.5) if from_spawn else rng.uniform(0.0, 0.3)
            children.append(Child(tmp_path, store, f"fresh-{child}", child, delay, from_spawn, env))
        kill_all(children)
        for c in children:
            kills += 1
            acked = [int(a[0]) for a in c.acks()]
            acked_total += len(acked)
            if not (store / "runs" / c.run_id).exists():
                assert not acked  # killed before the run folder was made: nothing was acknowledged
                continue
            stored_total += len(check_killed_run(store, c.run_id, acked, int(c.out.stem.split("-")[1])))
    assert kills == FRESH_KILLS
    assert acked_total > 1000 and stored_total >= acked_total
    report = assert_verify_finds_at_most_torn_tails(store, work=tmp_path)
    assert report["records"] == stored_total
    record_property("kills", kills)
    record_property("acknowledged", acked_total)
    record_property("torn_tails_so_far", SEEN["torn"])


@pytest.mark.slow
def test_sigkill_then_resume_again_and_again_keeps_everything(tmp_store: Path, tmp_path: Path, host: tracker.Host,
                                                              record_property) -> None:
    rng = random.Random(SEED + 1)
    store, run_id = tmp_store, "chain"
    env = child_env(tmp_path)
    acked_by_child: dict[int, list[int]] = {}
    for child in range(CHAIN_KILLS):
        c = Child(tmp_path, store, run_id, child, rng.uniform(0.0, 0.03), False, env)
        kill_all([c])
        acked_by_child[child] = [int(a[0]) for a in c.acks()]
        records = check_killed_run(store, run_id, acked_by_child[child], child)
        # Each resumed writer continues after the largest step written before it.
        steps = [[r.step for r in records if r.data["c"] == i] for i in range(child + 1)]
        for earlier, later in zip(steps[:-1], steps[1:], strict=True):
            if earlier and later:
                assert min(later) > max(earlier)
    # A last, clean resume: continues after every crashed writer, keeps their records, ends finished.
    view, before = read_run(store, run_id)
    last = max(r.step for r in before)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tracker.start_run(run_id=run_id, resume=True) as run:
            run.log({"c": -1, "k": 0, "x": 0.0})
    # Resuming reads the crashed segments; the only thing it may warn about is a torn last line.
    assert all(": torn: " in str(w.message) for w in caught), [str(w.message) for w in caught]
    view, after = read_run(store, run_id)
    assert view.info.status == "finished"
    assert after[:-1] == before and after[-1].step == last + 1
    for child, acked in acked_by_child.items():
        ks = [r.data["k"] for r in after if r.data["c"] == child]
        assert ks[:len(acked)] == acked
    assert view.info.writers == CHAIN_KILLS + 1
    report = assert_verify_finds_at_most_torn_tails(store, run_id, work=tmp_path)
    assert (report["segments"], report["records"]) == (CHAIN_KILLS + 1, len(after))
    record_property("kills", CHAIN_KILLS)
    record_property("acknowledged", sum(map(len, acked_by_child.values())))


@pytest.mark.slow
def test_sigkill_while_runs_are_created_or_joined_leaves_no_half_made_run(tmp_path: Path, record_property) -> None:
    rng = random.Random(SEED + 3)
    store = tmp_path / "store"
    env = child_env(tmp_path)
    # How long start_run takes here, so that the kills spread over it on a fast machine and on a slow one alike.
    creating = start_run_seconds(tmp_path / "calibrate", env)
    runs = store / "runs"

    def made_runs() -> list[str]:
        return [p.name for p in runs.iterdir() if not p.name.startswith(".")] if runs.exists() else []

    children: list[Child] = []
    batch = 0
    # At least CREATE_KILLS kills; more batches (up to four times as many) while no kill came late enough for a
    # run folder to exist, so that the checks below always have a made run to check.
    while batch < CREATE_KILLS // 3 or (not made_runs() and batch < 4 * (CREATE_KILLS // 3)):
        # Three processes start (or join) the same run at once, each killed while start_run creates or joins it.
        run_id = f"join-{batch % 2}"
        group = [Child(tmp_path, store, run_id, batch * 3 + j, rng.uniform(0.0, 1.5 * creating), False, env,
                       word="pre")
                 for j in range(3)]
        kill_all(group)
        children += group
        batch += 1
    made = made_runs()
    assert made, f"no run folder after {len(children)} kills spread over {1.5 * creating:.3f} s of start_run"
    assert set(made) <= {"join-0", "join-1"}
    for c in children:
        if c.run_id in made:
            check_killed_run(store, c.run_id, [int(a[0]) for a in c.acks()], int(c.out.stem.split("-")[1]))
        else:
            assert not c.acks()
    for run_id in made:
        # A run folder only ever appears with its start event: its project (and name, config) are kept.
        assert tracker.RunView(store, run_id).info.project == "kill"
    report = assert_verify_finds_at_most_torn_tails(store, work=tmp_path)
    assert report["runs"] == len(made)
    record_property("kills", len(children))
    record_property("acknowledged", sum(len(c.acks()) for c in children))


@pytest.mark.slow
def test_sigkill_with_fsync_durability_every_acknowledged_line_was_fsynced(tmp_path: Path, record_property) -> None:
    rng = random.Random(SEED + 2)
    store = tmp_path / "store"
    env = child_env(tmp_path, toml='[store]\ndurability = "fsync"\n')
    children = [Child(tmp_path, store, f"sync-{i}", i, rng.uniform(0.0, 0.2), False, env, fsync_probe=True)
                for i in range(FSYNC_KILLS)]
    for batch in (children[:5], children[5:]):
        kill_all(batch)
    checked = 0
    for i, c in enumerate(children):
        acks = c.acks()
        acked = [int(a[0]) for a in acks]
        check_killed_run(store, c.run_id, acked, i)
        (seg,) = (store / "runs" / c.run_id).glob("*.jsonl")
        ends = []  # byte offset where each record line ends
        pos = 0
        for line in seg.read_bytes().split(b"\n")[:-1]:
            pos += len(line) + 1
            if b'"kind":"record"' in line:
                ends.append(pos)
        for k, fsyncs, synced in ((int(a), int(b), int(s)) for a, b, s in acks):
            # By the time log returned, the line of record k was on disk: the file was fsynced at a
            # size that includes it, with at least one fsync per line so far (header + k + 1 records).
            assert int(synced) >= ends[k] and fsyncs >= k + 2
            checked += 1
    assert checked > 100
    assert_verify_finds_at_most_torn_tails(store, work=tmp_path)
    record_property("kills", len(children))
    record_property("acknowledged", checked)


def test_fsync_durability_also_syncs_the_folders_that_name_a_new_segment(tmp_path: Path, host: tracker.Host,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # After a power loss a file fsynced is only found again if the folder entries naming it were fsynced
    # too: the new run folder (in runs/), the new segment (in the run folder).
    synced: list[tuple[int, int]] = []  # (inode, size) at each fsync
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        real_fsync(fd)
        st = os.fstat(fd)
        synced.append((st.st_ino, st.st_size))

    monkeypatch.setattr(os, "fsync", counting_fsync)
    tracker.set_host(local_host(durability="fsync"))
    store = tmp_path / "store"
    run = tracker.start_run(store=store, run_id="durable")
    (seg,) = run.path.glob("*.jsonl")
    inodes = {p: p.stat().st_ino for p in (store, store / "runs", run.path)}
    for name, ino in inodes.items():
        assert any(i == ino for i, _ in synced), f"{name} was never fsynced"
    for k in range(20):
        run.log({"k": k})
        # When log returns, the segment was fsynced at its current size: the record is on the disk.
        assert synced[-1] == (seg.stat().st_ino, seg.stat().st_size)
    run.finish()
    assert synced[-1] == (seg.stat().st_ino, seg.stat().st_size)
