"""Console text to records and back: the C path and the Python path agree, lines are cut and read back right."""

from __future__ import annotations

import json
import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracker.capture import lines as c
from tracker.core.records import Record
from tracker.read.console import ConsoleLines, plain, select

PRE = b'{"v":1,"kind":"record","schema":"console","step":7,"time":1.5,"w":"host-1-abcdef","seq":'
pieces = st.sampled_from(["a", "bc", "\n", "\r", "\r\n", "\x1b[31m", '"', "\\", "é", "\t", "\x00", "€", "😀",
                          "x" * 70_000, "é" * 40_000, "\u2028"])
chunks = st.lists(st.lists(pieces, max_size=6).map("".join), max_size=8)


def python_path(items: list[str], pending: str, cr: bool, seq: int) -> tuple[bytes, str, bool]:
    line = c.Line()
    line.text, line.cr = pending, cr
    batch = c.Batch()
    line.feed("".join(items), 0.0, batch, c.STDOUT)
    batch, _ = c.checked(batch)
    return c.lines_py(PRE, zlib.crc32(PRE), seq, batch.texts, c.MIDS, c.TAILS, bytes(batch.kinds)), line.text, line.cr


@pytest.mark.skipif(c.native is None, reason="the C extension was not built")
@settings(max_examples=300, deadline=None)
@given(items=chunks, pending=st.sampled_from(["", "abc", "y" * 60_000]), cr=st.booleans(),
       seq=st.integers(0, 10**12))
def test_the_c_path_writes_the_same_bytes_as_the_python_path(items: list[str], pending: str, cr: bool,
                                                              seq: int) -> None:
    blob, rest, rcr = python_path(items, pending, cr, seq)
    got = c.native.feed(items, pending, cr, PRE, zlib.crc32(PRE), seq, c.MIDS, c.TAILS, 10**15)
    assert got is not None
    assert got[0] == blob and got[3] == rest and bool(got[4]) == rcr
    for line in blob.splitlines():
        head, crc = line.rsplit(b',"crc":"', 1)
        assert int(crc[:8], 16) == zlib.crc32(head)
        assert json.loads(line)["data"]["text"] is not None


@pytest.mark.skipif(c.native is None, reason="the C extension was not built")
@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40), max_size=10),
       kinds=st.data())
def test_c_lines_and_python_lines_agree(texts: list[str], kinds: st.DataObject) -> None:
    k = bytes(kinds.draw(st.lists(st.integers(0, 3), min_size=len(texts), max_size=len(texts))))
    assert c.native.lines(PRE, zlib.crc32(PRE), 41, texts, c.MIDS, c.TAILS, k) == \
        c.lines_py(PRE, zlib.crc32(PRE), 41, texts, c.MIDS, c.TAILS, k)


def test_c_declines_what_it_does_not_vouch_for() -> None:
    if c.native is None:
        pytest.skip("the C extension was not built")
    for items in (["ok", ("stderr",)], ["lone \udcff surrogate\n"], [b"bytes\n"]):
        assert c.native.feed(items, "", False, PRE, zlib.crc32(PRE), 0, c.MIDS, c.TAILS, 10**9) is None


def test_split_long_cuts_between_characters_at_64_kib() -> None:
    text = "a" + "€" * 30_000  # 3 bytes each: a cut at 65,536 bytes falls inside one
    pieces = c.split_long(text)
    assert "".join(pieces) == text
    assert all(len(p.encode()) <= 64 * 1024 for p in pieces) and len(pieces) == 2


def rec(writer: str, stream: str, text: str, partial: bool = False) -> Record:
    return Record(0, 1.0, "console", {"stream": stream, "text": text, "partial": partial}, writer, 0)


def test_a_partial_line_is_replaced_by_the_next_record_of_its_writer_and_stream() -> None:
    reader = ConsoleLines()
    first = [(ln.n, ln.text, new) for ln, new in reader.feed([rec("w1", "stdout", "10%", True),
                                                              rec("w1", "stderr", "warn"),
                                                              rec("w2", "stdout", "other rank")])]
    assert first == [(1, "10%", True), (2, "warn", True), (3, "other rank", True)]
    later = [(ln.n, ln.text, new) for ln, new in reader.feed([rec("w1", "stdout", "50%", True),
                                                              rec("w1", "stdout", "100%"),
                                                              rec("w1", "stdout", "next")])]
    assert later == [(1, "50%", False), (1, "100%", False), (4, "next", True)]
    lines = ConsoleLines().lines([rec("w", "stdout", "a", True), rec("w", "stdout", "ab"), rec("w", "stderr", "e")])
    assert [(ln.n, ln.text, ln.partial) for ln in lines] == [(1, "ab", False), (2, "e", False)]


def test_grep_ignores_colours_and_tail_takes_the_last() -> None:
    lines = ConsoleLines().lines([rec("w", "stdout", "\x1b[31mloss\x1b[0m 0.5"), rec("w", "stderr", "loss nan"),
                                  rec("w", "stdout", "acc")])
    assert plain(lines[0].text) == "loss 0.5"
    assert [ln.text for ln in select(lines, grep=r"^loss")] == ["\x1b[31mloss\x1b[0m 0.5", "loss nan"]
    assert [ln.text for ln in select(lines, stream="stdout", tail=1)] == ["acc"]


# --- the C path over many lines, the run's limit, the spool ----------------------------------------

needs_c = pytest.mark.skipif(c.native is None, reason="the C extension was not built")
ALPHABET = ["é", "€", "😀", '"', "\\", "\t", "\x1b[31m", "\x00", "\u2028", " "]


