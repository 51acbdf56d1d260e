"""The team database behind a link that hangs, a server that restarts, sessions the server ends: the follower
notices within the timeout, reconnects and copies what it missed (every acknowledged record once), the
training process never waits, and the dashboard answers 503 within the timeout, then 200."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracker
from tracker.write.stream import STATUS_FILE, team_dir

from ..query.conftest import pg_server, pg_url  # noqa: F401 - the PostgreSQL fixtures
from .faults import Proxy
from .streaming import db_keys, follower_pid, local_keys, safe, stop_follower, train, wait

#: ``[team] timeout`` of these tests: seconds before a silent link is given up on.
TIMEOUT = 2.0

#: Logs at about 2,000 records a second until told to stop; then prints the records logged and the
#: longest single ``log`` call (seconds).
LOGGER = """
    import os, time, tracker
    longest = 0.0
    with tracker.start_run("team", "steady", run_id="steady") as run:
        i = 0
        while not os.path.exists({stop!r}):
            t0 = time.perf_counter()
            run.log({{"loss": 1.0 / (i + 1)}}, step=i)
            longest = max(longest, time.perf_counter() - t0)
            i += 1
            if i % 10 == 0:
                time.sleep(0.005)
    print(i, longest, flush=True)
"""


def project(tmp: Path, url: str) -> tuple[Path, Path]:
    folder = tmp / "proj"
    folder.mkdir()
    (folder / "tracker.toml").write_text(f'[store]\npath = "store"\nheartbeat_interval = 1\n\n'
                                         f'[team]\nurl = "{url}"\ntimeout = {TIMEOUT}\n')
    return folder, folder / "store"


def follower_state(store: Path) -> dict:
    try:
        return json.loads((team_dir(store) / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def caught_up(store: Path, url: str) -> bool:
    return sorted(safe(lambda: db_keys(url), [])) == sorted(local_keys(store))


def finish(child, stop: Path, store: Path, url: str) -> int:
    """Stop the logger, wait until the database holds every line of the store; returns the records logged."""
    stop.touch()
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    logged, longest = out.split()
    # The training process never waited on the database: no call of `log` took even a tenth of a second.
    assert float(longest) < 0.1, longest
    wait(lambda: caught_up(store, url), timeout=60)
    keys = db_keys(url)
    assert len(keys) == len(set(keys))  # nothing twice
    steps = [r.step for r in tracker.open_store(url).run("steady").records("metrics")]
    assert steps == list(range(int(logged)))  # every acknowledged record, once, in order
    return int(logged)


def test_the_follower_outlives_a_black_hole(tmp_path: Path, pg_server, pg_url: str) -> None:  # noqa: F811
    proxy = Proxy(pg_server.port)
    folder, store = project(tmp_path, proxy.url(pg_server, pg_url.rsplit("/", 1)[1]))
    stop = folder / "stop"
    child = train(folder, LOGGER.format(stop=str(stop)))
    try:
        wait(lambda: len(safe(lambda: db_keys(pg_url), [])) > 100, timeout=30)
        before = len(db_keys(pg_url))
        # The link drops everything just after an upsert of the writer's progress reached the server: its
        # session stays open there, in a transaction holding that row's lock, for as long as the test lasts.
        proxy.freeze_after(b"INSERT INTO tracker_writers")
        wait(lambda: proxy.frozen, timeout=30, every=0.01)
        frozen_at = time.monotonic()
        # The follower's statement gets no answer: it says so within the timeout (and a little).
        wait(lambda: "no answer" in (follower_state(store).get("error") or "")
             or "timeout" in (follower_state(store).get("error") or ""), timeout=TIMEOUT * 4)
        assert time.monotonic() - frozen_at < TIMEOUT * 3
        assert follower_state(store)["connected"] is False
        time.sleep(TIMEOUT * 1.5)  # longer than the timeout, and it keeps trying meanwhile
        assert len(db_keys(pg_url)) >= before
        proxy.thaw()  # new connections go through; the held ones stay silent (their sessions hold locks)
        wait(lambda: follower_state(store).get("connected") is True, timeout=30)
        logged = finish(child, stop, store, pg_url)
        assert logged > 0
    finally:
        if child.poll() is None:
            child.kill()
        stop_follower(store)
        proxy.close()


@pytest.mark.parametrize("fault", ["restart", "terminate"])
def test_the_follower_outlives_a_restart_and_ended_sessions(tmp_path: Path, pg_server, pg_url: str,  # noqa: F811
                                                            fault: str) -> None:
    folder, store = project(tmp_path, pg_url)
    stop = folder / "stop"
    child = train(folder, LOGGER.format(stop=str(stop)))
    try:
        pid = wait(lambda: follower_pid(store), timeout=30)
        seen = len(wait(lambda: safe(lambda: db_keys(pg_url), []), timeout=30))
        wait(lambda: len(safe(lambda: db_keys(pg_url), [])) > seen + 100, timeout=30)  # mid-stream
        if fault == "restart":
            pg_server.restart()
        else:
            with psycopg.connect(pg_url, autocommit=True) as admin:
                ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                      "WHERE application_name LIKE 'tracker-follower-%'").fetchone()[0]
            assert ended == 1
        logged = finish(child, stop, store, pg_url)
        assert logged > 0 and follower_pid(store) == pid  # the same follower reconnected each time
    finally:
        if child.poll() is None:
            child.kill()
        stop_follower(store)


def test_the_dashboard_answers_503_within_the_timeout_then_200(tmp_path: Path, pg_server, pg_url: str,  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from starlette.testclient import TestClient

    import tracker.ui
    from tracker.team.postgres import sync

    local = tmp_path / "store"
    with tracker.start_run("team", "one", store=local, run_id="one", system_metrics=False) as run:
        run.log({"loss": 1.0}, step=0)
    sync(tracker.open_store(local), pg_url)
    (tmp_path / "tracker.toml").write_text(f"[team]\ntimeout = {TIMEOUT}\n")
    monkeypatch.setenv("TRACKER_CONFIG", str(tmp_path / "tracker.toml"))
    proxy = Proxy(pg_server.port)
    try:
        with TestClient(tracker.ui.create_app(proxy.url(pg_server, pg_url.rsplit("/", 1)[1]))) as client:
            assert client.get("/api/runs").status_code == 200
            proxy.freeze()
            for path in ("/api/runs", "/api/runs/one/metrics", "/api/runs"):  # a statement, then connecting
                t0 = time.monotonic()
                res = client.get(path)
                took = time.monotonic() - t0
                assert res.status_code == 503 and took < TIMEOUT + 1.5, (path, res.status_code, took)
                assert "cannot" in res.json()["error"] and "\n" not in res.json()["error"]
            proxy.thaw()
            res = client.get("/api/runs")
            assert res.status_code == 200 and [r["id"] for r in res.json()["runs"]] == ["one"]
            assert client.get("/api/runs/one/metrics").json()["records"] == 1
    finally:
        proxy.close()


def test_a_look_copies_what_the_segment_held_never_chasing_its_tail(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    """A writer appending while the follower copies: one look copies up to the size it found, the next the rest."""
    import warnings

    from tracker.core.format import FORMAT_VERSION, encode_line
    from tracker.team.postgres import Syncer, SyncReport

    seg = tmp_path / "s" / "runs" / "fast" / "elsewhere-1-000001.jsonl"
    seg.parent.mkdir(parents=True)
    seqs = iter(range(1, 10**6))

    def lines(n: int) -> bytes:
        return b"".join(encode_line({"v": FORMAT_VERSION, "kind": "record", "schema": "metrics", "step": q - 1,
                                     "time": 1.7e9 + q, "w": seg.stem, "seq": q, "data": {"loss": 1.0}})
                        for q in (next(seqs) for _ in range(n)))

    seg.write_bytes(lines(10_000))  # more than one chunk of reading (1 MiB)
    size = seg.stat().st_size
    assert size > 1 << 20
    racing = [True]

    class Racing(Syncer):
        def _commit(self, *args, **kw):  # the writer appends 2,500 lines each time a batch commits
            if racing[0]:
                with open(seg, "ab") as f:
                    f.write(lines(2500))
            return super()._commit(*args, **kw)

    facts = {"status": "running", "is_writer": False, "host": None, "started_at": 1.7e9, "ended_at": 1.7e9,
             "finish": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syncer = Racing(tracker.open_store(tmp_path / "s"), pg_url, batch=2500)
        try:
            syncer._sync_segment("fast", seg.stem, seg, facts, None, SyncReport())
            # What the look found (10,000 lines), not what was written meanwhile.
            assert syncer.state[("fast", seg.stem)][0] == size
            assert sorted(k[2] for k in db_keys(pg_url)) == list(range(1, 10_001))
            racing[0] = False
            total = len(seg.read_bytes().splitlines())
            assert total >= 20_000  # the writer appended while the look went on
            syncer._sync_segment("fast", seg.stem, seg, facts, syncer.state[("fast", seg.stem)], SyncReport())
        finally:
            syncer.close()
    assert sorted(k[2] for k in db_keys(pg_url)) == list(range(1, total + 1))  # the rest, once


def test_sync_follow_reconnects_after_a_black_hole(tmp_path: Path, pg_server, pg_url: str) -> None:  # noqa: F811
    import threading

    from tracker.team.postgres import sync

    store = tmp_path / "store"
    proxy = Proxy(pg_server.port)
    stop = threading.Event()
    said: list[str] = []
    run = tracker.start_run("team", "grows", store=store, run_id="grows", system_metrics=False)
    run.log({"loss": 1.0}, step=0)
    follow = threading.Thread(target=sync, args=(tracker.open_store(store), proxy.url(pg_server, pg_url.rsplit(
        "/", 1)[1])), kwargs={"follow": True, "interval": 0.1, "stop": stop, "on_lost": said.append,
                                                      "timeout": TIMEOUT}, daemon=True)
    follow.start()
    try:
        wait(lambda: caught_up(store, pg_url), timeout=30)
        proxy.freeze()
        t0 = time.monotonic()
        run.log({"loss": 0.5}, step=1)
        wait(lambda: said, timeout=TIMEOUT * 4)
        assert time.monotonic() - t0 < TIMEOUT * 3 and "no answer" in said[0] and "connecting again" in said[0]
        assert follow.is_alive()  # not ended: it waits for the database
        proxy.thaw()
        for s in range(2, 50):
            run.log({"loss": 1.0 / s}, step=s)
        run.finish()
        wait(lambda: caught_up(store, pg_url), timeout=30)
        assert any("again: catching up" in m for m in said)
        keys = db_keys(pg_url)
        assert len(keys) == len(set(keys))
    finally:
        stop.set()
        follow.join(30)
        proxy.close()


@given(st.floats(min_value=0.01, max_value=3600))
def test_keepalives_notice_a_dead_idle_link_within_about_the_timeout(timeout: float) -> None:
    from tracker.team.connection import libpq_params

    p = libpq_params(timeout)
    noticed = p["keepalives_idle"] + p["keepalives_interval"] * p["keepalives_count"]
    assert noticed <= max(timeout, 2) + 2  # whole seconds, at least one each
    assert p["connect_timeout"] >= min(timeout, 3600) and p["connect_timeout"] >= 2
    assert p["tcp_user_timeout"] >= 1000 and p["keepalives"] == 1
    assert libpq_params(30)["keepalives_idle"] + 3 * libpq_params(30)["keepalives_interval"] <= 60
