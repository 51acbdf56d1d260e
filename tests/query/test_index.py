"""SQL over the derived columns: the same answers as over the JSONL, whatever state ``index/`` is in."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import orjson
import pytest

import tracker
from tracker.query import query

from .support import norm, run_tracker

pytest.importorskip("pyarrow", reason="the derived columns are scanned through Arrow")

QUERIES = [
    "SELECT run_id, schema, step, time, writer, seq, data FROM records",
    "SELECT run_id, step, time, name, value FROM metrics",
    'SELECT * FROM "fft.loss_point"',
    "SELECT * FROM runs",
    "SELECT * FROM metric_stats",
    "SELECT m.run_id, min(m.value) AS best, r.lr FROM metrics m JOIN runs r ON r.id = m.run_id "
    "WHERE m.name = 'loss' AND NOT isnan(m.value) GROUP BY ALL ORDER BY best LIMIT 3",
    "SELECT schema, count(*), sum(step), min(time) FROM records GROUP BY schema",
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


def edit(store: Path) -> None:
    st = tracker.open_store(store)
    st.rename("beta", "beta-renamed")
    st.tag("alpha", add=["best"])
    st.update_config("multi", {"lr": 0.3, "extra": "yes"})


def test_same_answers_with_and_without_the_derived_columns(store_copy: Path, monkeypatch) -> None:  # noqa: ANN001
    edit(store_copy)
    ref = answers(store_copy, use_index=False)
    assert ref[0] and ref[1] and ref[2] and ref[4]
    shutil.rmtree(store_copy / "index", ignore_errors=True)
    assert answers(store_copy) == ref  # first read: built by the query
    assert (store_copy / "index" / "segments").is_dir()
    assert answers(store_copy) == ref  # later reads: from the derived files
    res = run_tracker("--store", str(store_copy), "index")
    assert res.returncode == 0, res.stderr
    assert answers(store_copy) == ref
    monkeypatch.setenv("TRACKER_INDEX", "off")
    assert answers(store_copy) == ref
    monkeypatch.delenv("TRACKER_INDEX")
    shutil.rmtree(store_copy / "index")
    assert answers(store_copy) == ref


def test_metric_stats_agree_with_the_metrics_view(store_copy: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st = tracker.open_store(store_copy)
        got = query(st, "SELECT run_id, name, count, min, max FROM metric_stats ORDER BY ALL").fetchall()
        want = query(st, "SELECT run_id, name, count(*), min(value) FILTER (WHERE NOT isnan(value)), "
                         "max(value) FILTER (WHERE NOT isnan(value)) FROM metrics GROUP BY ALL ORDER BY ALL",
                     use_index=False).fetchall()
        assert norm(got) == norm(want)
        last = {(r, n): v for r, n, v in query(st, "SELECT run_id, name, last FROM metric_stats").fetchall()}
        seen = 0
        for info in st.runs():
            recs = list(st.run(info.id).records("metrics"))  # in log order
            for name in {k for r in recs for k in r.data}:
                logged = [r.data[name] for r in recs if name in r.data]
                assert norm(last[(info.id, name)]) == norm(float(logged[-1])), (info.id, name)
                seen += 1
        assert seen == len(last) > 5


def test_lines_appended_after_indexing_are_seen(store_copy: Path) -> None:
    assert run_tracker("--store", str(store_copy), "index").returncode == 0
    with tracker.start_run(store=store_copy, run_id="alpha", resume=True) as run:
        run.log({"loss": -5.0, "late": 1.0}, step=10)
    q = "SELECT count(*) FROM metrics WHERE run_id = 'alpha' AND name = 'late'"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert query(tracker.open_store(store_copy), q).fetchall() == [(1,)]
    assert answers(store_copy) == answers(store_copy, use_index=False)


def test_damaged_derived_files_change_no_answer(store_copy: Path) -> None:
    ref = answers(store_copy, use_index=False)
    assert run_tracker("--store", str(store_copy), "index").returncode == 0
    rng = random.Random(7)
    for f in sorted((store_copy / "index").rglob("*.idx")):
        data = bytearray(f.read_bytes())
        for _ in range(8):
            data[rng.randrange(len(data))] = rng.randrange(256)
        f.write_bytes(bytes(data))
    assert answers(store_copy) == ref


def test_index_cli_and_drop(store_copy: Path) -> None:
    (store_copy / "index").mkdir(exist_ok=True)
    (store_copy / "index" / "manifest.json").write_text("{}")  # the Parquet index of earlier versions
    res = run_tracker("--store", str(store_copy), "index")
    assert res.returncode == 0, res.stderr
    assert "indexed 7 runs" in res.stdout and "records" in res.stdout
    assert not (store_copy / "index" / "manifest.json").exists()
    res = run_tracker("--store", str(store_copy), "index", "--format", "json")
    doc = orjson.loads(res.stdout)
    assert doc["runs"] == 7 and doc["built"] <= 1 and doc["records"] > 0 and doc["index_bytes"] > 0
    ref = answers(store_copy, use_index=False)
    res = run_tracker("--store", str(store_copy), "index", "--drop")
    assert res.returncode == 0, res.stderr and "dropped" in res.stdout
    assert [p.name for p in (store_copy / "index").iterdir()] == [".lock"]
    assert answers(store_copy) == ref


def _big_store(store: Path, runs: int, n: int) -> None:
    """Runs written by a child process (fast), so that warming them takes a while."""
    code = f"""