def many_lines(seed: int, n: int) -> str:
    """``n`` lines of mixed lengths (some over a record's worth together), escapes, now and then a \\r."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        k = rnd.choice([0, 1, 7, 60, 100, 250])
        text = "".join(rnd.choice(ALPHABET) if rnd.random() < 0.05 else "x" for _ in range(k))
        if rnd.random() < 0.02:
            text = "bar 10%\r" + text
        out.append(text + "\n")
    return "".join(out)


def cut_up(text: str, rnd: random.Random) -> list[str]:
    items, at = [], 0
    while at < len(text):
        k = rnd.choice([1, 2, 50, 101, 4000])
        items.append(text[at:at + k])
        at += k
    return items


@needs_c
@pytest.mark.parametrize("seed", [1, 2])
def test_runs_of_lines_over_several_records_are_the_python_paths_bytes(seed: int) -> None:
    rnd = random.Random(seed)
    text = many_lines(seed, 2500) + "unfinished"  # about 200 KB: several 64 KiB records
    items = cut_up(text, rnd)
    for pending, cr in (("", False), ("half a line ", False), ("bar 50%", True)):
        blob, rest, rcr = python_path(items, pending, cr, 41)
        got = c.native.feed(items, pending, cr, PRE, zlib.crc32(PRE), 41, c.MIDS, c.TAILS, 10**15)
        assert got[0] == blob and got[3] == rest and bool(got[4]) == rcr
        assert got[1] == blob.count(b"\n") >= 3


@needs_c
def test_the_runs_limit_stops_at_the_line_the_python_path_stops_at() -> None:
    text = many_lines(3, 1500)
    line = c.Line()
    batch = c.Batch()
    line.feed(text, 0.0, batch, c.STDOUT)
    batch, _ = c.checked(batch)
    sizes = [len(t.encode()) for t in batch.texts]
    for limit in (0, 1, 99, 100, 101, 5000, 65_536, 65_537, 100_000, sum(sizes) - 1, sum(sizes)):
        kept, total = 0, 0
        while kept < len(sizes) and total + sizes[kept] <= limit:  # as Sink.write keeps them
            total += sizes[kept]
            kept += 1
        want = c.lines_py(PRE, zlib.crc32(PRE), 0, batch.texts[:kept], c.MIDS, c.TAILS, bytes(batch.kinds[:kept]))
        got = c.native.feed([text], "", False, PRE, zlib.crc32(PRE), 0, c.MIDS, c.TAILS, limit)
        assert (got[0], got[2], bool(got[6])) == (want, total, kept < len(sizes)), limit


class Sub(str):
    pass


@needs_c
def test_the_spool_keeps_every_write_in_order_and_the_c_path_takes_only_its_leading_stdout_text() -> None:
    spool = c.native.Spool()
    kicks = []
    out = c.native.Tee(len, spool, False, lambda: kicks.append(len(spool)), 8)
    err = c.native.Tee(lambda s: 7, spool, True)
    assert out("ab\n") == 3 and out("c") == 1 and err("e1\n") == 7
    assert out("lone \udcff\n") == 7 and out(b"bytes\n") == 6 and out("é\n") == 2 and out(Sub("sub\n")) == 4
    # bytes of UTF-8, 64 for each object kept as it is; a kick each time the size passes a multiple of 8
    assert out("") == 0 and len(spool) == 4 + 3 + 64 + 64 + 3 + 64 and kicks == [71, 135, 138, 202]
    got = c.native.feed(spool, "", False, PRE, zlib.crc32(PRE), 0, c.MIDS, c.TAILS, 10**15)
    assert got is not None and got[3] == "c" and got[5] == 1 and spool.taken == 4
    assert c.native.feed(spool, "", False, PRE, zlib.crc32(PRE), 0, c.MIDS, c.TAILS, 10**15) is None
    assert spool.taken == 4  # declined: nothing taken
    rest = spool.take(0)
    assert rest == [("e1\n",), "lone \udcff\n", b"bytes\n", "é\n", "sub\n"] and type(rest[-1]) is Sub
    assert len(spool) == 0 and spool.take(0) == []
    # a pass-through when off; the stream's own errors and odd calls go through untouched, nothing kept
    out.on = False
    assert out("x\n") == 2 and len(spool) == 0

    def refuse(s: str) -> int:
        raise OSError("disk full")

    bad = c.native.Tee(refuse, spool, False)
    with pytest.raises(OSError, match="disk full"):
        bad("lost\n")
    assert c.native.Tee(lambda *a, **k: (a, k), spool, False)("a", end="") == (("a",), {"end": ""})
    assert len(spool) == 0


@needs_c
def test_a_large_spool_is_taken_four_mib_at_a_time_cut_between_characters() -> None:
    spool = c.native.Spool()
    tee = c.native.Tee(lambda s: None, spool, False)
    line = "é" * 60 + "\n"  # 121 bytes: 4 MiB falls inside a character
    for _ in range(40_000):
        tee(line)
    tee("é unfinished")
    texts, pending, seq, rounds = [], "", 0, 0
    while len(spool):
        before = spool.taken
        got = c.native.feed(spool, pending, False, PRE, zlib.crc32(PRE), seq, c.MIDS, c.TAILS, 10**15)
        assert 0 < spool.taken - before <= 4 << 20
        pending, seq, rounds = got[3], seq + got[1], rounds + 1
        for rec in got[0].splitlines():
            head, crc = rec.rsplit(b',"crc":"', 1)
            assert int(crc[:8], 16) == zlib.crc32(head)
            texts.extend(json.loads(rec)["data"]["text"].split("\n"))
    assert rounds == 2 and pending == "é unfinished" and texts == [line[:-1]] * 40_000
