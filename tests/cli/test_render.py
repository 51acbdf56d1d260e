"""Output helpers: strict JSON, cells, tables fitted to a terminal, short ids, durations."""

from __future__ import annotations

import json
import math

import numpy as np

from tracker.cli.options import one_line
from tracker.cli.render import cell, csv_text, dumps, table_text
from tracker.core.text import duration, short_ids


def test_dumps_is_strict_json_with_the_store_encoding():
    doc = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": {"d": np.float64("nan")}, "e": np.int64(3)}
    text = dumps(doc)
    parsed = json.loads(text, parse_constant=lambda t: (_ for _ in ()).throw(ValueError(t)))
    assert parsed == {"a": "NaN", "b": ["Infinity", "-Infinity", 1.5], "c": {"d": "NaN"}, "e": 3}


def test_cells():
    # The page's rules (tracker/cli/numbers.py): whole values whole, 4 significant digits, exponents
    # below 0.001 and from 1e9 without padding, thin-space groups from 10 000.
    assert [cell(v) for v in (None, True, math.nan, math.inf, -math.inf, 0.5, 2.0, 1e-7, 123456789.5, 2.5e9)] == [
        "-", "yes", "NaN", "inf", "-inf", "0.5", "2", "1e-7", "123\u2009456\u2009790", "2\u2009500\u2009000\u2009000"]
    assert cell([1.0, None]) == "[1, -]" and cell(np.float32(0.25)) == "0.25"


def test_csv_values():
    text = csv_text(["a", "b", "c"], [{"a": math.nan, "b": [1, 2], "c": None}, {"a": -math.inf}])
    assert text == 'a,b,c\nNaN,"[1,2]",\n-inf,,\n'


def test_table_aligns_numbers_right_and_marks():
    text = table_text(["name", "x"], [{"name": "a", "x": 1.5}, {"name": "bb", "x": 10}], marks={(1, "x")},
                      width=None)
    # the decimal points line up: "10" is padded where "1.5" has its ".5"
    assert text.splitlines() == ["name  x", "----  ----", "a      1.5", "bb    10*"]


def test_table_fits_a_narrow_terminal_by_clipping_text_not_numbers():
    rows = [{"name": "a-very-long-run-name-indeed", "note": "x" * 40, "value": 123456.0}]
    text = table_text(["name", "note", "value"], rows, width=50)
    assert all(len(line) <= 50 for line in text.splitlines())
    assert "…" in text and "123\u2009456" in text
    unlimited = table_text(["name", "note", "value"], rows, width=None)
    assert "a-very-long-run-name-indeed" in unlimited and "…" not in unlimited


def test_short_ids_are_unique_prefixes():
    ids = ["3f2a0000aaaa", "3f2a0000aabb", "9c1e22223333", "run1", "run10"]
    short = short_ids(ids)
    assert short == {"3f2a0000aaaa": "3f2a0000aaa", "3f2a0000aabb": "3f2a0000aab", "9c1e22223333": "9c1e2222",
                     "run1": "run1", "run10": "run10"}
    for rid, s in short.items():
        assert [i for i in ids if i.startswith(s)] == [rid] or s == rid


def test_durations_and_one_line():
    assert [duration(s) for s in (None, 0.0323, 4.21, 185, 3725, 200_000)] == [
        "-", "32ms", "4.2s", "3m05s", "1h02m", "2d07h"]
    assert one_line("schema 'x': 2 problems:\n  a: bad\n  b: worse") == "schema 'x': 2 problems:; a: bad; b: worse"
