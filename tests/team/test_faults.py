"""The team store when things go wrong, and as users reach it: a dropped connection, a half-synced run,
an older layout, ``tracker ui`` and ``create_app`` on a URL, ``Api()`` and ``open_store``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import psycopg
import pytest

import tracker
from tracker.core.format import FORMAT_VERSION, encode_line
from tracker.team.postgres import LAYOUT, TeamStore, sync

from ..query.pg import PASSWORD
from ..query.support import run_tracker, wait_for


def quiet_sync(store: Path, url: str, **kw: object) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sync(tracker.open_store(store), url, **kw)


def test_dropped_connection_is_503_then_reconnects(pair) -> None:
    from starlette.testclient import TestClient

    import tracker.ui

    _, url, ids = pair
    with TestClient(tracker.ui.create_app(url)) as client:
        assert client.get("/api/runs").status_code == 200
        # The server ends every session of this database (a restart, a failover, an idle timeout).
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        res = client.get(f"/api/runs/{ids['alpha']}/metrics")
        assert res.status_code == 503
        msg = res.json()["error"]
        assert "cannot be reached" in msg and "***" in msg and PASSWORD not in msg and "\n" not in msg
        res = client.get(f"/api/runs/{ids['alpha']}/metrics")
        assert res.status_code == 200 and res.json()["records"] == 51


def _segment(path: Path, n: int, finished: bool) -> int:
    """A run's segment of ``n`` metrics records (and its finish when ``finished``); returns its events."""
    w = path.stem
    lines = [encode_line({"v": FORMAT_VERSION, "kind": "run_started", "schema": None, "step": None,
                          "time": 1.7e9, "w": w, "seq": 1,
                          "data": {"host": "elsewhere", "pid": 1, "writer": w, "name": "half", "project": "p",
                                   "config": {}, "tags": []}})]
    lines += [encode_line({"v": FORMAT_VERSION, "kind": "record", "schema": "metrics", "step": s,
                           "time": 1.7e9 + s * 1e-3, "w": w, "seq": s + 2, "data": {"loss": 1.0 / (s + 1)}})
              for s in range(n)]
    if finished:
        lines.append(encode_line({"v": FORMAT_VERSION, "kind": "run_finished", "schema": None, "step": None,
                                  "time": 1.7e9 + n, "w": w, "seq": n + 2,
                                  "data": {"status": "finished", "error": None, "records": n, "max_step": n - 1,
                                           "last": {"loss": 1.0 / n}}}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return len(lines)


def test_a_run_synced_half_way_is_never_finished(tmp_path: Path, pg_url: str) -> None:
    store = tmp_path / "s"
    total = _segment(store / "runs" / "half" / "elsewhere-1-000001.jsonl", 60_000, finished=True)
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "sync", pg_url,
                             "--batch-size", "500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def synced() -> int:
        try:
            with psycopg.connect(pg_url) as conn:
                return conn.execute("SELECT count(*) FROM tracker_events").fetchone()[0]
        except psycopg.Error:
            return 0

    wait_for(lambda: proc.poll() is not None or synced() > 3000, timeout=60, every=0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = synced()
    assert 0 < partial < total, "the sync finished before it could be killed"
    team = TeamStore(pg_url)
    view = team.run("half")
    assert view.info.status == "running"  # its writer was seen moments ago; later, crashed (the heartbeat rule)
    cols = view.metrics()
    assert cols["step"].tolist() == list(range(cols["step"].size)) and 0 < cols["step"].size < 60_000
    assert view.metric_stats()["loss"]["count"] == cols["step"].size
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as if the writer had been silent for ten minutes
        conn.execute("UPDATE tracker_writers SET seen_at = now() - interval '10 minutes'")
    assert TeamStore(pg_url).run("half").info.status == "crashed"
    seen, cursor = view.records_after({})  # what `tracker tail -f` printed so far
    # The next sync finishes it: every record once, and now it is finished.
    quiet_sync(store, pg_url)
    more, _ = view.records_after(cursor)  # and what it prints next
    assert [r.step for r in seen + more] == list(range(60_000))
    view = TeamStore(pg_url).run("half")
    assert view.info.status == "finished"
    assert view.metrics()["step"].tolist() == list(range(60_000))
    assert view.metric_stats()["loss"]["count"] == 60_000


def test_a_new_run_is_never_listed_without_its_writer(tmp_path: Path, pg_url: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader looking at any moment of a sync sees a new run absent or running (then finished), never crashed
    for want of writer rows that are on their way."""
    from tracker.team.postgres import Syncer

    store = tmp_path / "s"
    with tracker.start_run(project="p", name="new", store=store, run_id="new") as run:
        for i in range(12):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
    seen: list[str | None] = []

    def look() -> None:
        found = [i.status for i in TeamStore(pg_url).runs() if i.id == "new"]
        seen.append(found[0] if found else None)

    for name in ("_sync_segment", "_commit", "_sync_info"):
        original = getattr(Syncer, name)

        def spied(self: Syncer, *args: object, _original: object = original, **kw: object) -> object:
            look()
            try:
                return _original(self, *args, **kw)  # type: ignore[operator]
            finally:
                look()

        monkeypatch.setattr(Syncer, name, spied)
    quiet_sync(store, pg_url, batch=4)  # several commits of the one writer
    assert len(seen) >= 8 and seen[0] is None and seen[-1] == "finished"
    assert set(seen) <= {None, "running", "finished"}, seen
    assert "running" in seen  # listed while its first rows were in and the rest on their way


def test_an_older_layout_is_named_by_readers_and_migrated_by_sync(tmp_path: Path, pg_url: str) -> None:
    from tracker.team.derived import DDL_2

    store = tmp_path / "s"
    _segment(store / "runs" / "old" / "elsewhere-1-000001.jsonl", 300, finished=True)
    quiet_sync(store, pg_url)
    expected = TeamStore(pg_url).run("old").metric_stats()
    # The database as a layout-1 tracker left it: no derived tables.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for stmt in DDL_2:
            words = stmt.split()
            if words[0] == "CREATE":
                conn.execute(f"DROP {words[1]} {words[2]} CASCADE")
        conn.execute("DELETE FROM tracker_layout WHERE layout > 1")
    res = run_tracker("--store", pg_url, "runs")
    assert res.returncode == 1 and res.stderr.count("\n") == 1
    assert f"layout 1, older than layout {LAYOUT}" in res.stderr and "tracker sync" in res.stderr
    assert PASSWORD not in res.stderr
    res = run_tracker("--store", str(store), "sync", pg_url)
    assert res.returncode == 0, res.stderr
    view = TeamStore(pg_url).run("old")
    assert view.metric_stats() == expected
    assert view.metrics()["step"].tolist() == list(range(300))
    res = run_tracker("--store", str(store), "sync", pg_url)  # idempotent: nothing new, nothing doubled
    assert res.returncode == 0 and TeamStore(pg_url).run("old").metric_stats() == expected


def test_tracker_ui_serves_the_database_and_never_prints_the_password(pair) -> None:
    import orjson

    from ..ui.support import free_port

    _, url, ids = pair
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("TRACKER_STORE", "TRACKER_CONFIG")}
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", url, "ui", "--port", str(port),
                             "--no-open"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        banner = proc.stdout.readline()
        assert "serving postgresql://tracker:***@127.0.0.1" in banner and PASSWORD not in banner
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/runs") as r:
            body = orjson.loads(r.read())
        assert {row["id"] for row in body["runs"]} == set(ids.values())
        assert PASSWORD not in body["store"] and body["store"].startswith("postgresql://tracker:***@")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert PASSWORD not in out + err


def test_api_and_open_store_read_the_database(pair) -> None:
    store, url, ids = pair
    local, team = tracker.Api(store=str(store)), tracker.Api(store=url)
    a, b = local.run(ids["alpha"]), team.run(ids["alpha"])
    assert (a.config, a.summary._as_dict() if hasattr(a.summary, "_as_dict") else dict(a.summary)) == \
        (b.config, b.summary._as_dict() if hasattr(b.summary, "_as_dict") else dict(b.summary))
    assert a.history().equals(b.history())
    assert [r.id for r in local.runs()] == [r.id for r in team.runs()]
    view = tracker.open_store(url).run("multi")
    assert view.metrics()["loss"].size == 35 and view.info.writers == 2


def test_a_synced_running_run_shows_new_points_within_seconds(tmp_path: Path, pg_url: str) -> None:
    """A live page's cursor over the database: what a follow sync adds appears on the next request."""
    from starlette.testclient import TestClient

    import tracker.ui

    store = tmp_path / "s"
    (store / "runs").mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "sync", pg_url, "--follow",
                             "--interval", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run = tracker.start_run("live", "grows", store=store, run_id="grows", system_metrics=False)
    try:
        run.log({"loss": 1.0}, step=0)
        wait_for(lambda: _has_run(pg_url, "grows"), timeout=20, every=0.1)
        with TestClient(tracker.ui.create_app(pg_url)) as client:
            wait_for(lambda: client.get("/api/runs/grows/metrics").json().get("records") == 1, timeout=20,
                     every=0.1)
            first = client.get("/api/runs/grows/metrics").json()
            assert first["status"] == "running"
            t0 = time.monotonic()
            for s in range(1, 4):
                run.log({"loss": 1.0 / (s + 1)}, step=s)

            def grew() -> bool:
                res = client.get("/api/runs/grows/metrics", params={"since": first["cursor"]}).json()
                return res["records"] == 3 and res["series"]["loss"]["x"] == [1, 2, 3]

            wait_for(grew, timeout=20, every=0.1)
            assert time.monotonic() - t0 < 5
    finally:
        run.finish()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def _has_run(url: str, rid: str) -> bool:
    try:
        return rid in TeamStore(url).run_ids()
    except tracker.TrackerError:
        return False


@pytest.mark.parametrize("url, shown", [
    ("postgresql://lab:s3cret@db.example:5432/runs", "postgresql://lab:***@db.example:5432/runs"),
    ("postgres://lab:p@ss:w/rd@db/runs", "postgres://lab:***@db/runs"),
    ("postgresql://lab@db/runs", "postgresql://lab@db/runs"),
    ("postgresql://db/runs?user=lab&password=s3cret", "postgresql://db/runs?user=lab&password=***"),
    ("/home/lab/.tracker", "/home/lab/.tracker"),
])
def test_redact_url(url: str, shown: str) -> None:
    from tracker.core.urls import redact_url

    assert redact_url(url) == shown
