"""Torn and corrupt data: real damaged segment files are read around, reported, and never changed.

Runs are written by real child processes (so their writers are gone, as after a
crash), then their files are damaged on disk: a garbage line in the middle, a
valid-JSON line without a checksum, one byte changed inside still-valid JSON
lines, a truncated last line, an empty segment, a run whose start event is gone.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import child_env, read_run, spawn, tree_hashes, verify

COUNT = 20  # records per writer; line 1 is the start event, so record k is on line k + 2


def write_run(tmp_path: Path, store: Path, run_id: str, child: int, count: int = COUNT) -> Path:
    """Log ``count`` records in a child process; returns its segment."""
    out = tmp_path / f"w-{run_id}-{child}.txt"
    p = spawn("write", tmp_path, out, child_env(tmp_path), "--store", str(store), "--run-id", run_id,
              "--child", str(child), "--count", str(count))
    assert p.wait(60) == 0, out.with_suffix(".err").read_text()
    writer = out.read_text().split()[1]
    return store / "runs" / run_id / f"{writer}.jsonl"


def change_one_byte(line: bytes, marker: bytes) -> bytes:
    """Change the digit right after ``marker`` to another digit: still valid JSON, one byte different."""
    i = line.index(marker) + len(marker)
    assert line[i:i + 1].isdigit()
    new = line[:i] + (b"7" if line[i:i + 1] != b"7" else b"3") + line[i + 1:]
    json.loads(new)
    assert len(new) == len(line) and sum(a != b for a, b in zip(new, line, strict=True)) == 1
    return new


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp_path = tmp_path_factory.mktemp("damaged")
    store = tmp_path / "store"
    seg_a = write_run(tmp_path, store, "damaged", 0)
    seg_b = write_run(tmp_path, store, "damaged", 1)
    seg_h = write_run(tmp_path, store, "headless", 2)

    a = seg_a.read_bytes().split(b"\n")[:-1]
    a[4] = b"\x00\xff garbage, not a line of the store"          # line 5: record k=3
    a[7] = change_one_byte(a[7], b'"x":')                        # line 8: record k=6, a value
    torn_a = len(a)
    a[-1] = a[-1][: len(a[-1]) // 2]                             # the finish event, cut in half
    seg_a.write_bytes(b"\n".join(a))

    b = seg_b.read_bytes().split(b"\n")[:-1]
    b[3] = change_one_byte(b[3], b'"step":')                     # line 4: record k=2, its step
    crc_at = b[9].rindex(b'"crc":"') + len(b'"crc":"')
    b[9] = b[9][:crc_at] + (b"0" if b[9][crc_at:crc_at + 1] != b"0" else b"1") + b[9][crc_at + 1:]  # line 10: k=8
    b.insert(12, b'{"v":1,"kind":"record","schema":"metrics","step":99,"data":{"k":99}}')  # line 13, no checksum
    seg_b.write_bytes(b"\n".join(b) + b"\n")

    # An empty segment, named as a writer of this host whose process is gone (that of segment A).
    empty = seg_a.with_name(seg_a.stem.rsplit("-", 1)[0] + "-ffffff.jsonl")
    empty.write_bytes(b"")

    h = seg_h.read_bytes().split(b"\n")[:-1]
    h = h[1:-1]                                                  # no start event, no finish event
    torn_h = len(h)
    h[-1] = h[-1][:-25]                                          # last record (k=19) torn
    seg_h.write_bytes(b"\n".join(h))

    expected_problems = {
        (str(seg_a), 5, "corrupt"), (str(seg_a), 8, "checksum"), (str(seg_a), torn_a, "torn"),
        (str(seg_b), 4, "checksum"), (str(seg_b), 10, "checksum"), (str(seg_b), 13, "corrupt"),
    }
    return {"store": store, "hashes": tree_hashes(tmp_path), "root": tmp_path, "empty": str(empty),
            "expected": expected_problems, "headless_torn": (str(seg_h), torn_h, "torn")}


def problems(view: tracker.RunView) -> set[tuple[str, int, str]]:
    return {(p.path, p.line, p.kind) for p in view.problems}


def test_damaged_run_reads_every_good_record_and_names_every_bad_line(damaged: dict, host: tracker.Host) -> None:
    store = damaged["store"]
    view, records = read_run(store, "damaged")
    got = sorted((r.data["c"], r.data["k"]) for r in records)
    want = sorted([(0, k) for k in range(COUNT) if k not in (3, 6)] + [(1, k) for k in range(COUNT) if k not in (2, 8)])
    assert got == want
    assert all(r.data["x"] == r.data["k"] * 0.25 and r.step == r.data["k"] for r in records)
    assert problems(view) == damaged["expected"]
    for p in view.problems:
        assert p.message and f"{p.path}:{p.line}: {p.kind}: " in str(p)
    assert view.info.status == "finished"  # the torn finish of writer 0 was superseded by writer 1
    # The columnar reader finds the same good records and the same bad lines.
    cols_view = tracker.RunView(store, "damaged")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cols = cols_view.metrics()
    assert sorted(zip(cols["c"].tolist(), cols["k"].tolist(), strict=True)) == [(float(c), float(k)) for c, k in want]
    assert problems(cols_view) == damaged["expected"]


def test_problems_reach_the_user_as_warnings(damaged: dict) -> None:
    view = tracker.RunView(damaged["store"], "damaged")
    with pytest.warns(tracker.TrackerWarning) as caught:
        list(view.records())
    text = "\n".join(str(w.message) for w in caught)
    for path, line, kind in damaged["expected"]:
        assert f"{path}:{line}: {kind}" in text


def test_run_without_start_event_and_with_torn_last_record_reads(damaged: dict) -> None:
    view, records = read_run(damaged["store"], "headless")
    assert [r.data["k"] for r in records] == list(range(COUNT - 1))  # k=19 was torn: the only loss
    assert problems(view) == {damaged["headless_torn"]}
    info = view.info
    assert info.status == "crashed" and info.name is None and info.created_at is not None


def test_listing_and_summaries_work_on_damaged_runs(damaged: dict, host: tracker.Host) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = tracker.open_store(damaged["store"])
        infos = {i.id: i for i in store.runs()}
        assert set(infos) == {"damaged", "headless"}
        summaries = store.run("damaged").summarize()
    counts = {row["metric"]: row["count"] for s in summaries if s.summarizer == "metrics.scalars" for row in s.rows}
    assert counts["k"] == 2 * COUNT - 4


def test_verify_exits_1_and_lists_every_bad_line_without_changing_a_file(damaged: dict) -> None:
    root, store = damaged["root"], damaged["store"]
    code, report = verify(store, work=root)
    assert code == 1 and not report["ok"]
    found = {(p["path"], p["line"], p["kind"]) for p in report["problems"]}
    assert damaged["expected"] <= found
    assert damaged["headless_torn"] in found
    runs = store / "runs"
    assert (damaged["empty"], None, "empty") in found
    assert (str(runs / "headless"), None, "no_start") in found  # the run folder: no start event anywhere
    # Whatever else verify says (gaps where lines were lost) is about a damaged file.
    damaged_files = {p for p, _, _ in damaged["expected"]} | {damaged["headless_torn"][0], damaged["empty"]}
    assert {p for p, _, _ in found} <= damaged_files | {str(runs / "headless")}
    assert tree_hashes(root) == damaged["hashes"]


def test_reading_never_changes_a_file_and_resuming_only_adds_one(damaged: dict, tmp_path: Path) -> None:
    root = damaged["root"]
    # (The earlier tests of this module read these files; none may have changed.)
    assert tree_hashes(root) == damaged["hashes"]
    write_run(tmp_path, damaged["store"], "damaged", 3, count=2)
    after = tree_hashes(root)
    added = set(after) - set(damaged["hashes"])
    assert all(after[k] == v for k, v in damaged["hashes"].items())
    assert len(added) == 1 and next(iter(added)).startswith("store/runs/damaged/")
