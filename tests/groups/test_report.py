"""``tracker report``'s file: its data against the store, what stays out of it, its escaping, the CLI's errors."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import tracker
from tracker.cli import make_cli
from tracker.ui.markdown import render
from tracker.ui.report import build, bundle, modules, report_data, script_json


def report_doc(text: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def cli(store: Path, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(make_cli(), ["--store", str(store), *args])
    return res.exit_code, res.stdout, res.stderr


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


ALLOWED = {"p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code", "hr", "table",
           "thead", "tbody", "tr", "th", "td", "strong", "em", "del", "a"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("<>&\"'`*_~[]()!#|-=:/ \nabcxyz1.;") +
                                ["javascript:", "script", "img", "onerror", "http://", "```", "\n\n", "- ", "| "]),
                max_size=80).map("".join))
def test_markdown_never_makes_an_element_or_attribute_of_its_own(text: str) -> None:
    parser = Tags()
    parser.feed(render(text))
    for tag, attrs in parser.tags:
        assert tag in ALLOWED, tag
        for name, value in attrs:
            assert name in ("href", "target", "rel") and tag == "a", (tag, name)
            if name == "href":
                assert re.match(r"^(https?://|mailto:|#)", value, re.I), value


def test_markdown_renders_what_notes_use() -> None:
    html = render("# Week 12\n\nFive **seeds**, *one* `lr<1` [paper](https://x.org/?a=1&b=2) [no](javascript:alert(1))"
                  "\n\n- a\n- b\n\n1. c\n\n> q\n\n| k | v |\n|---|---|\n| <b>1</b> | 2 |\n\n```\n<script>\n```")
    assert "<h1>Week 12</h1>" in html and "<strong>seeds</strong>" in html and "<em>one</em>" in html
    assert "<code>lr&lt;1</code>" in html
    assert '<a href="https://x.org/?a=1&amp;b=2" target="_blank" rel="noopener noreferrer">paper</a>' in html
    assert "[no](javascript:alert(1))" in html and "<ul><li>a</li><li>b</li></ul>" in html
    assert "<ol><li>c</li></ol>" in html
    assert "<td>&lt;b&gt;1&lt;/b&gt;</td>" in html and "<pre><code>&lt;script&gt;</code></pre>" in html


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20))
def test_embedded_json_round_trips_and_can_close_nothing(doc: object) -> None:
    text = script_json(doc)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == doc


def test_the_shipped_modules_bundle_into_one_script() -> None:
    script = bundle()
    assert not re.search(r"^\s*(import|export)\b", script, re.M)
    assert "</script" not in script.lower() and "<!--" not in script
    order = modules()
    assert order[0] == "vendor/uplot/uPlot.esm.js" and order[-1] == "report.js"
    for key in ("util.js", "chart.js", "panels.js", "groups.js", "compare.js"):
        assert key in order
    for i, key in enumerate(order):
        assert f"// --- {key}\nconst __m{i} = (() => {{" in script, key


def test_report_data_is_the_stores_and_nothing_else(ablations: tuple[Path, dict]) -> None:
    store_path, ids = ablations
    store = tracker.open_store(store_path)
    infos = [i for i in store.runs() if i.id in ids["a"] + ids["b"]]
    text = build(store, infos, by="group", metrics=["loss"], title="Seeds")
    doc = report_doc(text)
    agg = store.aggregate("loss", by="group", runs=infos)
    assert [g["key"] for g in doc["aggregates"]["loss"]] == list(agg) == ["a", "b"]
    for g in doc["aggregates"]["loss"]:
        want = agg[g["key"]]
        assert g["x"] == want["step"].tolist() and g["count"] == want["count"].tolist()
        np.testing.assert_allclose(g["y"], want["mean"])
        np.testing.assert_allclose(g["hi"], want["hi"])
    assert [(g["key"], g["n"]) for g in doc["groups"]] == [("a", 3), ("b", 3)]
    assert sorted(r["id"] for r in doc["runs"]) == sorted(ids["a"] + ids["b"])
    assert ids["none"][0] not in text  # a run not chosen is nowhere in the file
    assert str(store_path) not in text
    assert "traceback" not in json.dumps(doc)  # a failed run's traceback names the machine's files
    env = doc["environment"][ids["a"][0]]
    assert env["cwd"] and env["command"]
    quiet = build(store, infos, metrics=["loss"], environment=False)
    assert report_doc(quiet)["environment"] is None and env["cwd"] not in quiet
    assert not {s["schema"] for s in report_doc(quiet)["sections"]} & {"environment", "console"}
    # Ungrouped: each run's series downsampled to at most max_points, bucket min and max kept.
    series = report_doc(build(store, infos, metrics=["loss"], max_points=8))["series"]["loss"]
    assert len(series) == 6 and all(len(s["x"]) == 8 for s in series)
    s0 = series[0]
    assert all(lo <= y <= hi for lo, y, hi in zip(s0["y_min"], s0["y"], s0["y_max"], strict=True))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text).group(1)
    assert csp.startswith("default-src 'none'; script-src 'sha256-") and "connect-src" not in csp


def test_cli_writes_the_report_and_says_what_is_wrong(ablations: tuple[Path, dict], tmp_path: Path) -> None:
    store, ids = ablations
    notes = tmp_path / "notes.md"
    notes.write_text("# Lab\n<script>alert(1)</script>", encoding="utf-8")
    out = tmp_path / "r.html"
    code, _, err = cli(store, "report", *ids["a"][:2], "-m", "loss", "--notes", str(notes), "--title", "Two", "-o",
                       str(out))
    assert code == 0, err
    assert err.startswith(f"wrote {out} (") and "2 runs" in err
    text = out.read_text(encoding="utf-8")
    assert "<h1>Lab</h1>" in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert [r["id"] for r in report_doc(text)["runs"]] == ids["a"][:2]
    code, _, err = cli(store, "report", "--project", "abl", "--group-by", "config.lr", "-o", str(out))
    assert code == 0 and [g["key"] for g in report_doc(out.read_text())["groups"]] == [0.01, 0.1, 0.5]
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"ok\n\xff")
    for args, message in [
        (["--group-by", "config.momentum"], "no run has config key 'momentum' (the runs have: group, project, tag, "
                                            "config.lr, config.seed)"),
        (["-m", "lss"], "metric 'lss': none of the 7 runs logged it (metrics logged: acc, loss)"),
        (["--notes", str(tmp_path / "none.md")], f"--notes {tmp_path / 'none.md'}: no such file"),
        (["--notes", str(bad)], f"--notes {bad}: not UTF-8 text (byte 0xff at offset 3)"),
        (["--sweep", "x1"], "--sweep x1: no run of that sweep (sweeps with runs: none)"),
        (["--project", "zz"], "--project zz: no run of that project (projects: abl)"),
        (["nosuchrun"], "no run matches 'nosuchrun'"),
    ]:
        code, _, err = cli(store, "report", *args, "-o", str(tmp_path / "x.html"))
        assert code == 1 and err.count("\n") == 1 and message in err, (args, err)
    code, _, err = cli(store, "report", "-o", str(tmp_path / "no" / "r.html"))
    assert code == 1 and f"-o {tmp_path / 'no' / 'r.html'}: the folder {tmp_path / 'no'} does not exist" in err
    assert not (tmp_path / "x.html").exists()


def test_report_of_a_long_run_stays_small(tmp_store: Path, tmp_path: Path) -> None:
    with tracker.start_run(project="long") as run:
        for s in range(50_000):
            run.log({"loss": 1 / (s + 1) + (5.0 if s == 31_337 else 0.0)}, step=s)
    store = tracker.open_store(tmp_store)
    text = build(store, store.runs())
    doc = report_doc(text)
    series = doc["series"]["loss"][0]
    assert len(series["x"]) == 1000 and max(series["y_max"]) == pytest.approx(1 / 31_338 + 5.0, rel=1e-6)
    assert len(text.encode()) < 400_000
    assert report_data(store, store.runs())["runs"][0]["stats"]["loss"]["count"] == 50_000
