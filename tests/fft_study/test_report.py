"""``tracker fft report`` through the real command line: a parseable, self-contained HTML file."""

from __future__ import annotations

import base64
import struct
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli

pytest.importorskip("matplotlib")

VOID = {"meta", "img", "br", "hr", "link", "input", "col", "source", "wbr"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class StrictParser(HTMLParser):
    """Collects <img> sources and headings; fails on unbalanced or misnested tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.images: list[dict[str, str]] = []
        self.headings: list[str] = []
        self.external: list[str] = []
        self._heading: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("href", "src"):
            if key in attrs and not attrs[key].startswith("data:"):
                self.external.append(attrs[key])
        if tag == "img":
            self.images.append(attrs)
        if tag not in VOID:
            self.stack.append(tag)
        if tag in ("h1", "h2", "h3"):
            self._heading = []

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if tag in ("h1", "h2", "h3"):
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data):
        if self._heading is not None:
            self._heading.append(data)


def parse(path) -> StrictParser:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    parser = StrictParser()
    parser.feed(text)
    parser.close()
    assert parser.stack == []
    return parser


def png_size(src: str) -> tuple[int, int]:
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix)
    data = base64.b64decode(src[len(prefix):], validate=True)
    assert data[:8] == PNG_MAGIC
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def invoke(host, *args):
    return CliRunner().invoke(make_cli(host), list(args))


def test_report_of_one_run(host, study_run, tmp_path):
    out = tmp_path / "report.html"
    result = invoke(host, "fft", "report", study_run[:6], "-o", str(out), "--dpi", "60")
    assert result.exit_code == 0, result.output
    assert f"wrote {out} (3 figures" in result.stdout
    page = parse(out)
    # The loss chart, the heatmap of model "a", its landscape.
    assert len(page.images) == 3
    for img in page.images:
        width, height = png_size(img["src"])
        assert width > 100 and height > 100
        assert img["alt"]
    assert page.external == []  # self-contained
    assert page.headings[:1] == ["FFT study report"]
    for heading in ("Loss curves", "Parameters and memory", "Parameters by component",
                    "Gate heatmaps", "Loss landscapes"):
        assert heading in page.headings
    text = out.read_text(encoding="utf-8")
    assert "<td>704</td>" in text and "<td>2,816</td>" in text  # model a: params, memory
    assert "Total loss of every model against step" in text


def test_report_of_two_runs_labels_models_by_run(host, tracker_store, study_run, tmp_path):
    with tracker.start_run(name="second", store=tracker_store) as second:
        second.log_record("fft.heatmap", model_id="a", stages=1, butterflies=2, gates=[0.2, 1.0])
        second.log_record("fft.loss_point", step=1, model_id="a", total_loss=1.0, mel_err=0,
                          spec_err=0, welch_err=0, mean_gate=0.6)
    out = tmp_path / "two.html"
    png_dir = tmp_path / "figs"
    result = invoke(host, "fft", "report", study_run, second.id, "-o", str(out), "--dpi", "60",
                    "--png-dir", str(png_dir))
    assert result.exit_code == 0, result.output
    page = parse(out)
    assert len(page.images) == 4  # one loss chart, two heatmaps, one landscape
    assert "study/a" in page.headings and "second/a" in page.headings
    assert sorted(p.name for p in png_dir.iterdir()) == [
        "heatmap-second-a.png", "heatmap-study-a.png", "landscape-study-a-0.png",
        "loss_curves.png"]
    assert all(p.read_bytes()[:8] == PNG_MAGIC for p in png_dir.iterdir())


def test_report_without_loss_points_has_no_loss_chart(host, tracker_store, tmp_path):
    with tracker.start_run(store=tracker_store) as r:
        r.log_record("fft.params", model_id="m", variant="v", n_fft=2, twiddles=2, gates=1,
                     freq_mask=0, denoiser=0, unitary=0, mel_filters=0, q8_packed=0)
    out = tmp_path / "r.html"
    result = invoke(host, "fft", "report", r.id, "-o", str(out))
    assert result.exit_code == 0, result.output
    page = parse(out)
    assert page.images == []
    assert "No fft.heatmap records." in out.read_text(encoding="utf-8")


def test_unknown_run_is_one_clear_line(host, study_run, tmp_path):
    out = tmp_path / "r.html"
    result = invoke(host, "fft", "report", "zzzz", "-o", str(out))
    assert result.exit_code != 0
    assert "zzzz" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_run_without_fft_records_is_refused(host, tracker_store, tmp_path):
    with tracker.start_run(store=tracker_store) as r:
        r.log({"loss": 1.0})
    result = invoke(host, "fft", "report", r.id, "-o", str(tmp_path / "r.html"))
    assert result.exit_code != 0
    assert f"no fft.* records in run(s) {r.id}" in result.stderr


def test_runs_are_required(host):
    result = invoke(host, "fft", "report")
    assert result.exit_code == 2 and "Missing argument" in result.stderr


def test_report_draws_degenerate_records(host, tracker_store, tmp_path):
    nan = float("nan")
    with tracker.start_run(store=tracker_store) as r:
        for step, loss in enumerate([1.0, nan, 0.0, -0.5]):  # not all positive: linear axis
            r.log_record("fft.loss_point", step=step, model_id="", total_loss=loss, mel_err=0,
                         spec_err=0, welch_err=0, mean_gate=nan)
        r.log_record("fft.heatmap", model_id="", stages=1, butterflies=1, gates=[0.0])
        for x, y, z in [([0.0], [1.0], [[2.0]]),                       # a single point
                        ([0.0, 1.0], [0.0, 1.0], [[nan, nan], [nan, nan]]),  # nothing finite
                        ([2.0, 1.0, 0.0], [0.0, 1.0], [[1.0] * 3, [1.0] * 3]),  # flat, x falls
                        ([0.0, 1.0], [0.0], [[1.0, float("inf")]])]:  # one row, an Inf
            r.log_record("fft.landscape", model_id="m", x_label="x", y_label="y", x=x, y=y, z=z)
    out = tmp_path / "r.html"
    result = invoke(host, "fft", "report", r.id, "-o", str(out), "--dpi", "50")
    assert result.exit_code == 0, result.output
    page = parse(out)
    assert len(page.images) == 1 + 1 + 4
    assert "(default)" in page.headings
