"""The columnar pass over stretches of ``metrics`` lines builds exactly what the line-by-line pass builds.

Derived data is built from a segment's lines by :meth:`Builder.feed`, which
takes long stretches of ``metrics`` lines column by column and everything
else line by line. Whatever the lines (names that change, ints, bools and
non-finite values, several writers, other events, damaged lines of every
kind) and however they are cut into chunks, the columns, writers and
problems must be those of the line-by-line pass.
"""

from __future__ import annotations

import math
from array import array
from typing import Any

import hypothesis.strategies as hs
import orjson
from hypothesis import given, settings

from tracker.core.format import METRICS, RECORD, encode_line, event, with_crc
from tracker.read.index.build import BULK_MIN, Builder

NAMES = ("loss", "acc", "lr")
value = hs.one_of(hs.floats(allow_nan=False, allow_infinity=False), hs.floats(), hs.integers(-(2**53), 2**53),
                  hs.booleans())


@hs.composite
def blocks(draw: Any) -> list[tuple[str, Any]]:
    """Stretches of records: many alike (what a training loop writes) and every kind of oddity between them."""
    out: list[tuple[str, Any]] = []
    for _ in range(draw(hs.integers(1, 6))):
        kind = draw(hs.sampled_from(["alike", "alike", "mixed", "other", "damaged"]))
        if kind == "alike":
            names = draw(hs.lists(hs.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
            floats_only = draw(hs.booleans())
            for _ in range(draw(hs.integers(1, 3 * BULK_MIN))):
                vals = [draw(hs.floats(allow_nan=False, allow_infinity=False) if floats_only else value)
                        for _ in names]
                out.append(("metrics", dict(zip(names, vals, strict=True))))
        elif kind == "mixed":
            out.append(("metrics", draw(hs.dictionaries(hs.sampled_from(NAMES), value, max_size=3))))
        elif kind == "other":
            out.append(("other", {"text": draw(hs.text(max_size=5))}))
        else:
            out.append(("damaged", draw(hs.sampled_from(["checksum", "json", "step", "list", "writer"]))))
    return out


def lines_of(items: list[tuple[str, Any]], writers: list[str]) -> list[bytes]:
    lines = []
    for i, (kind, data) in enumerate(items):
        w = writers[i % len(writers)]
        if kind == "metrics":
            line = encode_line(event(RECORD, METRICS, i, 1000.0 + i, w, i + 1, data))
        elif kind == "other":
            line = encode_line(event(RECORD, "notes", i, 1000.0 + i, w, i + 1, data))
        else:
            good = encode_line(event(RECORD, METRICS, i, 1000.0 + i, w, i + 1, {"loss": 0.5}))
            if data == "checksum":  # a byte changed after the line was written
                line = good.replace(b"0.5", b"0.6")
            elif data == "json":  # a whole checksum over text that is not JSON
                line = with_crc(good[:70])
            elif data == "step":  # a record of this version's shape but a float step, checksum and all
                line = with_crc(orjson.dumps(event(RECORD, METRICS, 1.5, 1.0, w, i + 1, {"loss": 0.5}))[:-1])
            elif data == "list":  # a value that is not a metric value
                line = encode_line(event(RECORD, METRICS, i, 1000.0 + i, w, i + 1, {"loss": [1, 2]}))
            else:  # no writer id
                ev = event(RECORD, METRICS, i, 1000.0 + i, w, i + 1, {"loss": 0.5})
                del ev["w"]
                line = with_crc(orjson.dumps(ev)[:-1])
        lines.append(line.rstrip(b"\n"))
    return lines


def built(lines: list[bytes], cuts: list[int], columnar: bool) -> Builder:
    b = Builder("segment.jsonl")
    bounds = [0, *sorted(c % (len(lines) + 1) for c in cuts), len(lines)]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        if columnar:
            b.feed(lines[lo:hi])
        else:
            b._lines(lines[lo:hi])
    return b


def same(a: Builder, b: Builder) -> None:
    assert a.problems == b.problems
    assert a.lineno == b.lineno
    assert list(a.parts) == list(b.parts)
    for name, pa in a.parts.items():
        pb = b.parts[name]
        for field in ("steps", "times", "seqs", "lines", "writers"):
            assert getattr(pa, field) == getattr(pb, field), (name, field)
        if name == METRICS:
            pa.finish()
            pb.finish()
            assert list(pa.cols) == list(pb.cols)
            for k in pa.cols:  # bit for bit: NaN and the marker of a missing value included
                assert pa.cols[k].tobytes() == pb.cols[k].tobytes(), k
            assert {k: bytes(v) for k, v in pa.kinds.items()} == {k: bytes(v) for k, v in pb.kinds.items()}
        else:
            assert pa.data == pb.data and pa.special == pb.special


@settings(max_examples=150, deadline=None)
@given(items=blocks(), writers=hs.sampled_from([["w1"], ["w1", "w2"]]),
       cuts=hs.lists(hs.integers(0, 10_000), max_size=4))
def test_the_columnar_pass_builds_what_the_line_by_line_pass_builds(items, writers, cuts) -> None:
    lines = lines_of(items, writers)
    same(built(lines, cuts, columnar=True), built(lines, cuts, columnar=False))


def test_a_training_loops_lines_take_the_columnar_pass() -> None:
    """A stretch of alike records is taken column by column (not only line by line, which would pass too)."""
    rows = [{"loss": 1.0 / (i + 1), "acc": i / 100, "lr": 3e-4} for i in range(100)]
    lines = lines_of([("metrics", r) for r in rows], ["w1"])
    b = Builder("segment.jsonl")
    assert b._bulk(lines) is True
    m = b.metrics
    assert m is not None and list(m.cols) == ["loss", "acc", "lr"]
    assert m.cols["acc"] == array("d", [r["acc"] for r in rows]) and m.steps == array("q", range(100))
    assert m.lines == array("q", range(1, 101)) and m.writers == [[0, "w1"]] and b.lineno == 100
    # Any line it cannot vouch for sends the whole stretch the other way, with nothing taken.
    b2 = Builder("segment.jsonl")
    damaged = [*lines[:50], lines[50].replace(b"0.5", b"0.7").replace(b"0.0", b"0.9"), *lines[51:]]
    assert damaged != lines and b2._bulk(damaged) is False and b2.metrics is None and b2.lineno == 0
    b2.feed(damaged)
    assert [p[:2] for p in b2.problems] == [[51, "checksum"]] and len(b2.metrics) == 99


def test_non_finite_values_and_ints_keep_their_kinds() -> None:
    rows = [{"loss": math.nan if i == 3 else float(i), "epoch": i // 10} for i in range(40)]
    lines = lines_of([("metrics", r) for r in rows], ["w1"])
    b = Builder("segment.jsonl")
    b.feed(lines)
    m = b.metrics
    m.finish()
    assert math.isnan(m.cols["loss"][3]) and m.cols["loss"][4] == 4.0
    assert m.cols["epoch"].tolist() == [float(i // 10) for i in range(40)] and set(m.kinds["epoch"]) == {1}
