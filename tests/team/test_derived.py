"""The derived tables of the team database give what the folder's own columns give, bit for bit.

A property test: runs of random steps (repeated, out of order, strided), values
(NaN, infinities, ints, bools, metrics that come and go), writers and batch
sizes, synced, then read back through the derived columns and figures.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracker
from tracker.core.format import FORMAT_VERSION, encode_line
from tracker.team.postgres import TeamStore, sync

from .conftest import new_database

VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.integers(-2**40, 2**40),
                   st.booleans())
RECORD = st.tuples(st.integers(-3, 40), st.dictionaries(st.sampled_from(["loss", "acc", "lr", "x"]), VALUES,
                                                        max_size=3))


def write_writer(run_dir: Path, writer: str, t0: float, records: list[tuple[int, dict]], strided: bool) -> None:
    lines = [encode_line({"v": FORMAT_VERSION, "kind": "run_started" if writer.endswith("0") else "writer_started",
                          "schema": None, "step": None, "time": t0, "w": writer, "seq": 1,
                          "data": {"host": "elsewhere", "pid": 1, "writer": writer, "name": "prop", "project": "p",
                                   "config": {}, "tags": []}})]
    for i, (step, data) in enumerate(records):
        enc = {k: ("NaN" if isinstance(v, float) and math.isnan(v) else
                   ("Infinity" if v == math.inf else ("-Infinity" if v == -math.inf else v))) for k, v in data.items()}
        lines.append(encode_line({"v": FORMAT_VERSION, "kind": "record", "schema": "metrics",
                                  "step": i * 3 if strided else step, "time": t0 + i * 0.5 - (i % 3) * 0.7,
                                  "w": writer, "seq": i + 2, "data": enc}))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / f"{writer}.jsonl").write_bytes(b"".join(lines))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(writers=st.lists(st.lists(RECORD, max_size=30), min_size=1, max_size=3), batch=st.integers(1, 9),
       strided=st.booleans())
def test_columns_and_figures_match_the_folder(pg_server, tmp_path_factory, writers, batch, strided) -> None:
    store = tmp_path_factory.mktemp("prop") / "store"
    for i, records in enumerate(writers):
        write_writer(store / "runs" / "prop", f"elsewhere-1-00000{i}", 1.7e9 + i * 0.3, records, strided)
    url = new_database(pg_server)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(tracker.open_store(store), url, batch=batch)
        local = tracker.open_store(store).run("prop")
        team = TeamStore(url)
        try:
            remote = team.run("prop")
            a, b = local.metrics(), remote.metrics()
            assert list(a) == list(b)
            for k in a:
                assert a[k].dtype == b[k].dtype and np.array_equal(a[k].view(np.uint64), b[k].view(np.uint64)), k
            assert _plain(remote.metric_stats()) == _plain(local.metric_stats())
            assert remote.schemas() == local.schemas()
            # From a cursor taken half-way through each writer: the rest of each, and a cursor at the end.
            ids = [f"elsewhere-1-00000{i}" for i in range(len(writers))]
            half = {w: len(r) // 2 for w, r in zip(ids, writers, strict=True)}
            cols, cursor = remote.metric_columns(since=half)
            assert cols["step"].size == sum(len(r) - len(r) // 2 for r in writers)
            assert {w: n for w, n in cursor.items() if n} == {w: len(r) for w, r in zip(ids, writers, strict=True)
                                                            if r}
        finally:
            team.close()


def _plain(figures: dict) -> str:
    return repr(sorted((k, sorted(v.items())) for k, v in figures.items()))


FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=100, deadline=None)
@given(names=st.lists(st.sampled_from(["loss", "acc", "lr", "é"]), min_size=1, max_size=3, unique=True),
       records=st.lists(st.tuples(st.integers(-2**53, 2**53), FINITE, st.lists(FINITE, min_size=3, max_size=3)),
                        min_size=1, max_size=12),
       strided=st.booleans())
def test_plain_metrics_give_what_the_columns_give(names: list[str], records: list[tuple], strided: bool) -> None:
    # A new writer whose metrics records are all floats of the same names is derived without numpy: the same
    # count, times, figures (bit for bit, -0.0 included), chunk and values as through the folder's columns.
    import orjson

    from tracker.core.format import encode_nonfinite
    from tracker.team.derived import _metrics, _plain_metrics

    rows = [("r", "w", i + 2, "record", "metrics", i * 5 - 7 if strided else step, time,
             dict(zip(names, vals, strict=False))) for i, (step, time, vals) in enumerate(records)]
    rows.insert(1, ("r", "w", 99, "record", "text", 3, 1.0, {"note": "x"}))  # not a metrics record
    plain, columns = _plain_metrics("r", "w", rows), _metrics("r", "w", rows)
    assert plain == columns
    assert orjson.dumps(encode_nonfinite(plain[2])) == orjson.dumps(encode_nonfinite(columns[2]))
    # Anything else is left to the columns: an int, a NaN, a name missing from a record (the others have it).
    others = [{**rows[0][7], names[0]: 1}, {**rows[0][7], names[0]: "NaN"}]
    if len(records) > 1:
        others.append(dict(list(rows[0][7].items())[1:]))
    for data in others:
        assert _plain_metrics("r", "w", [rows[0][:7] + (data,), *rows[1:]]) is None
