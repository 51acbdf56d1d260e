"""Golden store files of format version 1: today's reader reads them, today's writer writes them.

A change of the format adds a new folder under tests/data/; it never edits an old one.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import tracker
from tracker.core.format import encode_line, parse_line
from tracker.read.verify import verify_store

GOLDEN = Path(__file__).parent / "data" / "v1"


def test_golden_v1_reads_exactly(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(GOLDEN, store)
    view = tracker.open_store(store).run("golden0001")
    info = view.info
    assert (info.name, info.project, info.status, info.records, info.last_step) == (
        "golden run", "format", "finished", 3, 1)
    assert info.config == {"lr": 0.1, "nested": {"n": 3}} and info.tags == ["v1"]
    assert info.last_metrics["up"] == math.inf and info.last_metrics["count"] == 2**53
    recs = list(view.records())
    assert [(r.step, r.seq) for r in recs] == [(0, 2), (1, 3), (1, 4)]
    assert recs[0].data == {"loss": 0.5, "acc": 0.25, "flag": True, "count": 2**53}
    special = recs[1].data
    assert math.isnan(special["loss"]) and special["up"] == math.inf and special["down"] == -math.inf
    assert math.copysign(1.0, special["zero"]) == -1.0
    m = view.metrics()
    assert m["step"].tolist() == [0, 1, 1] and m["loss"][2] == 0.125 and math.isnan(m["loss"][1])
    assert view.problems == []
    report = verify_store(store)
    assert report.ok and report.records == 3 and report.segments == 1


def test_golden_v1_lines_are_what_the_writer_writes() -> None:
    for seg in GOLDEN.rglob("*.jsonl"):
        for line in seg.read_bytes().splitlines(keepends=True):
            event = parse_line(line[:-1])
            # decode the special strings the way the store encodes them, then encode again
            event.pop("crc")
            data = json.loads(json.dumps(event["data"]), parse_constant=float)
            event["data"] = _restore(data)
            assert encode_line(event) == line
            json.loads(line, parse_constant=lambda t: (_ for _ in ()).throw(ValueError(t)))


def _restore(obj: object) -> object:
    specials = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
    if isinstance(obj, dict):
        return {k: _restore(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_restore(v) for v in obj]
    return specials.get(obj, obj) if isinstance(obj, str) else obj
