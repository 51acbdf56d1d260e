"""SQL over a folder store: every view against the Python reader, damage, errors."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

import tracker
from tracker.query import query

from .support import norm, reader_metrics, reader_records, sql_rows


def test_runs_view_matches_reader(rich_store: Path) -> None:
    st = tracker.open_store(rich_store)
    infos = {i.id: i for i in st.runs()}
    rel = query(st, "SELECT * FROM runs")
    cols = rel.columns
    assert cols[:8] == ["id", "name", "project", "status", "created_at", "ended_at", "tags", "config"]
    rows = {r[0]: dict(zip(cols, r, strict=True)) for r in rel.fetchall()}
    assert set(rows) == set(infos)
    for rid, info in infos.items():
        row = rows[rid]
        assert (row["name"], row["project"], row["status"]) == (info.name, info.project, info.status)
        assert (row["created_at"], row["ended_at"]) == (info.created_at, info.ended_at)
        assert orjson.loads(row["tags"]) == info.tags
        assert orjson.loads(row["config"]) == info.config
    statuses = {rid: r["status"] for rid, r in rows.items()}
    assert statuses == {"alpha": "finished", "beta": "failed", "multi": "finished", "crash": "crashed",
                        "cut": "crashed", "damaged": "finished", "live": "running"}
    types = dict(zip(cols, (str(t) for t in rel.types), strict=True))
    # lr holds 0.01 and 1: DOUBLE; batch only ints; opt strings; a nested dict is JSON.
    assert types["lr"] == "DOUBLE" and types["batch"] == "BIGINT" and types["opt"] == "VARCHAR"
    assert types["nested"] == "JSON" and types["flag"] == "BOOLEAN"
    # "name" in the config collides with the run's name column.
    assert types["config_name"] == "VARCHAR" and rows["alpha"]["config_name"] == "cfg"
    assert rows["alpha"]["name"] == "alpha" and rows["beta"]["lr"] == 1.0


def test_records_view_matches_reader_and_warnings(rich_store: Path) -> None:
    expected, reader_warnings = reader_records(rich_store)
    rows, sql_warnings = sql_rows(tracker.open_store(rich_store),
                                  "SELECT run_id, schema, step, time, writer, seq, data FROM records")
    got = sorted(((r[0], r[1], r[2], r[3], r[4], r[5], norm(orjson.loads(r[6]))) for r in rows), key=repr)
    assert got == expected
    assert sql_warnings == reader_warnings
    kinds = " ".join(sql_warnings)
    assert "torn" in kinds and "checksum" in kinds and "corrupt" in kinds
    # The record whose byte changed is not read; the one after the garbage line is.
    steps = sorted(r[2] for r in got if r[0] == "damaged")
    assert steps == [0, 2, 3, 4, 5]
    # Whole JSON but no newline: torn, so not read (the reader does not either).
    assert sorted(r[2] for r in got if r[0] == "cut") == [0]


def test_metrics_view_long_format(rich_store: Path) -> None:
    rows, _ = sql_rows(tracker.open_store(rich_store), "SELECT run_id, step, time, name, value FROM metrics")
    got = sorted(((r[0], r[1], r[2], r[3], norm(r[4])) for r in rows), key=repr)
    assert got == reader_metrics(rich_store)
    rel = query(tracker.open_store(rich_store), "SELECT * FROM metrics")
    assert [str(t) for t in rel.types] == ["VARCHAR", "BIGINT", "DOUBLE", "VARCHAR", "DOUBLE"]
    vals, _ = sql_rows(tracker.open_store(rich_store),
                       "SELECT step, name, value FROM metrics WHERE run_id = 'alpha' ORDER BY time, name")
    assert [(s, n, norm(v)) for s, n, v in vals] == [
        (0, "acc", 0.5), (0, "loss", 1.0), (1, "acc", "Infinity"), (1, "loss", "NaN"),
        (1, "loss", "-Infinity"), (1, "ok", 1.0), (0, "loss", 0.25)]
    # NaN is a DOUBLE NaN, not a string, so SQL sees it as a number.
    assert sql_rows(tracker.open_store(rich_store),
                    "SELECT count(*) FROM metrics WHERE isnan(value)")[0] == [(1,)]
    # Metrics logged only early in a crashed run (not in its tail) are there too.
    assert sql_rows(tracker.open_store(rich_store),
                    "SELECT count(*) FROM metrics WHERE run_id = 'crash' AND name = 'early'")[0] == [(5,)]


def test_typed_schema_view(rich_store: Path) -> None:
    st = tracker.open_store(rich_store)
    rel = query(st, 'SELECT * FROM "fft.loss_point"')
    types = dict(zip(rel.columns, (str(t) for t in rel.types), strict=True))
    assert types == {"run_id": "VARCHAR", "step": "BIGINT", "time": "DOUBLE", "model_id": "VARCHAR",
                     "total_loss": "DOUBLE", "mel_err": "DOUBLE", "spec_err": "DOUBLE", "welch_err": "DOUBLE",
                     "mean_gate": "DOUBLE"}
    (row,) = rel.fetchall()
    rec = next(st.run("alpha").records("fft.loss_point"))
    assert row[0] == "alpha" and row[1] == rec.step and row[2] == rec.time
    assert norm(dict(zip(rel.columns[3:], row[3:], strict=True))) == norm(rec.data)


def test_field_types() -> None:
    from typing import Literal, Optional

    from tracker.query.sql import field_type

    assert field_type(float) == "DOUBLE" and field_type(int) == "BIGINT" and field_type(bool) == "BOOLEAN"
    assert field_type(str) == "VARCHAR" and field_type(Literal["a", "b"]) == "VARCHAR"
    assert field_type(list[float]) == "DOUBLE[]" and field_type(list[int]) == "BIGINT[]"
    assert field_type(tuple[int, int]) == "BIGINT[]" and field_type(Optional[list[float]]) == "DOUBLE[]"  # noqa: UP045
    assert field_type(dict[str, float]) == "JSON" and field_type(list[str]) == "JSON"
    assert field_type(float | int) == "DOUBLE"


def test_query_errors(rich_store: Path) -> None:
    st = tracker.open_store(rich_store)
    with pytest.raises(tracker.QueryError, match="nope"):
        query(st, "SELECT * FROM nope")
    with pytest.raises(tracker.QueryError, match="(?i)syntax|parser"):
        query(st, "SELEC 1")
    with pytest.raises(tracker.QueryError):
        query(st, "   ")
    assert issubclass(tracker.QueryError, tracker.TrackerError)


def test_without_duckdb_names_the_extra(rich_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(tracker.TrackerError, match=r'pip install "tracker-core\[query\]"'):
        query(tracker.open_store(rich_store), "SELECT 1")


def test_relation_api(rich_store: Path) -> None:
    rel = tracker.open_store(rich_store).sql("SELECT name, status FROM runs ORDER BY name")
    assert rel.fetchall()[0] == ("alpha", "finished")
    assert rel.filter("status = 'crashed'").count("*").fetchall()[0][0] == 2


def test_only_runs_reads_no_segment(rich_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracker.query.sql as sql

    def no(*a: object, **k: object) -> None:
        raise AssertionError("a segment was scanned for a query on runs only")

    monkeypatch.setattr(sql, "scan_segment", no)
    assert query(tracker.open_store(rich_store), "SELECT count(*) FROM runs").fetchall()[0][0] == 7
