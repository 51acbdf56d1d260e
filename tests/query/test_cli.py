"""``tracker query`` as a user runs it."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import orjson

from .support import run_tracker


def test_query_formats(rich_store: Path) -> None:
    sql = "SELECT run_id, step, name, value FROM metrics WHERE run_id = 'alpha' ORDER BY time, name"
    res = run_tracker("--store", str(rich_store), "query", sql, "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = orjson.loads(res.stdout)  # strict JSON: orjson refuses NaN literals
    assert [r["value"] for r in doc] == [0.5, 1.0, "Infinity", "NaN", "-Infinity", 1.0, 0.25]
    assert "torn" in res.stderr  # damage elsewhere in the store is reported, as one line each
    assert all(line.startswith("tracker: warning:") for line in res.stderr.splitlines())
    res = run_tracker("--store", str(rich_store), "query", sql, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert rows[3]["value"] == "NaN" and rows[2]["value"] == "inf"
    res = run_tracker("--store", str(rich_store), "query", "SELECT id, status, tags, lr FROM runs ORDER BY id")
    assert res.returncode == 0
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["id", "status", "tags", "lr"] and "crashed" in res.stdout


def test_query_json_columns_are_nested(rich_store: Path) -> None:
    res = run_tracker("--store", str(rich_store), "query", "SELECT config, tags FROM runs WHERE id = 'alpha'",
                      "--format", "json")
    (row,) = orjson.loads(res.stdout)
    assert row["config"]["nested"] == {"a": 1} and row["tags"] == ["x", "y"]


def test_query_errors_are_one_line(rich_store: Path) -> None:
    res = run_tracker("--store", str(rich_store), "query", "SELECT * FROM no_such_view")
    assert res.returncode == 1
    errors = [line for line in res.stderr.splitlines() if not line.startswith("tracker: warning:")]
    assert len(errors) == 1 and "no_such_view" in errors[0] and "Traceback" not in res.stderr
    res = run_tracker("--store", str(rich_store), "query", "SELECT 1/'a'")
    assert res.returncode == 1 and res.stderr.startswith("tracker:") and "Traceback" not in res.stderr
    res = run_tracker("--store", str(rich_store / "missing"), "query", "SELECT 1")
    assert res.returncode == 1 and "no store" in res.stderr


def test_sql_that_is_not_utf8_is_one_line(rich_store: Path) -> None:
    # "\udcff" reaches argv as the raw byte 0xff (the file system encoding's surrogateescape)
    res = run_tracker("--store", str(rich_store), "query", "select '\udcff'")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    errors = [line for line in res.stderr.splitlines() if not line.startswith("tracker: warning:")]
    assert errors == ["tracker: the SQL is not valid UTF-8: byte 0xff at character 9"]
