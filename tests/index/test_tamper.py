"""Derived data never gives a wrong answer: segments changed behind its back, damaged index files, live writers."""

from __future__ import annotations

import os
import random
import shutil
import signal
import warnings
from pathlib import Path

import pytest

import tracker
from tests.index.conftest import start_live
from tests.index.support import answers, assert_same_answers


def make(store: Path, run_id: str = "r", n: int = 200) -> Path:
    with tracker.start_run(store=store, run_id=run_id, system_metrics=False) as run:
        for i in range(n):
            run.log({"loss": 1.0 / (i + 1), "acc": i / n}, step=i)
    (seg,) = (store / "runs" / run_id).glob("*.jsonl")
    return seg


def index_files(store: Path) -> list[Path]:
    return sorted(p for p in (store / "index").rglob("*") if p.is_file())


def test_a_segment_replaced_by_other_bytes_is_read_from_its_new_bytes(tmp_path: Path):
    store = tmp_path / "s"
    seg = make(store)
    assert len(tracker.open_store(store).run("r").metrics()["step"]) == 200
    other = make(tmp_path / "other", n=50)
    shutil.copyfile(other, seg.with_suffix(".tmp"))
    os.replace(seg.with_suffix(".tmp"), seg)  # a new inode, other content
    assert len(tracker.open_store(store).run("r").metrics()["step"]) == 50
    assert_same_answers(store)


def test_a_truncated_segment_is_not_read_past_its_end(tmp_path: Path):
    store = tmp_path / "s"
    seg = make(store)
    tracker.open_store(store).runs()
    data = seg.read_bytes()
    cut = data[: data.index(b"\n", len(data) // 2) + 1]
    with open(seg, "r+b") as f:  # the same inode, shorter
        f.truncate(len(cut))
    got = tracker.open_store(store).run("r").metrics()["step"]
    assert 0 < len(got) < 200
    assert_same_answers(store)


def test_a_segment_appended_to_by_another_tool_shows_the_new_records(tmp_path: Path):
    store = tmp_path / "s"
    seg = make(store)
    tracker.open_store(store).runs()
    # Another writer's lines, copied from a second run: appended behind the index's back.
    extra = make(tmp_path / "other", n=30)
    lines = [ln for ln in extra.read_bytes().splitlines(keepends=True) if b'"kind":"record"' in ln]
    with open(seg, "ab") as f:
        f.write(b"".join(lines))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the copied lines carry another writer's sequence numbers
        got = tracker.open_store(store).run("r").metrics()["step"]
    assert len(got) == 230
    assert_same_answers(store)


def test_the_same_size_rewrite_of_the_last_covered_line_is_detected(tmp_path: Path):
    store = tmp_path / "s"
    seg = make(store)
    tracker.open_store(store).run("r").metrics()
    data = bytearray(seg.read_bytes())
    # The finish line is the last one: change one digit of it in place (same size, same inode).
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    i = data.index(b'"time":', last) + 8
    data[i] = ord("1") if data[i] != ord("1") else ord("2")
    with open(seg, "r+b") as f:
        f.write(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_answers(store)


@pytest.mark.parametrize("seed", range(6))
def test_random_bytes_in_index_files_never_change_an_answer(tmp_path: Path, seed: int):
    store = tmp_path / "s"
    make(store, "a")
    make(store, "b", n=20)
    good = answers(store)
    rng = random.Random(seed)
    for path in index_files(store):
        data = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
        path.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert answers(store) == good
    said = [str(w.message) for w in caught if "derived data not used" in str(w.message)]
    # At most one warning per damaged file, naming it.
    assert len(said) == len(set(said))
    assert all("index" in s for s in said)


def test_a_foreign_file_in_place_of_an_index_file_is_ignored(tmp_path: Path):
    store = tmp_path / "s"
    make(store)
    good = answers(store)
    for path in index_files(store):
        path.write_text("not ours\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert answers(store) == good
    # Rebuilt: the next read takes it from the index again, without a word.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert answers(store) == good


def test_each_read_sees_every_acknowledged_record_of_a_live_writer(tmp_path: Path):
    store = tmp_path / "s"
    after = "\n".join([
        "for line in sys.stdin:",
        "    k = int(line)",
        "    for i in range(k):",
        "        run.log({'loss': 0.5, 'i': i})",
        "    print('logged', k, flush=True)",
    ])
    child = start_live(store, "live", 10, after=after)
    try:
        total = 10
        for k in (5, 0, 37, 1, 200):
            child.stdin.write(f"{k}\n")
            child.stdin.flush()
            assert child.stdout.readline().split() == ["logged", str(k)]
            total += k
            view = tracker.open_store(store).run("live")
            assert len(view.metrics()["step"]) == total
            assert len(list(view.records("metrics"))) == total
            assert {e.info.id: e.schemas for e in tracker.open_store(store).catalog()}["live"]["metrics"] == total
            assert view.info.status == "running"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert {i.id: i.status for i in tracker.open_store(store).runs()}["live"] == "crashed"
    assert_same_answers(store)


def test_a_summary_of_one_schema_reads_only_that_schemas_columns(tmp_path: Path):
    store = tmp_path / "s"
    with tracker.start_run(store=store, run_id="r", system_metrics=False) as run:
        for i in range(2000):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
        run.log_record("quant.error", step=5, tensor="w", bits=8, granularity="per_tensor", mode="symmetric",
                       mse=0.1, mae=0.1, max_error=0.2, sqnr_db=1.0, outlier_rate=0.0, num_samples=10,
                       theoretical_max_error=0.3)
    view = tracker.open_store(store).run("r")
    view.summarize()  # builds the index
    from tracker.read.index import container

    read: list[str] = []
    original = container.Reader.read

    def spy(self, key):
        read.append(key.split("\x00")[0])
        return original(self, key)

    container.Reader.read = spy
    try:
        sums = tracker.open_store(store).run("r").summarize("quant.error")
    finally:
        container.Reader.read = original
    assert sums and set(read) == {"quant.error"}
