"""The JSONL store: line format, checksums, torn and corrupt lines, durability."""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import pytest

import tracker
from tracker.core.format import LineError, encode_line, parse_line


def _segment(run: tracker.Run) -> Path:
    (seg,) = run.path.glob("*.jsonl")
    return seg


def test_every_line_carries_version_kind_writer_seq_and_checksum(tmp_store: Path) -> None:
    with tracker.start_run(name="fmt") as run:
        run.log({"loss": 0.5}, step=3)
    seg = _segment(run)
    lines = seg.read_bytes().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["kind"] for e in events] == ["run_started", "record", "run_finished"]
    assert [e["seq"] for e in events] == [1, 2, 3]
    for line, e in zip(lines, events, strict=True):
        assert e["v"] == 1 and e["w"] == run.writer_id and list(e)[-1] == "crc"
        assert int(e["crc"], 16) == zlib.crc32(line[: line.rindex(b',"crc":')])
    rec = events[1]
    assert (rec["schema"], rec["step"], rec["data"]) == ("metrics", 3, {"loss": 0.5})
    assert seg.name == f"{run.writer_id}.jsonl" and str(os.getpid()) in run.writer_id


def test_changed_byte_is_detected_by_checksum() -> None:
    line = encode_line({"v": 1, "kind": "record", "schema": "metrics", "step": 1, "time": 0.0, "w": "w",
                        "seq": 1, "data": {"loss": 0.5}})[:-1]
    assert parse_line(line)["data"] == {"loss": 0.5}
    changed = line.replace(b"0.5", b"0.6")
    json.loads(changed)  # still valid JSON ...
    with pytest.raises(LineError, match="checksum"):
        parse_line(changed)  # ... but detected


def test_torn_last_line_and_corrupt_middle_line_are_reported_rest_is_read(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        for i in range(5):
            run.log({"i": float(i)})
    seg = _segment(run)
    lines = seg.read_bytes().splitlines(keepends=True)
    # line 3 (the record i=1) becomes garbage, and a torn half line is appended
    lines[2] = b"{garbage\n"
    seg.write_bytes(b"".join(lines) + lines[3][:20])
    before = seg.read_bytes()
    view = tracker.open_store().run(run.id)
    with pytest.warns(tracker.TrackerWarning) as caught:
        values = view.metrics()["i"].tolist()
    assert values == [0.0, 2.0, 3.0, 4.0]
    kinds = {(p.kind, p.line) for p in view.problems}
    assert ("corrupt", 3) in kinds and ("torn", len(lines) + 1) in kinds
    assert any(f"{seg}:3" in str(w.message) for w in caught)
    records = [r.data["i"] for r in tracker.open_store().run(run.id).records()]
    assert records == [0.0, 2.0, 3.0, 4.0]
    assert seg.read_bytes() == before  # nothing rewritten


def test_fsync_durability_calls_fsync_per_record(tmp_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 make_tracker_host) -> None:  # noqa: ANN001
    toml = tmp_path / "tracker.toml"
    toml.write_text('[store]\ndurability = "fsync"\n')
    make_tracker_host(config=tracker.load_config(toml))
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    with tracker.start_run() as run:
        n0 = len(calls)
        for i in range(10):
            run.log({"i": float(i)})
        assert len(calls) - n0 == 10
    monkeypatch.undo()


def test_default_durability_does_not_fsync(tmp_store: Path, monkeypatch: pytest.MonkeyPatch,
                                           make_tracker_host) -> None:  # noqa: ANN001
    make_tracker_host()
    calls = []
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd))
    with tracker.start_run() as run:
        run.log({"i": 1.0})
    assert calls == []


def test_store_lists_runs_newest_first_and_resolves_prefixes(tmp_store: Path) -> None:
    ids = []
    for name in ("a", "b", "c"):
        with tracker.start_run(name=name, project="p" if name != "b" else "q", run_id=f"run{name}x") as run:
            run.log({"x": 1.0})
        ids.append(run.id)
    store = tracker.open_store()
    assert [i.name for i in store.runs()] == ["c", "b", "a"]
    assert [i.name for i in store.runs(project="p")] == ["c", "a"]
    assert store.run("runb").id == "runbx"
    assert store.run("b").id == "runbx"  # by name when no id matches
    with pytest.raises(tracker.RunNotFound) as err:
        store.run("run")
    assert err.value.candidates == ["runax", "runbx", "runcx"] and "ambiguous" in str(err.value)
    with pytest.raises(tracker.RunNotFound, match="no run matches"):
        store.run("zzz")


def test_reading_an_unreadable_store_is_a_store_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(tracker.StoreError, match="not a store folder"):
        tracker.open_store(f)
