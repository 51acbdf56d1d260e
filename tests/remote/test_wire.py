"""The JSON of the reading endpoints gives back exactly what was sent: NaN and infinities where they stood,
strings that merely read "NaN" as strings, None as None."""

from __future__ import annotations

import math

import orjson

from tracker.core.records import Record, RunInfo
from tracker.remote.wire import decode_info, encode_info, parse_record, record_line

from .readsupport import same


def test_records_round_trip_exactly() -> None:
    cases = [
        {"loss": 0.5, "acc": 1},
        {"loss": math.nan, "note": None, "text": "NaN", "inf": math.inf},
        {"nested": {"xs": [1.0, -math.inf, None, "Infinity"], "ok": True}, "empty": {}},
        {"n": 2**53, "s": "null"},
    ]
    for i, data in enumerate(cases):
        rec = Record(i, 1700000000.25 + i, "metrics", data, "host-1-abc", i + 1)
        line = record_line(rec)
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        back = parse_record(orjson.loads(line))
        assert same(back, rec), (rec, back)
        assert [type(v) for v in back.data.values()] == [type(v) for v in data.values()]


def test_an_info_round_trips_exactly() -> None:
    info = RunInfo(id="abc", name="n", project="p", status="finished", created_at=1.5, ended_at=2.5,
                   config={"lr": math.nan, "name": "NaN", "deep": {"x": [math.inf]}}, tags=["a"],
                   last_metrics={"loss": -math.inf}, summary={"best": None}, group="g", job_type="train")
    values, nf = encode_info(info)
    text = orjson.dumps({"info": values, "nonfinite": nf})  # strict JSON: no NaN in it
    assert b":NaN" not in text and b"\"lr\":\"NaN\"" in text and b"\"name\":\"NaN\"" in text
    doc = orjson.loads(text)
    assert same(decode_info(doc["info"], doc["nonfinite"]), info)
    assert decode_info({"id": "x"}).status == "running"  # fields a server left out take their defaults
