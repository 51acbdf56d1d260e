"""What a newcomer meets in the first hour: long listings, sizes and times, a busy port, one run twice."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracker
from tests.cli.support import run_on_terminal, run_tracker, write_run
from tracker.core.text import human_bytes, human_cell, is_size_column, is_time_column

CREATED = 1.795e9  # 2026-11-18: what `query` printed as 1.795e+09


@pytest.fixture
def many(store):
    """60 runs, run00 the oldest, run59 the newest."""
    for i in range(60):
        write_run(store, f"run{i:02d}", [(0, {"loss": 1.0 / (i + 1)})], created=CREATED + 60 * i, name=f"r{i}")
    return store


def test_runs_on_a_terminal_shows_the_newest_50_and_says_how_to_see_all(many):
    out = run_on_terminal(["--store", str(many), "runs"], env={"NO_COLOR": "1", "COLUMNS": "200"})
    names = re.findall(r"\br(\d+)\b", out)
    assert names[:1] == ["59"] and len(names) == 50 and names[-1] == "10"
    last = out.strip().splitlines()[-1]
    assert last.startswith("... 10 more runs (50 of 60 shown, newest first)")
    assert "--all" in last and "-n N" in last
    every = run_on_terminal(["--store", str(many), "runs", "--all"], env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert len(re.findall(r"\br(\d+)\b", every)) == 60 and "more run" not in every
    some = run_on_terminal(["--store", str(many), "runs", "-n", "5"], env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert len(re.findall(r"\br(\d+)\b", some)) == 5 and "... 55 more runs" in some


def test_runs_piped_or_as_json_or_csv_lists_every_run(many):
    piped = run_tracker("--store", str(many), "runs")
    assert piped.returncode == 0 and len(piped.stdout.strip().splitlines()) == 62  # header, rule, 60 runs
    assert "more run" not in piped.stdout + piped.stderr
    doc = json.loads(run_tracker("--store", str(many), "runs", "--format", "json").stdout)
    assert len(doc) == 60
    rows = list(csv.DictReader(io.StringIO(run_tracker("--store", str(many), "runs", "--format", "csv").stdout)))
    assert len(rows) == 60 and float(rows[0]["start"]) == CREATED + 60 * 59  # raw numbers in CSV


@given(st.integers(min_value=0, max_value=2**50))
def test_human_bytes_reads_back_within_its_rounding(n):
    text = human_bytes(n)
    number, unit = text.split()
    scale = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[unit]
    decimals = len(number.partition(".")[2])
    assert abs(float(number) * scale - n) <= 0.5 * 10 ** -decimals * scale + 1e-9 * n
    assert (unit == "B") == (n < 1024)


def test_which_columns_are_sizes_and_times():
    assert is_size_column("size") and is_size_column("memory_bytes") and is_size_column("bytes")
    assert not is_size_column("batch_size") and not is_size_column("steps")
    assert is_time_column("created_at") and is_time_column("time") and is_time_column("wall_time")
    assert human_cell("created_at", CREATED) == dt.datetime.fromtimestamp(CREATED).strftime("%Y-%m-%d %H:%M:%S")
    assert human_cell("step_time", 0.25) == 0.25  # a duration, not a date
    assert human_cell("memory_bytes", 1_041_000_000) == "992.8 MiB" and human_cell("size", 2048) == "2.00 KiB"
    assert human_cell("memory_bytes", True) is True and human_cell("name", 5) == 5


def test_query_table_prints_dates_and_sizes_json_and_csv_keep_numbers(cli, store):
    pytest.importorskip("duckdb", reason="the query extra (duckdb) is not installed")
    write_run(store, "q1", [(0, {"loss": 0.5})], created=CREATED)
    sql = "SELECT id, created_at, 1041000000 AS total_bytes, 64 AS batch_size FROM runs"
    table = cli("query", sql, "--no-index")
    assert table.exit_code == 0, table.output
    assert dt.datetime.fromtimestamp(CREATED).strftime("%Y-%m-%d %H:%M") in table.stdout
    assert "992.8 MiB" in table.stdout and "e+09" not in table.stdout and " 64" in table.stdout
    doc = json.loads(cli("query", sql, "--no-index", "--format", "json").stdout)
    assert doc[0]["total_bytes"] == 1041000000 and abs(doc[0]["created_at"] - CREATED) < 1
    rows = list(csv.DictReader(io.StringIO(cli("query", sql, "--no-index", "--format", "csv").stdout)))
    assert rows[0]["total_bytes"] == "1041000000"


def test_show_and_runs_print_sizes_as_units(cli, store):
    with tracker.init(project="p", name="sized", dir=store) as run:
        run.log({"loss": 0.5})
        run.summary["model_bytes"] = 3 * 2**30
        run.summary["batch_size"] = 64
    shown = cli("show", run.id)
    assert "model_bytes = 3.00 GiB" in shown.stdout and "batch_size = 64" in shown.stdout
    listed = cli("runs", "-c", "summary.model_bytes")
    assert "3.00 GiB" in listed.stdout
    raw = json.loads(cli("runs", "-c", "summary.model_bytes", "--format", "json").stdout)
    assert raw[0]["summary.model_bytes"] == 3 * 2**30


def test_show_prints_a_plugins_summary_sizes_as_units(cli, store):
    with tracker.start_run(store=store) as run:
        run.log_record("fft.params", model_id="m", variant="v", n_fft=512, twiddles=1000, gates=24, freq_mask=0,
                       denoiser=0, unitary=0, mel_filters=0, q8_packed=0)
    out = cli("show", run.id).stdout
    assert "4.00 KiB" in out  # memory_bytes = 4 bytes * 1,024 parameters
    doc = json.loads(cli("show", run.id, "--format", "json").stdout)
    assert 4096 in [r.get("memory_bytes") for s in doc["summaries"] for r in s["rows"]]


def test_compare_a_run_with_itself_is_one_line(cli, store):
    write_run(store, "aaaa1111", [(0, {"loss": 0.5})])
    write_run(store, "bbbb2222", [(0, {"loss": 0.4})])
    for args in (["aaaa1111", "aaaa1111"], ["aaaa", "aaaa1111"], ["bbbb2222", "aaaa1111", "aaaa11"]):
        result = cli("compare", *args)
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and "the same run aaaa1111" in result.stderr
    assert cli("compare", "aaaa", "bbbb").exit_code == 0


def test_ui_on_a_busy_port_is_one_line_naming_it(tmp_path):
    pytest.importorskip("uvicorn", reason="the ui extra is part of the test extra")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = run_tracker("--store", str(tmp_path / "store"), "ui", "--port", str(port), "--no-open", timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"port {port} on 127.0.0.1 is in use" in proc.stderr and "--port" in proc.stderr
    assert "Errno" not in proc.stderr and "Traceback" not in proc.stderr

