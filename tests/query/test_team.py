"""The team store on a real PostgreSQL server: sync, idempotence, concurrency, follow, kill -9, reading."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import orjson
import psycopg
import pytest

import tracker
from tracker.team.postgres import LAYOUT, TeamStore, mask_url, sync

from .support import child, norm, reader_metrics, reader_records, run_tracker, wait_for


def db_count(url: str, sql: str = "SELECT count(*) FROM tracker_events") -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchone()[0]


def local_events(store: Path) -> int:
    """Sound lines of every segment: what a full sync must hold."""
    from tracker.core.format import LineError, parse_line

    n = 0
    for seg in store.glob("runs/*/*.jsonl"):
        for line in seg.read_bytes().split(b"\n")[:-1]:  # a torn last line is not an event
            try:
                parse_line(line)
                n += 1
            except LineError:
                pass
    return n


def quiet_sync(store: Path, url: str, **kw: object) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sync(tracker.open_store(store), url, **kw)


def test_sync_is_idempotent_and_reads_back(rich_store: Path, pg_url: str) -> None:
    rep = quiet_sync(rich_store, pg_url)
    total = local_events(rich_store)
    assert rep.events_new == total == db_count(pg_url)
    again = quiet_sync(rich_store, pg_url)
    assert again.events_new == 0 and db_count(pg_url) == total
    team = tracker.open_store(pg_url)
    assert isinstance(team, TeamStore)
    local = {i.id: i for i in tracker.open_store(rich_store).runs()}
    remote = {i.id: i for i in team.runs()}
    assert set(remote) == set(local)
    for rid, info in local.items():
        r = remote[rid]
        assert (r.name, r.project, r.status, r.config, r.tags, r.created_at) == \
               (info.name, info.project, info.status, info.config, info.tags, info.created_at), rid
    assert remote["beta"].error["type"] == "RuntimeError"
    # Records, metrics and summaries through the same reading API.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, _ = reader_records(rich_store)
    got = sorted(((rid, r.schema, r.step, r.time, r.writer, r.seq, norm(r.data))
                  for rid in remote for r in team.run(rid).records()), key=repr)
    assert got == expected
    alpha = team.run("alp")
    assert [norm(v) for v in alpha.metrics()["loss"].tolist()] == [1.0, "NaN", "-Infinity", 0.25]
    assert len(alpha.table("fft.loss_point")) == 1
    assert {s.summarizer for s in alpha.summarize()} >= {"fft.loss_curves"}
    with pytest.raises(tracker.RunNotFound):
        team.run("nope")
    # SQL over the database gives what it gives over the folder.
    rows = team.sql("SELECT run_id, step, time, name, value FROM metrics").fetchall()
    assert sorted(((r[0], r[1], r[2], r[3], norm(r[4])) for r in rows), key=repr) == reader_metrics(rich_store)


def test_two_stores_sync_concurrently(tmp_path: Path, pg_url: str) -> None:
    stores = [tmp_path / "a", tmp_path / "b"]
    for i, st in enumerate(stores):
        for r in range(3):
            with tracker.start_run("team", f"m{i}-{r}", store=st, run_id=f"m{i}r{r}") as run:
                for s in range(300):
                    run.log({"loss": 1.0 / (s + 1), "machine": float(i)}, step=s)
    # Two machines with their own stores, and a third process syncing store a again at once.
    procs = [subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(st), "sync", pg_url,
                               "--batch-size", "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for st in (*stores, stores[0])]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert db_count(pg_url) == local_events(stores[0]) + local_events(stores[1])
    assert db_count(pg_url, "SELECT count(*) FROM tracker_runs") == 6
    assert db_count(pg_url, "SELECT count(*) FROM (SELECT run_id, writer, seq, count(*) FROM tracker_events "
                            "GROUP BY 1, 2, 3 HAVING count(*) > 1) AS d") == 0


def test_kill_9_then_resume_loses_and_doubles_nothing(tmp_path: Path, pg_url: str) -> None:
    from tracker.core.format import FORMAT_VERSION, encode_line

    store = tmp_path / "big"
    for r in range(4):
        d = store / "runs" / f"big{r}"
        d.mkdir(parents=True)
        w = f"elsewhere-1-00000{r}"
        lines = [encode_line({"v": FORMAT_VERSION, "kind": "run_started", "schema": None, "step": None,
                              "time": 1.7e9 + r, "w": w, "seq": 1,
                              "data": {"host": "elsewhere", "pid": 1, "writer": w, "name": f"big{r}",
                                       "project": "p", "config": {}, "tags": []}})]
        lines += [encode_line({"v": FORMAT_VERSION, "kind": "record", "schema": "metrics", "step": s,
                               "time": 1.7e9 + r + s * 1e-4, "w": w, "seq": s + 2, "data": {"loss": s * 0.5}})
                  for s in range(15_000)]
        (d / f"{w}.jsonl").write_bytes(b"".join(lines))
    total = local_events(store)
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "sync", pg_url,
                             "--batch-size", "200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: proc.poll() is not None or (
        _safe_count(pg_url) > 2000), timeout=60, every=0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = _safe_count(pg_url)
    assert 0 < partial < total, "the sync finished before it could be killed"
    res = run_tracker("--store", str(store), "sync", pg_url)
    assert res.returncode == 0, res.stderr
    assert db_count(pg_url) == total
    assert f"{total - partial} new" in res.stdout
    team = TeamStore(pg_url)
    steps = [r.step for r in team.run("big2").records()]
    assert steps == list(range(15_000))


def _safe_count(url: str) -> int:
    try:
        return db_count(url)
    except psycopg.Error:
        return 0


def _follow(tmp_path: Path, pg_url: str) -> tuple[Path, subprocess.Popen]:
    """An empty store and a real ``tracker sync --follow`` of it, polling every 0.2 s."""
    store = tmp_path / "s"
    (store / "runs").mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "sync", pg_url, "--follow",
                             "--interval", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return store, proc


def test_follow_sees_a_record_logged_in_another_process(tmp_path: Path, pg_url: str) -> None:
    store, proc = _follow(tmp_path, pg_url)
    try:
        writer = child(store, """
            import time, tracker
            run = tracker.start_run("live", "follow-me", run_id="fol")
            run.log({"loss": 0.5}, step=0)
            print("logged", flush=True)
            time.sleep(60)
        """, wait=False)
        assert writer.stdout.readline().strip() == "logged"
        t0 = time.monotonic()

        def seen() -> bool:
            try:
                team = TeamStore(pg_url)
                return [r.data["loss"] for r in team.run("fol").records()] == [0.5] and \
                    team.run("fol").info.status == "running"
            except tracker.TrackerError:
                return False

        wait_for(seen, timeout=15, every=0.2)
        assert time.monotonic() - t0 < 10
        writer.kill()
        writer.wait()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "synced" in out


def test_follow_sees_the_finish(tmp_path: Path, pg_url: str) -> None:
    store, proc = _follow(tmp_path, pg_url)
    try:
        child(store, """
            import tracker, time
            with tracker.start_run("live", "done", run_id="done") as run:
                run.log({"loss": 0.5}, step=0)
                time.sleep(1.0)
                run.log({"loss": 0.1}, step=1)
        """)

        def finished() -> bool:
            try:
                v = TeamStore(pg_url).run("done")
                return v.info.status == "finished" and len(list(v.records())) == 2
            except tracker.TrackerError:
                return False

        wait_for(finished, timeout=15, every=0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        finally:
            proc.kill()  # never left behind, even when the interrupt did not stop it


def test_cli_reads_the_database(rich_store: Path, pg_url: str) -> None:
    quiet_sync(rich_store, pg_url)
    res = run_tracker("--store", pg_url, "runs", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert {r["id"]: r["status"] for r in orjson.loads(res.stdout)}["crash"] == "crashed"
    res = run_tracker("runs", env={"TRACKER_STORE": pg_url})
    assert "alpha" in res.stdout and res.returncode == 0
    res = run_tracker("--store", pg_url, "show", "alpha")
    assert res.returncode == 0, res.stderr
    assert "alpha" in res.stdout and "fft" in res.stdout.lower()
    res = run_tracker("--store", pg_url, "query", "SELECT count(*) AS n FROM records WHERE run_id = 'multi'",
                      "--format", "json")
    assert res.returncode == 0, res.stderr
    assert orjson.loads(res.stdout) == [{"n": 4}]  # 2.0, then 1.5 and 1.25 (a child), then 1.0
    res = run_tracker("--store", pg_url, "compare", "alpha", "beta")
    assert res.returncode == 0, res.stderr
    res = run_tracker("--store", pg_url, "show", "nope")
    assert res.returncode == 1 and res.stderr.count("\n") == 1
    assert "s3cret" not in res.stderr + res.stdout


def test_errors_are_one_line_and_mask_the_password(pg_server: object, pg_url: str, tmp_path: Path) -> None:
    store = tmp_path / "s"
    (store / "runs").mkdir(parents=True)
    closed = f"postgresql://tracker:s3cret-pw@127.0.0.1:{_closed_port()}/x"
    res = run_tracker("--store", str(store), "sync", closed)
    assert res.returncode == 1 and res.stderr.count("\n") == 1
    assert "cannot connect" in res.stderr and "***" in res.stderr and "s3cret" not in res.stderr
    wrong = pg_url.replace("s3cret-pw", "wrong-pw")
    res = run_tracker("--store", str(store), "sync", wrong)
    assert res.returncode == 1 and res.stderr.count("\n") == 1
    assert "password authentication failed" in res.stderr and "wrong-pw" not in res.stderr
    res = run_tracker("--store", wrong, "runs")
    assert res.returncode == 1 and "wrong-pw" not in res.stderr
    # Credentials from PG* variables: the URL holds no password.
    res = run_tracker("--store", str(store), "sync", pg_url.replace(":s3cret-pw@", "@"),
                      env={"PGPASSWORD": "s3cret-pw"})
    assert res.returncode == 0, res.stderr
    # A database written by a newer tracker is refused, by sync and by readers.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO tracker_layout (layout) VALUES (%s)", (LAYOUT + 1,))
    res = run_tracker("--store", str(store), "sync", pg_url)
    assert res.returncode == 1 and f"layout {LAYOUT + 1}" in res.stderr and res.stderr.count("\n") == 1
    with pytest.raises(tracker.TrackerError, match=f"layout {LAYOUT + 1}"):
        TeamStore(pg_url)
    assert mask_url("postgresql://u:pw@h:5/d") == "postgresql://u:***@h:5/d"


def _closed_port() -> int:
    from .pg import free_port

    return free_port()