import tracker
for i in range({runs}):
    with tracker.start_run("p", f"r{{i}}", store={str(store)!r}, config={{"lr": i / 100}}) as run:
        for s in range({n}):
            run.log({{"loss": 1.0 / (s + 1) + i, "acc": s / {n}, "nan": float("nan") if s % 7 == 0 else s}},
                    step=s)
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_a_second_index_waits_for_the_first(tmp_path: Path) -> None:
    from tracker.query.index import index_lock

    store = tmp_path / "store"
    _big_store(store, 4, 200)
    with index_lock(store):
        proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "index"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The child says it waits as soon as it finds the lock taken (whatever the machine's load),
        # and goes on waiting while the lock is held here.
        said = proc.stderr.readline()
        assert "another `tracker index` is running" in said
        time.sleep(0.5)
        assert proc.poll() is None
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert err.strip() == ""  # the one line, and nothing more
    # Two at once, for real: both finish, and the answers are right.
    procs = [subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "index", "--rebuild"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert answers(store) == answers(store, use_index=False)


def test_kill_9_of_index_at_random_points(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _big_store(store, 30, 2000)
    ref = answers(store, use_index=False)
    shutil.rmtree(store / "index", ignore_errors=True)
    cmd = [sys.executable, "-m", "tracker", "--store", str(store), "index", "--jobs", "2"]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    whole = time.monotonic() - t0  # one build from nothing, start included: the kills fall within it
    rng = random.Random(int(os.environ.get("TRACKER_TEST_SEED", "22")))
    killed = 0
    for _ in range(10):
        shutil.rmtree(store / "index", ignore_errors=True)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.05, 0.95) * whole)
        if proc.poll() is None:
            killed += 1
            os.killpg(proc.pid, signal.SIGKILL)  # the workers too
        proc.wait()
        if rng.random() < 0.5:
            assert answers(store) == ref  # a reader on what the killed one left
    assert killed >= 5  # most rounds really died mid-way
    assert answers(store) == ref
    res = run_tracker("--store", str(store), "verify")
    assert res.returncode == 0, res.stdout + res.stderr
    res = run_tracker("--store", str(store), "index")
    assert res.returncode == 0, res.stderr
    assert not [p for p in (store / "index").rglob("*.tmp")]  # what the killed ones left is gone
    assert answers(store) == ref


def test_many_metric_names_take_the_long_table(store_copy: Path, monkeypatch) -> None:  # noqa: ANN001
    """Past WIDE_MAX names the views are built another way (a long table, JSON text): the same answers."""
    import tracker.query.columnar as columnar

    ref = answers(store_copy, use_index=False)
    monkeypatch.setattr(columnar, "WIDE_MAX", 1)
    assert answers(store_copy) == ref
    with tracker.start_run(store=store_copy, run_id="wide") as run:
        for s in range(3):
            run.log({f"layer{i}/grad": float(i * s) if i % 5 else float("nan") for i in range(40)}, step=s)
            run.log({"n": s, "ok": s % 2 == 0}, step=s)
    monkeypatch.setattr(columnar, "WIDE_MAX", 32)
    assert answers(store_copy) == answers(store_copy, use_index=False)
