"""The logging fast paths (issue 6) behave exactly like the full ones.

``run.log`` and ``run.log_record`` skip the Event and the bus when no plugin
handler wants a schema's records, and check flat records without building the
attrs instance. Each test compares what is stored, and the errors raised, with
the path through the bus (forced by subscribing a handler).
"""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path

import attrs
import numpy as np
import pytest

import tracker
from tracker.core.schema import CompiledSchema, Schema, make_converter


def _lines(run: tracker.Run) -> list[dict]:
    return [json.loads(line) for p in sorted(run.path.glob("*.jsonl")) for line in p.read_text().splitlines()]


def _records(run: tracker.Run) -> list[dict]:
    return [e for e in _lines(run) if e["kind"] == "record"]


def _strip(event: dict) -> dict:
    return {k: v for k, v in event.items() if k not in ("time", "w", "seq", "crc")}


METRICS = [
    {"loss": 0.25, "acc": 1, "ok": True},
    {"loss": math.nan, "big": 2**53, "neg": -(2**53), "inf": math.inf, "ninf": -math.inf},
    {"np": np.float32(0.5), "i": np.int64(3), "b": np.bool_(False), "z": np.array(2.0)},
    {"naïve": 1.0, "nullity": 0.0, "zero": -0.0},
    {},
]


def _log_all(bus_path: bool) -> list[dict]:
    seen = []
    with tracker.start_run() as run:
        sub = tracker.get_host().bus.subscribe(seen.append, kinds="record") if bus_path else None
        for i, values in enumerate(METRICS):
            run.log(values, step=i)
        run.log({"auto": 1.5})
        if sub is not None:
            sub.unsubscribe()
    assert len(seen) == (len(METRICS) + 1 if bus_path else 0)
    return [_strip(e) for e in _records(run)]


def test_metrics_lines_are_the_same_through_the_bus_and_straight_to_the_store(tmp_store: Path) -> None:
    fast, slow = _log_all(False), _log_all(True)
    assert fast == slow
    assert fast[1]["data"] == {"loss": "NaN", "big": 2**53, "neg": -(2**53), "inf": "Infinity", "ninf": "-Infinity"}
    assert fast[2]["data"] == {"np": 0.5, "i": 3, "b": False, "z": 2.0}


def test_lines_are_strict_json_with_a_valid_checksum(tmp_store: Path) -> None:
    import zlib

    with tracker.start_run() as run:
        run.log({"x": math.nan, "y": 1.0})
        run.log_record("fft.loss_point", total_loss=math.inf, mel_err=0.1, spec_err=0.2, welch_err=0.3,
                       mean_gate=0.5) if "fft.loss_point" in tracker.get_host().schemas else None
    for path in run.path.glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
            head, _, tail = line.rpartition(b',"crc":"')
            assert tail == b'%08x"}' % zlib.crc32(head)


