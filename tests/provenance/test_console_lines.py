"""Console text to records and back: the C path and the Python path agree, lines are cut and read back right."""

from __future__ import annotations

import json
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
