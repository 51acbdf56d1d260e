"""The catalog's two kinds of entries: settled ones checked by file times, fresh ones checked by content too.

File systems stamp modification times from a coarse clock, so a file written
again within a tick keeps its time. An entry derived long after its files last
changed (settled) is checked by inode, size and time alone; one derived within
:data:`~tracker.read.index.catalog.SETTLE_NS` of a change is also checked by the
folder's file names and each segment's last covered line.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

import tracker
from tests.cli.support import run_tracker
from tests.index.conftest import start_live
from tests.index.support import assert_same_answers
from tracker.read.index import catalog, segments
from tracker.read.reader import Store


def age(store: Path, seconds: float = 3600) -> None:
    """Every file and folder under ``runs/`` last changed ``seconds`` ago (folders last: touching a file
    inside a folder does not change the folder's time, but creating one does)."""
    when = time.time() - seconds
    paths = sorted((store / "runs").rglob("*"), key=lambda p: (p.is_dir(), -len(p.parts)))
    for p in paths:
        os.utime(p, (when, when))


def make(store: Path, run_id: str, n: int = 100) -> Path:
    with tracker.start_run(store=store, run_id=run_id, system_metrics=False) as run:
        for i in range(n):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
    (seg,) = (store / "runs" / run_id).glob("*.jsonl")
    return seg


def flags(store: Path) -> dict[str, int]:
    table = catalog.load(store)
    assert table is not None
    return {rid: table.rc[5][i] for rid, i in table.at.items()}


def count_derivations(monkeypatch) -> list[str]:  # noqa: ANN001 - pytest fixture
    derived: list[str] = []
    real = Store._derive_entry

    def spy(self: Store, run_id: str):  # noqa: ANN202
        derived.append(run_id)
        return real(self, run_id)

    monkeypatch.setattr(Store, "_derive_entry", spy)
    return derived


def test_a_settled_catalog_gives_the_same_answers_without_deriving_again(rich_store: Path, monkeypatch):
    age(rich_store)
    first = assert_same_answers(rich_store)
    settled = flags(rich_store)
    # Finished runs whose files are an hour old are settled at once.
    assert all(settled[rid] & catalog._SETTLED for rid in ("values", "fails", "resumed", "crashed"))
    derived = count_derivations(monkeypatch)
    again = assert_same_answers(rich_store)
    assert again == first
    assert derived == []


def test_changes_to_a_settled_run_are_seen(tmp_path: Path):
    store = tmp_path / "s"
    seg = make(store, "r")
    finished = make(store, "other")
    age(store)
    assert_same_answers(store)
    assert flags(store)["r"] & catalog._SETTLED

    # Appended by another tool: the size and the time move.
    lines = seg.read_bytes().splitlines(keepends=True)
    with open(seg, "ab") as f:
        f.write(lines[5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a repeated sequence number
        assert {e.info.id: e.schemas for e in tracker.open_store(store).catalog()}["r"]["metrics"] == 101
        assert_same_answers(store)

    # A finished segment rewritten in place to the same size: the time moves.
    age(store)
    assert_same_answers(store)
    data = bytearray(finished.read_bytes())
    i = data.index(b'"loss":') + len(b'"loss":')
    data[i] = ord("2") if data[i] != ord("2") else ord("3")
    with open(finished, "r+b") as f:
        f.write(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the changed line fails its checksum
        assert_same_answers(store)

    # A second segment (another writer resuming it): the folder's time moves.
    age(store)
    assert_same_answers(store)
    with tracker.start_run(store=store, run_id="other", resume=True, system_metrics=False) as run:
        run.log({"loss": -1.0})
    got = {i.id: i for i in tracker.open_store(store).runs()}["other"]
    assert got.writers == 2 and got.records == 101
    assert_same_answers(store)

    # An edit (its own folder and file).
    age(store)
    assert_same_answers(store)
    tracker.open_store(store).rename("other", "renamed")
    assert {i.id: i.name for i in tracker.open_store(store).runs()}["other"] == "renamed"
    age(store)
    assert_same_answers(store)
    tracker.open_store(store).tag("other", add=["x"])
    assert {i.id: i.tags for i in tracker.open_store(store).runs()}["other"] == ["x"]
    assert_same_answers(store)


def test_a_fresh_entry_is_checked_by_content_even_where_file_times_did_not_move(tmp_path: Path):
    store = tmp_path / "s"
    seg = make(store, "r")
    tracker.open_store(store).runs()
    assert not flags(store)["r"] & catalog._SETTLED  # derived within a tick of the last write
    run_dir = seg.parent
    # The last line rewritten to the same size, the file's time put back: as a change within one clock tick.
    st = seg.stat()
    data = bytearray(seg.read_bytes())
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    i = data.index(b'"time":', last) + 8
    data[i] = ord("1") if data[i] != ord("1") else ord("2")
    seg.write_bytes(bytes(data))
    os.utime(seg, ns=(st.st_atime_ns, st.st_mtime_ns))
    expected = tracker.open_store(store).run("r").info.ended_at  # read from the segment's ends
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        listed = {i.id: i for i in tracker.open_store(store).runs()}["r"]
        assert listed.ended_at == expected
        assert_same_answers(store)
    # A segment added, the folder's time put back.
    tracker.open_store(store).runs()
    dst = run_dir.stat()
    other = make(tmp_path / "o", "r", n=10)
    (run_dir / other.name).write_bytes(other.read_bytes())
    os.utime(run_dir, ns=(dst.st_atime_ns, dst.st_mtime_ns))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert {i.id: i.writers for i in tracker.open_store(store).runs()}["r"] == 2
        assert_same_answers(store)


def test_a_fresh_entry_settles_once_its_files_are_old_enough(tmp_path: Path, monkeypatch):
    store = tmp_path / "s"
    make(store, "r")
    tracker.open_store(store).runs()
    assert not flags(store)["r"] & catalog._SETTLED
    derived = count_derivations(monkeypatch)
    # Time passes (here: the window shrinks); the next listing finds the files unchanged and settles the entry.
    monkeypatch.setattr(catalog, "SETTLE_NS", 0)
    tracker.open_store(store).runs()
    assert flags(store)["r"] & catalog._SETTLED
    assert derived == []
    assert_same_answers(store)


def test_runs_as_json_keeps_nan_and_infinities_of_catalog_entries(rich_store: Path):
    age(rich_store)
    for _ in range(2):  # deriving the catalog, then reading it
        doc = json.loads(run_tracker("--store", str(rich_store), "runs", "--format", "json").stdout)
        values = {r["id"]: r for r in doc}["values"]
        assert values["config"]["lr"] == "NaN" and values["summary"]["best"] == "Infinity"
    table = catalog.load(rich_store)
    assert table is not None
    assert not table.rc[5][table.at["values"]] & catalog._FINITE
    assert table.rc[5][table.at["resumed"]] & catalog._FINITE


def test_a_heartbeat_on_a_running_segment_keeps_its_columns(tmp_path: Path, monkeypatch):
    store = tmp_path / "s"
    proc = start_live(store, "live", 50)
    try:
        assert len(tracker.open_store(store).run("live").metrics()["step"]) == 50
        (seg,) = (store / "runs" / "live").glob("*.jsonl")
        os.utime(seg)  # what a running writer's heartbeat does to its segment
        parsed_from_start = []
        real = segments._extend

        def spy(old, segment, st, limit):  # noqa: ANN001, ANN202
            parsed_from_start.append(old is None)
            return real(old, segment, st, limit)

        monkeypatch.setattr(segments, "_extend", spy)
        assert len(tracker.open_store(store).run("live").metrics()["step"]) == 50
        assert not any(parsed_from_start)
        assert_same_answers(store)
    finally:
        proc.kill()
        proc.wait()


def test_a_finished_segment_rewritten_in_place_is_parsed_again(tmp_path: Path):
    store = tmp_path / "s"
    seg = make(store, "r")
    age(store)
    tracker.open_store(store).run("r").metrics()
    data = bytearray(seg.read_bytes())
    i = data.index(b'"loss":') + len(b'"loss":')
    data[i] = ord("2") if data[i] != ord("2") else ord("3")
    with open(seg, "r+b") as f:  # the same inode and size, a new time; the last line as it was
        f.write(data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        view = tracker.open_store(store).run("r")
        view.metrics()
    assert any(p.kind == "checksum" and p.line == 2 for p in view.problems)
    assert any("checksum" in str(w.message) for w in caught)