class Color(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize("values", [
    {"x": "\udcff"}, {"x": None}, {"x": [1.0]}, {"x": Color.RED}, {"x": 2**53 + 1}, {"x": -(2**53) - 1},
    {"step": 1.0}, {"time": 1.0}, {"": 1.0}, {1: 1.0}, {"\ud800": 1.0}, {"x": 1j}, {"x": np.datetime64(1, "s")},
])
def test_bad_metrics_raise_the_full_check_message_and_write_nothing(tmp_store: Path, values: dict) -> None:
    messages = []
    for bus_path in (False, True):
        with tracker.start_run() as run:
            sub = tracker.get_host().bus.subscribe(lambda e: None, kinds="record") if bus_path else None
            run.log({"warm": 1.0})  # without a handler, the fast path is on from here
            with pytest.raises(tracker.SchemaError) as got:
                run.log(values)
            run.log({"after": 1.0})
            if sub is not None:
                sub.unsubscribe()
        messages.append(str(got.value))
        assert [(r["step"], r["data"]) for r in _records(run)] == [(0, {"warm": 1.0}), (1, {"after": 1.0})]
    assert messages[0] == messages[1]


def test_bad_step_is_refused_and_auto_steps_are_not_consumed(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        run.log({"a": 1.0})
        for bad in (1.5, 2**53 + 1, "3", True):
            with pytest.raises(tracker.SchemaError):
                run.log({"a": 1.0}, step=bad)
        run.log({"a": 2.0}, step=np.int64(7))
        run.log({"a": 3.0})
    assert [r["step"] for r in _records(run)] == [0, 7, 8]


def test_a_handler_subscribed_mid_run_sees_every_later_record(tmp_store: Path) -> None:
    bus = tracker.get_host().bus
    seen: list[tracker.Event] = []
    with tracker.start_run() as run:
        run.log({"a": 0.0})
        sub = bus.subscribe(seen.append, schemas="metrics")
        run.log({"a": 1.0})
        run.log({"a": 2.0})
        sub.unsubscribe()
        run.log({"a": 3.0})
    assert [e.data for e in seen] == [{"a": 1.0}, {"a": 2.0}]
    assert [r["data"]["a"] for r in _records(run)] == [0.0, 1.0, 2.0, 3.0]


def test_finish_counts_records_steps_and_last_values_on_the_fast_path(tmp_store: Path) -> None:
    with tracker.start_run() as run:
        run.log({"a": 1.0, "b": 2.0}, step=5)
        run.log({"a": math.nan}, step=3)
        run.log({"c": True})
    fin = [e for e in _lines(run) if e["kind"] == "run_finished"][0]["data"]
    assert (fin["records"], fin["max_step"]) == (3, 6)
    assert fin["last"] == {"a": "NaN", "b": 2.0, "c": True}


def test_threads_keep_sequence_numbers_in_file_order(tmp_store: Path) -> None:
    import threading

    with tracker.start_run() as run:
        def work(k: int) -> None:
            for i in range(300):
                run.log({f"t{k}": float(i)})

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    seqs = [e["seq"] for e in _lines(run)]
    assert seqs == list(range(1, len(seqs) + 1)) and len(_records(run)) == 1200


# --- typed records ----------------------------------------------------------------------------

def _non_negative(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if value < 0:
        raise ValueError(f"expected >= 0, given {value!r}")


@attrs.frozen(kw_only=True)
class Flat:
    name: str = ""
    x: float = attrs.field(validator=_non_negative)
    n: int = 0
    ok: bool = False


def _at_most_x(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if value > instance.x:
        raise ValueError(f"expected <= x, given {value!r}")


@attrs.frozen(kw_only=True)
class Crossed:
    x: float
    y: float = attrs.field(validator=_at_most_x)


def _compiled(cls: type) -> CompiledSchema:
    return CompiledSchema(Schema("t.flat", cls), make_converter())


def test_flat_schemas_take_the_fast_path_and_others_do_not() -> None:
    assert _compiled(Flat)._flat is not None

    @attrs.frozen
    class WithList:
        xs: list[float]

    @attrs.frozen
    class WithPostInit:
        x: float

        def __attrs_post_init__(self) -> None:
            pass

    @attrs.frozen
    class WithConverter:
        x: float = attrs.field(converter=float)

    for cls in (WithList, WithPostInit, WithConverter):
        assert _compiled(cls)._flat is None


@pytest.mark.parametrize("record", [
    {"x": 1.0}, {"x": 1}, {"x": 0.5, "name": "a", "n": 2**53, "ok": True}, {"x": math.nan}, {"x": math.inf},
    {"x": np.float64(2.0), "n": np.int32(4)}, {"x": -1.0}, {"x": "1"}, {"x": True}, {"x": 1.0, "n": 1.0},
    {"x": 1.0, "n": 2**53 + 1}, {"x": 1.0, "name": "\ud800"}, {"x": 1.0, "extra": 1}, {}, {"name": "a"},
    {"x": 1.0, "ok": 1},
])
def test_flat_fast_path_matches_the_full_check(record: dict) -> None:
    fast = _compiled(Flat)
    full = _compiled(Flat)
    full._flat = None
    outcomes = []
    for c in (fast, full):
        try:
            out = c.validate(dict(record))
            outcomes.append(("ok", list(out.items()), [type(v) for v in out.values()]))
        except tracker.SchemaError as exc:
            outcomes.append(("error", str(exc)))
    assert outcomes[0] == outcomes[1] or (math.isnan(record.get("x", 0.0)) and outcomes[0][0] == outcomes[1][0])


def test_a_validator_that_reads_the_instance_turns_the_fast_path_off() -> None:
    c = _compiled(Crossed)
    assert c._flat is not None
    assert c.validate({"x": 2.0, "y": 1.0}) == {"x": 2.0, "y": 1.0}
    assert c._flat is None
    with pytest.raises(tracker.SchemaError, match="expected <= x"):
        c.validate({"x": 1.0, "y": 2.0})


def test_disabled_validators_are_honoured() -> None:
    c = _compiled(Flat)
    attrs.validators.set_disabled(True)
    try:
        assert c.validate({"x": -1.0})["x"] == -1.0
    finally:
        attrs.validators.set_disabled(False)
    with pytest.raises(tracker.SchemaError):
        c.validate({"x": -1.0})


def test_typed_records_are_the_same_through_the_bus_and_straight_to_the_store(tmp_store: Path) -> None:
    if "fft.loss_point" not in tracker.get_host().schemas:
        pytest.skip("the fft_study plugin is not installed")
    point = {"total_loss": 0.5, "mel_err": math.nan, "spec_err": 0.1, "welch_err": 0.0, "mean_gate": 1.0}
    got = []
    for bus_path in (False, True):
        with tracker.start_run() as run:
            sub = tracker.get_host().bus.subscribe(lambda e: None, kinds="record") if bus_path else None
            for i in range(3):
                run.log_record("fft.loss_point", step=i, **point)
            with pytest.raises(tracker.SchemaError, match="mel_err"):
                run.log_record("fft.loss_point", **{**point, "mel_err": -1.0})
            if sub is not None:
                sub.unsubscribe()
        got.append([_strip(e) for e in _records(run)])
    assert got[0] == got[1]
    assert got[0][0]["data"] == {"model_id": "", **point, "mel_err": "NaN"}
    records = list(tracker.open_store().run(run.id).records("fft.loss_point"))
    assert math.isnan(records[0].data["mel_err"])


# --- reading ----------------------------------------------------------------------------------

def test_metrics_columns_match_the_records_whatever_the_names(tmp_store: Path) -> None:
    from tracker.core.summary import MISSING

    logged = [{"a": 1.0, "b": 2.0}, {"a": math.nan, "b": math.inf}, {"a": 3.0, "b": -math.inf}, {"b": 4.0},
              {"c": True, "a": 5}, {"a": 6.0, "c": False}, {"a": 7.0, "c": 1.5}, {}, {"a": 8.0}]
    with tracker.start_run() as run:
        for i, values in enumerate(logged):
            run.log(values, step=i)
    cols = tracker.open_store().run(run.id).metrics()
    assert cols["step"].tolist() == list(range(len(logged)))
    for name in ("a", "b", "c"):
        want = [float(v[name]) if name in v else MISSING for v in logged]
        got = cols[name].tolist()
        assert len(got) == len(want)
        for g, w, v in zip(got, want, logged, strict=True):
            if name not in v:
                assert math.isnan(g) and np.float64(g).tobytes() == np.float64(MISSING).tobytes()
            elif math.isnan(w):
                assert math.isnan(g) and np.float64(g).tobytes() != np.float64(MISSING).tobytes()
            else:
                assert g == w


def test_metrics_reads_other_layouts_and_reports_damage(tmp_store: Path) -> None:
    import warnings
    import zlib

    with tracker.start_run() as run:
        for i in range(5):
            run.log({"x": float(i)}, step=i)
    (seg,) = run.path.glob("*.jsonl")
    lines = seg.read_bytes().splitlines()
    # A record with its keys in another order (valid checksum), and a changed byte in another.
    ev = json.loads(lines[2])
    other = json.dumps({"data": {"x": 10.0}, "step": 10, "time": ev["time"], "v": 1, "kind": "record",
                        "schema": "metrics", "w": ev["w"], "seq": ev["seq"]}, separators=(",", ":")).encode()[:-1]
    lines[2] = other + b',"crc":"%08x"}' % zlib.crc32(other)
    lines[3] = lines[3].replace(b'"x":2.0', b'"x":9.0')
    seg.write_bytes(b"\n".join(lines) + b"\n")
    view = tracker.open_store().run(run.id)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        cols = view.metrics()
    assert cols["x"].tolist() == [0.0, 10.0, 3.0, 4.0]
    assert [p.kind for p in view.problems] == ["checksum"] and view.problems[0].line == 4


def test_flat_instances_are_checked_like_the_full_path() -> None:
    fast = _compiled(Flat)
    full = _compiled(Flat)
    full._flat = None
    good = Flat(x=1.5, name="a", n=3)
    assert fast.validate(good) == full.validate(good) == {"name": "a", "x": 1.5, "n": 3, "ok": False}
    attrs.validators.set_disabled(True)
    try:
        bad = Flat(x=-1.0)
    finally:
        attrs.validators.set_disabled(False)
    messages = []
    for c in (fast, full):
        with pytest.raises(tracker.SchemaError) as exc:
            c.validate(bad)
        messages.append(str(exc.value))
    assert messages[0] == messages[1] and "x" in messages[0]


def test_a_forked_child_keeps_to_its_own_segment_on_the_fast_path(tmp_store: Path) -> None:
    import os

    with tracker.start_run() as run:
        for i in range(3):
            run.log({"parent": float(i)})
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                for i in range(5):
                    run.log({"child": float(i)})
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        run.log({"parent": 3.0})
    segments = {}
    for path in run.path.glob("*.jsonl"):
        events = [json.loads(line) for line in path.read_text().splitlines()]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert {e["w"] for e in events} == {path.stem}
        names = {k for e in events if e["kind"] == "record" for k in e["data"]}
        segments[frozenset(names)] = [e for e in events if e["kind"] == "record"]
    assert set(segments) == {frozenset({"parent"}), frozenset({"child"})}
    assert [e["data"]["child"] for e in segments[frozenset({"child"})]] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert len(segments[frozenset({"parent"})]) == 4
