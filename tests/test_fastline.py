"""The logging fast path in C (tracker/write/_fastline.c) against the Python body it stands in for.

Every line the C path writes must be the line the Python body of
``Route.append`` writes for the same record, byte for byte; whatever it does
not vouch for it must decline without writing or counting anything; and its
lock must behave as ``threading.Lock``, which the rest of the writer uses.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracker
from tracker.core.format import METRICS, record_template
from tracker.write import route as route_mod
from tracker.write.fast import fastline
from tracker.write.route import Route, line_parts
from tracker.write.writer import SegmentWriter

pytestmark = pytest.mark.skipif(fastline is None, reason="the C fast path was not built here (no C compiler)")
#: append's flags for run.log: check the values first, encode with orjson's STRICT options.
FAST_CHECK_METRICS = fastline.CHECK_METRICS | fastline.STRICT if fastline is not None else 0

names = st.one_of(st.sampled_from(["loss", "acc", "lr", "a/b", "é", "\"q\"", "tab\t", "step", "time", ""]),
                  st.text(max_size=8))
numbers = st.one_of(st.floats(), st.integers(min_value=-(2**60), max_value=2**60), st.booleans(),
                    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 2**53 - 1, -(2**53 - 1)]))
values = st.one_of(numbers, st.text(max_size=4), st.none(), st.lists(st.floats(), max_size=2))
records = st.dictionaries(names, values, max_size=6)


def _segment(w: SegmentWriter) -> bytes:
    return Path(w.path).read_bytes()


@pytest.fixture
def writer(tmp_path: Path) -> SegmentWriter:
    (tmp_path / "run").mkdir()
    w = SegmentWriter(tmp_path / "run")
    yield w
    w.close()


def _python_body(r: Route, steps: list[int], step: int | None, at: float, data: dict, strict: bool,
                 monkeypatch: pytest.MonkeyPatch) -> int:
    with monkeypatch.context() as m:
        m.setattr(route_mod, "fast_append", None)
        return r.append(steps, step, at, data, strict=strict)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=records, step=st.one_of(st.none(), st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)),
       at=st.floats(allow_nan=False, allow_infinity=False), check=st.booleans())
def test_the_c_path_writes_the_python_bodys_line_or_declines_having_done_nothing(
        writer: SegmentWriter, monkeypatch: pytest.MonkeyPatch, data: dict, step: int | None, at: float,
        check: bool) -> None:
    r = Route(writer, METRICS)
    steps = [7]
    before_file, before_counts, before_last = _segment(writer), writer.counts, dict(writer.last)
    flags = FAST_CHECK_METRICS if check else fastline.STRICT
    got = fastline.append(r, steps, step, at, data, flags)
    if got is None:
        # Declined: nothing written, nothing counted; the Python body (or run.log's full check) follows.
        assert (_segment(writer), writer.counts, writer.last, steps) == (before_file, before_counts,
                                                                          before_last, [7])
        plain = all(type(k) is str and k not in ("", "step", "time") for k in data) \
            and all(type(v) in (float, int, bool) for v in data.values())
        if check and plain:
            assert any(type(v) is int and abs(v) > 2**53 - 1 for v in data.values())
        return
    c_line = _segment(writer)[len(before_file):]
    c_counts, c_last, c_steps = writer.counts, dict(writer.last), list(steps)
    # The same record again through the Python body, from the same counts: the same bytes.
    writer.counts, writer.last, steps[0] = before_counts, dict(before_last), 7
    mark = len(_segment(writer))
    assert _python_body(r, steps, step, at, data, True, monkeypatch) == got
    assert _segment(writer)[mark:] == c_line
    assert (writer.counts, writer.last, steps) == (c_counts, c_last, c_steps)
    head, crc = c_line.rstrip(b"\n").rsplit(b',"crc":"', 1)
    assert int(crc[:8], 16) == zlib.crc32(head)
    assert orjson.loads(c_line)["seq"] == c_counts[0] == before_counts[0] + 1


def test_a_run_logs_the_same_lines_with_and_without_the_c_path(tmp_path: Path) -> None:
    """Two real processes log the same steps, one with TRACKER_PURE_PYTHON=1: equal lines but for ids and times."""
    script = (
        "import sys, tracker\n"
        "from tracker.write.route import fast_append\n"
        "print('c' if fast_append else 'python')\n"
        "with tracker.start_run(store=sys.argv[1], run_id=sys.argv[2], system_metrics=False) as run:\n"
        "    for i in range(50):\n"
        "        run.log({'loss': 1 / (i + 1), 'n': i, 'ok': i % 2 == 0, 'nan': float('nan') if i % 7 else 1.0})\n"
        "        run.log_record('phase.step', phase='FULL', phase_step=i, cycle=0, loss=0.1 * i)\n"
        "        if i % 10 == 0:\n"
        "            run.log({'val': float(i)}, step=1000 + i)\n"
        "            run.log_record('metrics', {'rec': -float(i)})\n"
        "            run.log_record('phase.step', {'phase': 'PREDICT', 'phase_step': 0, 'cycle': i, 'loss': 1.0},\n"
        "                           step=2000 + i)\n"
    )
    lines = {}
    for mode, env in (("c", {}), ("python", {"TRACKER_PURE_PYTHON": "1"})):
        res = subprocess.run([sys.executable, "-c", script, str(tmp_path / "store"), mode],
                             env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == mode
        (seg,) = (tmp_path / "store" / "runs" / mode).glob("*.jsonl")
        lines[mode] = [orjson.loads(x) for x in seg.read_bytes().splitlines()
                       if b'"kind":"record"' in x]
    for line in lines["c"] + lines["python"]:
        del line["w"], line["time"], line["crc"]
    assert len(lines["c"]) == 115 and lines["c"] == lines["python"]
    assert tracker.Store(tmp_path / "store").run("c").info.records == 115


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), start=st.integers(min_value=0, max_value=2**32 - 1))
def test_crc32_is_zlibs(data: bytes, start: int) -> None:
    assert fastline.crc32(data, start) == zlib.crc32(data, start)


def test_line_parts_rebuild_the_encoded_template() -> None:
    t = record_template("fft.loss_point", "host-1-abcdef")
    prefix, time_mark, writer_mark, data_mark = line_parts(t)
    filled = dict(t, step=-12, time=1.5e9, seq=42, data={"x": 1.0})
    assert orjson.dumps(filled) == prefix + b"-12" + time_mark + b"1500000000.0" + writer_mark + b"42" \
        + data_mark + b'{"x":1.0}}'
    assert line_parts({"data": None, "step": 0}) is None  # not an event template: the C path declines


def test_a_write_that_fails_in_c_is_settled_as_in_python(writer: SegmentWriter) -> None:
    """A write refused by the system (here: a descriptor opened read-only) names the file; nothing is counted."""
    r = Route(writer, METRICS)
    steps = [0]
    assert fastline.append(r, steps, None, 1.0, {"x": 1.0}, FAST_CHECK_METRICS) == 0
    good = writer.fd
    writer.fd = os.open(writer.path, os.O_RDONLY)
    try:
        counts = writer.counts
        with pytest.raises(tracker.StoreError, match=str(writer.path.name)):
            fastline.append(r, steps, None, 2.0, {"x": 2.0}, FAST_CHECK_METRICS)
        assert writer.counts == counts and steps == [1] and writer.last == {"x": 1.0}
        assert not writer.lock.locked()
    finally:
        os.close(writer.fd)
        writer.fd = good
    assert fastline.append(r, steps, None, 3.0, {"x": 3.0}, FAST_CHECK_METRICS) == 1
    assert [orjson.loads(x)["seq"] for x in _segment(writer).splitlines()] == [1, 2]


def test_the_c_path_declines_for_a_writer_that_is_not_direct(writer: SegmentWriter) -> None:
    r = Route(writer, METRICS)
    writer.direct = False  # fsync, closed, or a torn fragment to end: the Python body's put()
    size = len(_segment(writer))
    assert fastline.append(r, [0], None, 1.0, {"x": 1.0}, FAST_CHECK_METRICS) is None
    assert len(_segment(writer)) == size and writer.counts == (0, 0, writer.counts[2])


def test_threads_logging_through_the_c_path_never_share_a_step(tmp_path: Path) -> None:
    with tracker.start_run(store=tmp_path / "store", run_id="threads", system_metrics=False) as run:
        run.log({"x": 0.0})

        def work(k: int) -> None:
            for i in range(2000):
                run.log({"x": float(i), "k": k})

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    view = tracker.Store(tmp_path / "store").run("threads")
    recs = list(view.records())
    assert sorted(r.step for r in recs) == list(range(8001))
    assert [r.seq for r in recs] == sorted(r.seq for r in recs)  # file order is seq order
    assert view.problems == []


def test_lock_behaves_as_threading_lock() -> None:
    lock = fastline.Lock()
    assert not lock.locked()
    assert lock.acquire() is True and lock.locked()
    assert lock.acquire(False) is False
    start = time.monotonic()
    assert lock.acquire(timeout=0.05) is False
    assert time.monotonic() - start >= 0.04
    with pytest.raises(ValueError, match="non-blocking"):
        lock.acquire(False, 1.0)
    lock.release()
    with pytest.raises(RuntimeError, match="release unlocked lock"):
        lock.release()
    with lock:
        assert lock.locked()
        got = []
        t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=5)))
        t.start()
        time.sleep(0.05)
        assert got == []  # the other thread waits
    t.join()
    assert got == [True] and lock.locked()
    lock.release()
    with pytest.raises(TypeError):
        fastline.Lock(1)


# --- log_record of a flat schema, and Run.log / Run.log_record as C methods -----------------------

phase_fields = st.fixed_dictionaries(
    {"phase": st.sampled_from(["FULL", "PREDICT", "CORRECT", "full", "", "\ud800"]),
     "phase_step": st.one_of(st.integers(min_value=-3, max_value=9), st.floats(max_value=3), st.booleans(),
                             st.sampled_from([2**53, 2**53 + 1, 2**60, 2**70])),
     "cycle": st.integers(min_value=-2, max_value=5),
     "loss": st.one_of(st.floats(), st.integers(min_value=-3, max_value=3))},
    optional={"phase_changed": st.one_of(st.booleans(), st.integers(0, 1)), "full_steps": st.integers(-1, 5),
              "predict_steps": st.integers(-1, 5), "bogus": st.just(1.0)})
fft_fields = st.fixed_dictionaries(
    {"total_loss": st.floats(), "mel_err": st.one_of(st.floats(), st.integers(-2, 2)),
     "spec_err": st.floats(min_value=-1e-300, max_value=1.0),
     "welch_err": st.sampled_from([0.0, -0.0, math.nan, 1e308]),
     "mean_gate": st.floats(min_value=-0.1, max_value=1.1)},
    optional={"model_id": st.one_of(st.text(max_size=4), st.none())})
edge = st.sampled_from([0.0, -0.0, -1.0, 1.0, 1.5, math.nan, math.inf, -math.inf])
quant_fields = st.fixed_dictionaries(
    # Mostly valid records, with one field or another at an edge: each bound is met, missed and NaN.
    {"tensor": st.one_of(st.text(min_size=1, max_size=5), st.just("")),
     "bits": st.one_of(st.integers(min_value=2, max_value=16), st.sampled_from([0, 1, 17, 2**60])),
     "granularity": st.sampled_from(["per_tensor", "per_channel", "per_tensor", "x"]),
     "mode": st.sampled_from(["symmetric", "asymmetric"]),
     "mse": st.one_of(st.floats(min_value=0, max_value=10), edge), "mae": st.one_of(st.floats(0, 1), edge),
     "max_error": st.floats(min_value=0, max_value=10), "sqnr_db": st.one_of(st.floats(-50, 50), edge),
     "outlier_rate": st.one_of(st.floats(min_value=0, max_value=1), edge),
     "num_samples": st.one_of(st.integers(min_value=0, max_value=10), st.just(-1)),
     "theoretical_max_error": st.one_of(st.floats(min_value=0, max_value=1), edge)})


def _record_lines(run: tracker.Run) -> list[dict]:
    (seg,) = Path(run.path).glob("*.jsonl")
    return [orjson.loads(x) for x in seg.read_bytes().splitlines() if b'"kind":"record"' in x]


def _outcome(call) -> str | None:  # noqa: ANN001 - a callable
    try:
        call()
    except tracker.SchemaError as exc:
        return str(exc)
    return None


@pytest.fixture
def two_runs(tmp_path: Path):  # noqa: ANN201 - a generator fixture
    """A run logging through the C methods and one through the Python methods they wrap."""
    fast = tracker.start_run(store=tmp_path / "store", run_id="c", system_metrics=False)
    slow = tracker.start_run(store=tmp_path / "store", run_id="python", system_metrics=False)
    yield fast, slow
    fast.finish()
    slow.finish()


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schema_fields=st.one_of(st.tuples(st.just("phase.step"), phase_fields),
                               st.tuples(st.just("quant.error"), quant_fields),
                               st.tuples(st.just("fft.loss_point"), fft_fields)),
       as_mapping=st.booleans())
def test_log_record_in_c_writes_what_the_python_method_writes(two_runs, monkeypatch: pytest.MonkeyPatch,
                                                              schema_fields: tuple, as_mapping: bool) -> None:
    fast, slow = two_runs
    schema, fields = schema_fields
    python_log_record = type(slow).log_record.__wrapped__
    before = len(_record_lines(fast))
    if as_mapping:
        got = _outcome(lambda: fast.log_record(schema, dict(fields)))
    else:
        got = _outcome(lambda: fast.log_record(schema, **fields))
    with monkeypatch.context() as m:
        m.setattr(tracker.write.route, "fast_append", None)
        want = _outcome(lambda: python_log_record(slow, schema, **fields))
    assert got == want  # the same SchemaError, naming the same problems, or none
    c_lines, py_lines = _record_lines(fast), _record_lines(slow)
    assert len(c_lines) == len(py_lines) == before + (want is None)
    if want is None:
        c, p = c_lines[-1], py_lines[-1]
        assert list(c["data"].items()) == list(p["data"].items()) or (
            str(c["data"]) == str(p["data"]))  # NaN != NaN: compared as text
        assert (c["schema"], c["step"], c["seq"]) == (p["schema"], p["step"], p["seq"])


def test_run_methods_keep_their_names_docs_and_signatures() -> None:
    import inspect

    for name in ("log", "log_record"):
        method = getattr(tracker.Run, name)
        assert method.__wrapped__.__name__ == method.__name__ == name
        assert method.__doc__ == method.__wrapped__.__doc__ and method.__doc__.strip()
        assert inspect.signature(method) == inspect.signature(method.__wrapped__)
        assert method.__qualname__ == f"Run.{name}"


def test_every_way_of_calling_the_c_methods(tmp_path: Path) -> None:
    with tracker.start_run(store=tmp_path / "store", run_id="calls", system_metrics=False) as run:
        bound = run.log
        assert inspect_params(bound) == ["values", "step", "commit"]
        bound({"a": 1.0})                                  # a bound method kept aside
        tracker.Run.log(run, {"a": 2.0})                    # through the class
        run.log({"a": 3.0}, step=10)                        # a step by keyword
        run.log({"a": 3.5}, 9)                              # a step by position (out of order: kept)
        with pytest.raises(tracker.SchemaError, match="step: expected an int within"):
            run.log({"a": 0.0}, step=2**53 + 1)             # declined in C: the Python method names it
        with pytest.raises(tracker.SchemaError, match="step"):
            run.log({"a": 0.0}, step=True)
        run.log({"a": 4.0}, commit=False)                   # W&B's pending step
        run.log({"b": 5.0})                                 # commits it, with b
        run.log()                                           # W&B's wandb.log(): an empty step
        run.log({"s": "text", "a": 6.0})                    # a string: a text record beside
        run.log_record("phase.step", phase="FULL", phase_step=0, cycle=0, loss=1.0)
        run.log_record("phase.step", {"phase": "FULL", "phase_step": 1, "cycle": 0, "loss": 0.5})
        run.log_record("phase.step", step=40, phase="PREDICT", phase_step=0, cycle=0, loss=0.4)
        run.log_record("phase.step", {"phase": "CORRECT", "phase_step": 0, "cycle": 1, "loss": 0.3}, step=41)
        with pytest.raises(tracker.SchemaError, match="step"):
            run.log_record("phase.step", step=-(2**60), phase="FULL", phase_step=0, cycle=0, loss=0.4)
        with pytest.raises(TypeError):
            run.log({"a": 1.0}, 1, None, "extra")
        with pytest.raises(tracker.SchemaError, match="phase"):
            run.log_record("phase.step", phase="NOPE", phase_step=0, cycle=0, loss=1.0)
        with pytest.raises(tracker.SchemaError, match="phase_step: expected an int within"):
            run.log_record("phase.step", phase="FULL", phase_step=2**53 + 1, cycle=0, loss=1.0)
        with pytest.raises(tracker.SchemaError, match="phase: expected a str"):
            run.log_record("phase.step", phase="FULL\ud800", phase_step=1, cycle=0, loss=1.0)
    recs = [(r.schema, r.step, r.data) for r in tracker.Store(tmp_path / "store").run("calls").records()]
    metrics = [(step, data) for schema, step, data in recs if schema == "metrics"]
    assert metrics == [(0, {"a": 1.0}), (1, {"a": 2.0}), (10, {"a": 3.0}), (9, {"a": 3.5}),
                       (11, {"a": 4.0, "b": 5.0}),
                       (12, {}), (13, {"a": 6.0})]
    assert [(step, data["phase_step"]) for schema, step, data in recs if schema == "phase.step"] == [
        (14, 0), (15, 1), (40, 0), (41, 0)]


def inspect_params(fn) -> list[str]:  # noqa: ANN001 - any callable
    import inspect

    return list(inspect.signature(fn).parameters)
