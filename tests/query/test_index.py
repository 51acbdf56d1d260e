"""The Parquet index: same answers as the JSONL scan, incremental, stale runs read from JSONL."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import orjson

import tracker
from tracker.query import query
from tracker.query.index import build_index

from .support import norm, run_tracker

QUERIES = [
    "SELECT run_id, schema, step, time, writer, seq, data FROM records",
    "SELECT run_id, step, time, name, value FROM metrics",
    'SELECT * FROM "fft.loss_point"',
    "SELECT * FROM runs",
    "SELECT m.run_id, min(m.value) AS best, r.lr FROM metrics m JOIN runs r ON r.id = m.run_id "
    "WHERE m.name = 'loss' AND NOT isnan(m.value) GROUP BY ALL ORDER BY best LIMIT 3",
]


def answers(store: Path, use_index: bool = True) -> list[list]:
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for q in QUERIES:
            rows = query(tracker.open_store(store), q, use_index=use_index).fetchall()
            out.append(sorted((tuple(norm(orjson.loads(v)) if isinstance(v, str) and v[:1] in "{[" else norm(v)
                                     for v in r) for r in rows), key=repr))
    return out


def test_index_gives_the_raw_scan_answers(store_copy: Path) -> None:
    raw = answers(store_copy, use_index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = build_index(tracker.open_store(store_copy))
    assert rep.indexed == 6 and rep.skipped_running == 1 and rep.total_runs == 6
    assert (store_copy / "index" / "manifest.json").exists()
    jsonl, parquet = rep.per_record()
    assert rep.records > 0 and jsonl is not None and parquet is not None
    assert answers(store_copy) == raw
    # Incremental: nothing changed, nothing indexed.
    assert build_index(tracker.open_store(store_copy)).indexed == 0
    # Deleting the index changes no answer.
    shutil.rmtree(store_copy / "index")
    assert answers(store_copy) == raw


def test_a_run_appended_to_after_indexing_is_read_from_jsonl(store_copy: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_index(tracker.open_store(store_copy))
        with tracker.start_run(store=store_copy, run_id="alpha", resume=True) as run:
            run.log({"loss": -5.0, "late": 1.0}, step=10)
    q = "SELECT count(*) FROM metrics WHERE run_id = 'alpha' AND name = 'late'"
    assert query(tracker.open_store(store_copy), q).fetchall() == [(1,)]
    assert answers(store_copy) == answers(store_copy, use_index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = build_index(tracker.open_store(store_copy))
    assert rep.indexed == 1
    assert query(tracker.open_store(store_copy), q).fetchall() == [(1,)]
    assert answers(store_copy) == answers(store_copy, use_index=False)


def test_index_reads_no_jsonl_of_indexed_runs(store_copy: Path, monkeypatch) -> None:  # noqa: ANN001
    import tracker.query.sql as sql

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_index(tracker.open_store(store_copy))
    seen = []
    real = sql.scan_segment
    monkeypatch.setattr(sql, "scan_segment", lambda rid, *a, **k: seen.append(rid) or real(rid, *a, **k))
    query(tracker.open_store(store_copy), "SELECT count(*) FROM records").fetchall()
    assert set(seen) == {"live"}


def test_unreadable_manifest_is_reported_and_ignored(store_copy: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_index(tracker.open_store(store_copy))
    (store_copy / "index" / "manifest.json").write_text("{not json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n = query(tracker.open_store(store_copy), "SELECT count(*) FROM records").fetchall()
    assert any("index not used" in str(w.message) for w in caught)
    assert n == query(tracker.open_store(store_copy), "SELECT count(*) FROM records", use_index=False).fetchall()


def test_index_cli(store_copy: Path) -> None:
    res = run_tracker("--store", str(store_copy), "index")
    assert res.returncode == 0, res.stderr
    assert "indexed 6 runs" in res.stdout and "1 still running" in res.stdout
    assert "bytes per record: JSONL" in res.stdout
    res = run_tracker("--store", str(store_copy), "index", "--format", "json")
    doc = orjson.loads(res.stdout)
    assert doc["indexed"] == 0 and doc["runs"] == 6
    assert doc["parquet_bytes_per_record"] < doc["jsonl_bytes_per_record"]
