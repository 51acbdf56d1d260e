"""``tracker export``: one row per record (step, time, fields), CSV or JSON Lines, streamed."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import tracemalloc

import pytest

import tracker
import tracker.core.format
import tracker.read.index.segments as index_segments
from tests.cli.support import run_on_terminal, run_tracker, write_run


@pytest.fixture
def run(store):
    with tracker.start_run(name="e") as r:
        r.log({"loss": 1.0, "acc": 0.5}, step=0)
        r.log({"loss": math.nan}, step=1)
        r.log({"loss": math.inf, "acc": 0.75}, step=1)  # repeated steps are kept as logged
        r.log({"grad": -math.inf}, step=3)
        r.log_record("fft.loss_point", step=2, model_id="m", total_loss=0.4, mel_err=0.5, spec_err=0.2,
                     welch_err=0.1, mean_gate=math.nan)
    return r


def strict_json(text: str):
    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


def test_metrics_csv_by_default(cli, run):
    result = cli("export", run.id)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["step", "time", "loss", "acc", "grad"]
    assert [r["step"] for r in rows] == ["0", "1", "1", "3"]
    assert [r["loss"] for r in rows] == ["1.0", "NaN", "inf", ""]
    assert [r["acc"] for r in rows] == ["0.5", "", "0.75", ""]
    assert rows[3]["grad"] == "-inf"
    times = [float(r["time"]) for r in rows]
    assert times == sorted(times) and all(t > 1e9 for t in times)
    # The numbers read back as logged, e.g. with the csv module and float().
    assert math.isnan(float(rows[1]["loss"])) and float(rows[2]["loss"]) == math.inf


def test_metrics_jsonl(cli, run):
    result = cli("export", run.id, "--format", "jsonl")
    recs = [strict_json(line) for line in result.stdout.splitlines()]
    assert recs[0] == {"step": 0, "time": recs[0]["time"], "loss": 1.0, "acc": 0.5}
    assert recs[1]["loss"] == "NaN" and recs[2]["loss"] == "Infinity" and recs[3]["grad"] == "-Infinity"
    assert "acc" not in recs[1]


def test_typed_schema(cli, run):
    rows = list(csv.DictReader(io.StringIO(cli("export", run.id, "--schema", "fft.loss_point").stdout)))
    assert list(rows[0]) == ["step", "time", "model_id", "total_loss", "mel_err", "spec_err", "welch_err",
                             "mean_gate"]
    assert len(rows) == 1 and rows[0]["model_id"] == "m" and float(rows[0]["total_loss"]) == 0.4
    assert rows[0]["mean_gate"] == "NaN"
    recs = [strict_json(x) for x in cli("export", run.id, "--schema", "fft.loss_point", "--format",
                                        "jsonl").stdout.splitlines()]
    assert recs[0]["mean_gate"] == "NaN" and recs[0]["step"] == 2


def test_output_file_and_format_from_suffix(cli, run, tmp_path):
    out = tmp_path / "m.jsonl"
    result = cli("export", run.id, "-o", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert f"wrote 4 metrics records to {out}" in result.stderr
    assert len([strict_json(x) for x in out.read_text().splitlines()]) == 4
    assert not list(tmp_path.glob("*.partial"))


def test_schema_of_an_uninstalled_plugin(cli, store):
    write_run(store, "alien", [(0, {"a": 1, "b": "x"}), (1, {"a": 2, "c": [1.0, 2.0]})], schema="other.thing")
    rows = list(csv.DictReader(io.StringIO(cli("export", "alien", "--schema", "other.thing").stdout)))
    assert [(r["a"], r["b"], r["c"]) for r in rows] == [("1", "x", ""), ("2", "", "[1.0,2.0]")]


def test_merges_writers(cli, store):
    write_run(store, "multi", [(0, {"x": 0.0}), (2, {"x": 2.0})], writer="h-1-aaaaaa", created=100.0)
    write_run(store, "multi", [(1, {"x": 1.0})], writer="h-2-bbbbbb", created=100.5, start_kind="writer_started")
    rows = list(csv.DictReader(io.StringIO(cli("export", "multi").stdout)))
    assert [r["x"] for r in rows] == ["0.0", "1.0", "2.0"]


def _peak_export(cli, store, run_id: str, out) -> int:
    tracemalloc.start()
    try:
        result = cli("export", run_id, "-o", str(out))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0, result.output
    return peak


def test_constant_memory(cli, store, tmp_path, monkeypatch):
    # Columns are read in fixed windows: with small windows, small runs already show
    # the whole cost, and a run eight times longer must not cost more.
    monkeypatch.setattr(tracker.core.format, "READ_CHUNK", 16 * 1024)
    monkeypatch.setattr(index_segments, "WINDOW_ROWS", 256)
    for run_id, n in (("small", 1_000), ("large", 8_000)):
        write_run(store, run_id, [(s, {"loss": 1.0 / (s + 1), "acc": 0.5}) for s in range(n // 2)],
                  writer="h-1-aaaaaa")
        write_run(store, run_id, [(s, {"loss": 2.0 / (s + 1)}) for s in range(n // 2)], writer="h-2-bbbbbb",
                  start_kind="writer_started")
    # The first read of a run builds its derived columns (8 bytes a value, held while built);
    # from then on an export streams them in windows, whatever the run's length.
    _peak_export(cli, store, "small", tmp_path / "warm.csv")
    _peak_export(cli, store, "large", tmp_path / "warm-large.csv")
    small = _peak_export(cli, store, "small", tmp_path / "small.csv")
    large = _peak_export(cli, store, "large", tmp_path / "large.csv")
    with open(tmp_path / "large.csv") as f:
        assert sum(1 for _ in f) == 8_001
    assert large < 1.5 * small + 64 * 1024, (small, large)


def test_progress_bar_on_a_terminal_only_when_the_output_is_not_there(store, tmp_path):
    write_run(store, "big", [(s, {"loss": 1.0 / (s + 1), "acc": 0.5}) for s in range(12_000)])
    to_file = ["--store", str(store), "export", "big", "-o", str(tmp_path / "big.csv")]
    on_tty = run_on_terminal(to_file, stream="stderr")
    assert "exporting metrics" in on_tty and "100%" in on_tty
    piped = run_tracker(*to_file)
    assert piped.returncode == 0 and "exporting" not in piped.stderr and "%" not in piped.stderr


def test_parquet_from_the_suffix(cli, run, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "m.parquet"
    result = cli("export", run.id, "-o", str(out))
    assert result.exit_code == 0, result.output
    table = pq.read_table(out).to_pydict()
    assert list(table) == ["step", "time", "loss", "acc", "grad"]
    assert table["step"] == [0, 1, 1, 3] and table["acc"] == [0.5, None, 0.75, None]
    assert table["loss"][0] == 1.0 and math.isnan(table["loss"][1]) and table["loss"][2] == math.inf
    typed = tmp_path / "t.PARQUET"
    assert cli("export", run.id, "--schema", "fft.loss_point", "-o", str(typed)).exit_code == 0
    assert pq.read_table(typed).to_pydict()["model_id"] == ["m"]


def test_parquet_without_pyarrow_is_one_line_naming_its_install(cli, run, tmp_path, monkeypatch):
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what an environment without it sees
    out = tmp_path / "m.parquet"
    result = cli("export", run.id, "-o", str(out))
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "pip install pyarrow" in result.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["m.txt", "m.json", "metrics"])
def test_unknown_suffix_is_one_line_and_writes_nothing(cli, run, tmp_path, name):
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    result = cli("export", run.id, "-o", str(tmp_path / name))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "cannot tell the format" in result.stderr
    assert ".csv, .jsonl, .ndjson, .parquet" in result.stderr
    assert not list(tmp_path.iterdir())
    # --format says it for a name without a known suffix.
    assert cli("export", run.id, "-o", str(tmp_path / name), "--format", "jsonl").exit_code == 0
    assert (tmp_path / name).read_text().count("\n") == 4


def test_format_and_suffix_that_disagree(cli, run, tmp_path):
    result = cli("export", run.id, "-o", str(tmp_path / "m.csv"), "--format", "jsonl")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "says csv" in result.stderr
    assert cli("export", run.id, "--format", "parquet").exit_code == 2


def test_a_schema_the_run_does_not_hold_is_an_error_and_writes_nothing(cli, run, tmp_path):
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    for args in ([], ["-o", str(tmp_path / "p.csv")]):
        result = cli("export", run.id, "--schema", "fft.params", *args)
        assert result.exit_code == 1 and result.stdout == ""
        assert result.stderr.count("\n") == 1
        assert f"run {run.id} has no fft.params records (it holds: metrics, fft.loss_point)" in result.stderr
    assert not list(tmp_path.iterdir())
    unknown = cli("export", run.id, "--schema", "no.such")
    assert unknown.exit_code == 1 and "unknown schema 'no.such'" in unknown.stderr
