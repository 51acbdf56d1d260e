"""SQL that tries to write or to read outside the store: refused by the connection, the store byte-identical."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import tracker
from tracker.core.errors import QueryError
from tracker.core.format import encode_line

from ..childenv import child_environ

pytest.importorskip("duckdb", reason="the query extra (duckdb) is not installed")


def _snapshot(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (and the names of the folders), to compare before and after."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    s = tmp_path_factory.mktemp("hostile") / "store"
    with tracker.start_run("p", "indexed", store=s, run_id="indexed", config={"lr": 0.1},
                           system_metrics=False) as run:
        for i in range(5):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
    env = child_environ()
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(s), "index"], capture_output=True,
                         text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    with tracker.start_run("p", "plain", store=s, run_id="plain", config={"lr": 0.2, "LR": "upper"},
                           system_metrics=False) as run:
        for i in range(3):
            run.log({"loss": float(i)}, step=i)
    return s


def _segment(store: Path, run_id: str) -> Path:
    return next(p for p in (store / "runs" / run_id).glob("*.jsonl") if not p.name.startswith("edits"))


def _attacks(store: Path, outside: Path) -> list[str]:
    seg = _segment(store, "plain")
    run_dir = seg.parent
    idx = store / "index"
    return [
        f"COPY (SELECT 'x' AS a) TO '{seg}' (FORMAT csv)",
        f"COPY (SELECT 'x' AS a) TO '{seg}' (FORMAT csv, USE_TMP_FILE false)",
        f"COPY (SELECT 'x' AS a) TO '{run_dir / 'new.jsonl'}' (FORMAT json)",
        f"COPY (SELECT * FROM metrics) TO '{run_dir / 'm.parquet'}' (FORMAT parquet)",
        f"COPY runs TO '{idx / 'x.csv'}'",
        f"COPY (SELECT 1 AS a) TO '{outside / 'out.csv'}'",
        f"EXPORT DATABASE '{run_dir / 'exported'}'",
        f"EXPORT DATABASE '{outside / 'exported'}'",
        f"ATTACH '{run_dir / 'db.duckdb'}' AS x",
        f"ATTACH '{outside / 'db.duckdb'}' AS x",
        "INSTALL httpfs",
        "LOAD httpfs",
        "LOAD json",
        "FORCE INSTALL parquet",
        "SET enable_external_access = true",
        "RESET enable_external_access",
        "SET lock_configuration = false",
        "SET allowed_directories = ['/']",
        f"SET log_query_path = '{run_dir / 'q.log'}'",
        "SET VARIABLE x = 1",
        f"SELECT 1; COPY (SELECT 1 AS a) TO '{run_dir / 'two.csv'}'",
        f"EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{run_dir / 'e.csv'}'",
        f"EXPLAIN (FORMAT json) COPY (SELECT 1 AS a) TO '{run_dir / 'e.csv'}'",
        f"/* a comment */ COPY (SELECT 1 AS a) TO '{run_dir / 'c.csv'}'",
        "CREATE TABLE t AS SELECT 1",
        "CREATE OR REPLACE TEMP VIEW runs AS SELECT 1",
        "DROP VIEW metrics",
        "INSERT INTO runs (id) VALUES ('x')",
        f"IMPORT DATABASE '{run_dir}'",
        "PRAGMA enable_profiling",
        "CALL enable_logging()",
        "CHECKPOINT",
        f"SELECT * FROM query('COPY (SELECT 1) TO ''{run_dir / 'q.csv'}''')",
    ]


def test_every_write_capable_form_is_refused_and_the_store_is_unchanged(store, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    attacks = _attacks(store, outside)
    # A first read may build derived data under index/ (the readers' own, see DESIGN.md); then nothing changes.
    tracker.Store(store).sql("SELECT count(*) FROM records").fetchall()
    before = _snapshot(store)
    for sql in attacks:
        with pytest.raises(QueryError) as err:
            tracker.Store(store).sql(sql).fetchall()
        message = str(err.value)
        assert "read-only" in message or "locked" in message or "Parser Error" in message, (sql, message)
    assert _snapshot(store) == before
    assert list(outside.iterdir()) == []
    # The views still answer, indexed and unindexed runs alike.
    rows = tracker.Store(store).sql("SELECT run_id, count(*) FROM metrics GROUP BY run_id ORDER BY run_id").fetchall()
    assert rows == [("indexed", 5), ("plain", 3)]


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/hostname')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM read_text('{store}/runs/plain/../../../outside/secret.txt')",
    "SELECT * FROM read_text('{store}/../outside/secret.txt')",
    "SELECT * FROM read_text('file://{outside}/secret.txt')",
    "SELECT * FROM read_parquet('http://127.0.0.1:9/x.parquet')",
])
def test_reading_outside_the_store_is_refused(store, tmp_path, sql):
    outside = store.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("secret")
    with pytest.raises(QueryError) as err:
        tracker.Store(store).sql(sql.format(store=store, outside=outside)).fetchall()
    assert "secret" not in str(err.value).replace("secret.txt", "")


def test_reading_statements_still_run(store):
    s = tracker.Store(store)
    assert s.sql("DESCRIBE runs").fetchall()
    assert s.sql("SHOW TABLES").fetchall()
    assert s.sql("SUMMARIZE SELECT step FROM metrics").fetchall()
    assert s.sql("EXPLAIN SELECT * FROM metrics").fetchall()
    assert s.sql("FROM runs SELECT id ORDER BY id").fetchall() == [("indexed",), ("plain",)]
    assert s.sql("WITH m AS (SELECT * FROM metrics) SELECT count(*) FROM m").fetchall() == [(8,)]


def test_the_cli_refuses_copy_over_a_segment_in_one_line(store):
    seg = _segment(store, "plain")
    tracker.Store(store).sql("SELECT count(*) FROM records").fetchall()
    before = _snapshot(store)
    env = child_environ()
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "query",
                          f"COPY (SELECT 'x' AS a) TO '{seg}' (FORMAT csv)"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert "read-only: COPY statements are refused" in res.stderr
    assert _snapshot(store) == before
    assert len(tracker.Store(store).run("plain").metrics()["step"]) == 3


def test_timestamps_need_no_pytz(store):
    rows = tracker.Store(store).sql("SELECT id, to_timestamp(created_at) AS t FROM runs ORDER BY id").fetchall()
    info = tracker.Store(store).run("indexed").info
    assert rows[0][0] == "indexed"
    assert abs(rows[0][1].timestamp() - info.created_at) < 1e-3 if rows[0][1].tzinfo else True
    assert rows[0][1].tzinfo is None  # a UTC TIMESTAMP: Python's datetime, no pytz
    import calendar

    assert abs(calendar.timegm(rows[0][1].timetuple()) + rows[0][1].microsecond / 1e6 - info.created_at) < 1e-3
    env = child_environ()
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "query",
                          "select to_timestamp(created_at) AS t, now() AS n from runs", "--format", "json"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    assert "pytz" not in res.stderr and "Traceback" not in res.stderr
    assert len(orjson.loads(res.stdout)) == 2


def _forge_config(run_dir: Path, config: dict) -> None:
    """Rewrite the run's start line with ``config`` (as a store written before keys were checked holds it)."""
    seg = _segment(run_dir.parent.parent, run_dir.name)
    lines = seg.read_bytes().splitlines(keepends=True)
    env = orjson.loads(lines[0])
    env.pop("crc")
    env["data"]["config"] = config
    seg.write_bytes(encode_line(env) + b"".join(lines[1:]))


def test_a_stored_blank_or_clashing_config_key_does_not_break_queries(tmp_path):
    s = tmp_path / "store"
    with tracker.start_run("p", "odd", store=s, run_id="odd", config={"x": 1}, system_metrics=False) as run:
        run.log({"loss": 1.0}, step=0)
    _forge_config(s / "runs" / "odd", {"": 1, " ": 2, "a\x00b": 3, "lr": 0.1, "LR": 0.2, "ID": "clash", "x": 4})
    store = tracker.Store(s)
    assert store.run("odd").info.config[""] == 1
    cols = [c for c, *_ in store.sql("DESCRIBE runs").fetchall()]
    assert "lr" in cols and "config_LR" in cols and "config_ID" in cols and "" not in cols
    assert store.sql("SELECT x, lr, config_LR, config_ID FROM runs").fetchall() == [(4, 0.1, 0.2, "clash")]
    assert "" in store.sql("SELECT json_keys(config) FROM runs").fetchall()[0][0]
    assert store.sql("SELECT count(*) FROM metrics").fetchall() == [(1,)]
