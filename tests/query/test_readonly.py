"""SQL over a store the reader may not write: the same answers from the derived columns, no file created."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

import tracker
from tests.index.support import run_child

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

QUERIES = [
    "SELECT run_id, step, name, value::VARCHAR FROM metrics ORDER BY ALL",
    "SELECT run_id, schema, step, writer, seq, data::VARCHAR FROM records ORDER BY ALL",
    "SELECT run_id, name, count, min, max, last FROM metric_stats ORDER BY ALL",
    "SELECT id, name, status FROM runs ORDER BY id",
]

CHILD = """
import json, os, warnings
warnings.simplefilter("ignore")
import tracker
from tracker.query import query
import tracker.query.columnar, tracker.read.index.segments, tracker.read.index.catalog, tracker.read.index.build
import duckdb, pyarrow
QUERIES = {queries!r}
# Everything imported and DuckDB's JSON reader loaded first (a query that writes nothing), then the
# child reads as another user, whatever the permissions of the checkout and of the Python installation.
for q in QUERIES:
    query(tracker.open_store({warm!r}), q).fetchall()  # another copy: this store stays untouched
os.setgid(65534)
os.setuid(65534)
out = [[list(map(str, r)) for r in query(tracker.open_store({store!r}), q).fetchall()] for q in QUERIES]
print(json.dumps(out))
"""


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture
def shared_store():
    base = Path(tempfile.mkdtemp(prefix="tracker-sql-ro-"))  # outside the 0700 test folder
    os.chmod(base, 0o755)
    try:
        yield base / "store"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="dropping privileges needs root")
@pytest.mark.parametrize("index", ["none", "stale"])
def test_sql_on_a_store_the_reader_cannot_write(shared_store: Path, index: str) -> None:
    with tracker.start_run("p", "a", store=shared_store, run_id="aaa", system_metrics=False) as run:
        run.log({"loss": 1.0, "acc": float("nan")}, step=0)
        run.log({"loss": float("inf")}, step=0)
    if index == "stale":
        tracker.open_store(shared_store).sql("SELECT count(*) FROM records").fetchall()  # derived data exists
        with tracker.start_run(store=shared_store, run_id="aaa", resume=True, system_metrics=False) as run:
            run.log({"loss": 0.5, "late": 2}, step=3)  # then the run grows behind it
    else:
        shutil.rmtree(shared_store / "index", ignore_errors=True)
    for p in [shared_store, *shared_store.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        os.chmod(p, (mode | 0o444 | (0o111 if p.is_dir() else 0)) & ~0o022)
    before = tree(shared_store)
    from tracker.query import query

    ref = shared_store.parent / "reference"  # a copy: reading the original here would build its index
    shutil.copytree(shared_store, ref)
    expected = [[list(map(str, r)) for r in query(tracker.open_store(ref), q, use_index=False).fetchall()]
                for q in QUERIES]
    proc = run_child(CHILD.format(store=str(shared_store), warm=str(ref), queries=QUERIES))
    assert json.loads(proc.stdout) == expected
    assert expected[0] and expected[2]
    assert tree(shared_store) == before
