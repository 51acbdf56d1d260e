"""Streaming: with ``[team] url`` set, runs reach the team database through the store's follower, no sync."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracker
from tracker.core.config import load_config
from tracker.core.urls import redact_url
from tracker.write.stream import follower_running

from ..query.conftest import pg_server, pg_url  # noqa: F401 - the PostgreSQL fixtures
from ..query.pg import PASSWORD, Server
from .streaming import db_keys, follower_pid, local_keys, project, run_tracker, safe, stop_follower, train, wait


@pytest.fixture
def proj(tmp_path: Path, pg_url: str):  # noqa: F811 - the fixture imported above
    folder, store = project(tmp_path, pg_url)
    yield folder, store, pg_url
    stop_follower(store)


def test_a_run_streams_without_sync(proj: tuple[Path, Path, str]) -> None:
    folder, store, url = proj
    # A run logged before streaming was on (this process has no team URL): the follower copies it too.
    with tracker.start_run("team", "before", store=store, run_id="old", system_metrics=False) as run:
        run.log({"loss": 2.0}, step=0)
    go_on = folder / "go-on"
    child = train(folder, f"""
        import os, time, tracker
        with tracker.start_run("team", "streamed", run_id="live1") as run:
            for i in range(500):
                run.log({{"loss": 1.0 / (i + 1)}}, step=i)
            print("logged", flush=True)
            while not os.path.exists({str(go_on)!r}):
                time.sleep(0.05)
    """)
    assert child.stdout.readline().strip() == "logged"
    # Nobody ran `tracker sync`: the follower the run started copies it while it runs.
    wait(lambda: len(safe(lambda: db_keys(url), [])) >= 501, timeout=30)
    team = tracker.open_store(url)
    assert team.run("live1").info.status == "running"
    assert team.run("live1").metrics()["loss"].tolist() == [1.0 / (i + 1) for i in range(500)]
    pid = follower_pid(store)
    assert pid is not None
    # A second run of the store shares the follower.
    second = train(folder, """
        import tracker
        with tracker.start_run("team", "second", run_id="live2") as run:
            run.log({"loss": 0.5}, step=0)
    """)
    assert second.wait(60) == 0, second.stderr.read()
    wait(lambda: "live2" in {i.id for i in tracker.open_store(url).runs()}, timeout=30)
    assert follower_pid(store) == pid  # live1 still runs: the same follower all along
    go_on.touch()
    assert child.wait(60) == 0, child.stderr.read()
    wait(lambda: {i.id: i.status for i in tracker.open_store(url).runs()} == {"live1": "finished",
                                                                             "live2": "finished",
                                                                             "old": "finished"}, timeout=30)
    assert sorted(db_keys(url)) == sorted(local_keys(store))
    # No run is live: the follower ends by itself (linger 2 s here).
    wait(lambda: not follower_running(store), timeout=30)
    res = run_tracker(folder, "sync", "--status")
    assert res.returncode == 0, res.stderr
    assert "follower: not running" in res.stdout and "3 runs up to date" in res.stdout
    assert PASSWORD not in res.stdout + res.stderr and "***" in res.stdout


def test_status_shows_what_is_behind(proj: tuple[Path, Path, str]) -> None:
    folder, store, url = proj
    # Written with streaming off (no URL in this process's configuration): all of it is behind.
    with tracker.start_run("team", "local", store=store, run_id="behind") as run:
        for i in range(40):
            run.log({"loss": float(i)}, step=i)
    res = run_tracker(folder, "sync", "--status", "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = orjson.loads(res.stdout)
    (row,) = doc["runs"]
    assert (row["run_id"], row["lines_behind"], row["synced_bytes"]) == ("behind", 42, 0)
    assert row["bytes_behind"] == sum(p.stat().st_size for p in (store / "runs" / "behind").glob("*.jsonl"))
    assert doc["behind"] == {"runs": 1, "bytes": row["bytes_behind"], "lines": 42}
    assert PASSWORD not in res.stdout and doc["url"] == redact_url(url)
    # `tracker sync` with no URL takes [team] url; then nothing is behind.
    res = run_tracker(folder, "sync")
    assert res.returncode == 0, res.stderr
    assert "42 new" in res.stdout and PASSWORD not in res.stdout + res.stderr
    res = run_tracker(folder, "sync", "--status")
    assert res.returncode == 0 and "1 run up to date" in res.stdout, res.stdout + res.stderr
    # TRACKER_TEAM_URL when tracker.toml has no [team] url; neither: one line, exit 2.
    (folder / "tracker.toml").write_text('[store]\npath = "store"\n')
    res = run_tracker(folder, "sync", "--status", env={"TRACKER_TEAM_URL": url})
    assert res.returncode == 0 and "1 run up to date" in res.stdout, res.stderr
    res = run_tracker(folder, "sync", "--status")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "[team] url" in res.stderr
    res = run_tracker(folder, "sync", "mysql://u:topsecret@h/x", "--status")
    assert res.returncode == 2 and "u:***@h" in res.stderr and "topsecret" not in res.stderr


def test_team_section_is_checked(tmp_path: Path) -> None:
    cfg = tmp_path / "tracker.toml"
    cfg.write_text('[team]\nurl = "postgresql://u:pw@db/x"\nblobs = "s3://bucket/prefix"\ntimeout = 4.5\n')
    c = load_config(cfg)
    assert (c.team_url, c.team_blobs, c.team_timeout) == ("postgresql://u:pw@db/x", "s3://bucket/prefix", 4.5)
    cfg.write_text("[team]\n")
    assert load_config(cfg).team_timeout == 30.0
    assert load_config(cfg).team_finish_timeout == 30.0
    (tmp_path / "ca.pem").write_text("x")
    cfg.write_text('[team]\nurl = "https://lab.example:8443"\nca_file = "ca.pem"\nfinish_timeout = 0\n')
    c = load_config(cfg)
    assert (c.team_url, c.team_ca_file, c.team_finish_timeout) == ("https://lab.example:8443", tmp_path / "ca.pem",
                                                                   0.0)
    for body, words in [('url = "mysql://u:topsecret@db/x"', ("[team] url", "postgresql://", "u:***@db")),
                        ("url = 5", ("[team] url", "given 5")),
                        ('blobs = ""', ("[team] blobs", "a bucket URL starting with s3://")),
                        ("timeout = 0", ("[team] timeout", "seconds above 0", "given 0")),
                        ('timeout = "30s"', ("[team] timeout", "given '30s'")),
                        ("timeout = true", ("[team] timeout", "given True")),
                        ('bucket = "s3://b"', ("unknown key [team] bucket",
                                               "allowed: blobs, ca_file, finish_timeout, timeout, url")),
                        ('url = "ftp://lab.example"', ("[team] url", "https://")),
                        ("finish_timeout = -1", ("[team] finish_timeout", "from 0 to 3600", "given -1")),
                        ('ca_file = "missing.pem"', ("[team] ca_file", "an existing CA bundle", "missing.pem"))]:
        cfg.write_text(f"[team]\n{body}\n")
        with pytest.raises(tracker.ConfigError) as err:
            load_config(cfg)
        text = str(err.value)
        assert all(w in text for w in words), text
        assert "topsecret" not in text and "\n" not in text
    cfg.write_text('team = "x"\n')
    with pytest.raises(tracker.ConfigError, match="team: expected a table"):
        load_config(cfg)


@given(user=st.text("abcxyz_.", min_size=1, max_size=8), secret=st.text(st.characters(
    blacklist_characters="/?#", blacklist_categories=("Cs",)), min_size=1, max_size=16),
    rest=st.sampled_from(["db.lab:5432/exp", "h/x?sslmode=require", "[::1]:5/d"]))
def test_redact_url_never_shows_a_password(user: str, secret: str, rest: str) -> None:
    url = f"postgresql://{user}:{secret}@{rest}"
    shown = redact_url(url)
    assert shown == f"postgresql://{user}:***@{rest}"
    assert redact_url(shown) == shown  # idempotent
    assert redact_url(f"postgresql://{user}@{rest}") == f"postgresql://{user}@{rest}"  # nothing to hide
    q = redact_url(f"postgresql://{rest.split('?')[0]}?sslmode=require&password={secret.replace('&', '')}x")
    assert q.endswith("&password=***")


class PausableServer(Server):
    """A server of its own that a test stops and starts again on the same port and data."""

    def down(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        """Stopped and removed, whether it is up or down (a test that fails while it is down)."""
        if (self.data / "postmaster.pid").exists():
            super().stop()
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def up(self) -> None:
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50")
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.root / "log"), "-w", "-t", "60",
                  "start")


def test_database_down_then_up(tmp_path: Path, pg_server: object) -> None:  # noqa: F811
    server = PausableServer(pg_server.bins)  # type: ignore[attr-defined]
    folder, store = project(tmp_path, server.url())
    try:
        # The database goes away before the runs start: training goes on, nothing fails.
        server.down()
        child = train(folder, """
            import time, tracker
            t0 = time.perf_counter()
            with tracker.start_run("team", "offline", run_id="off") as run:
                for i in range(2000):
                    run.log({"loss": float(i)}, step=i)
            print("ok", flush=True)
        """)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0 and out.strip() == "ok", err
        # The follower has started and found the database away (its status file says so).
        wait(lambda: follower_pid(store) is not None
             and "error" in safe(lambda: (store / "team" / "follower.json").read_text(), ""), timeout=30)
        res = run_tracker(folder, "sync", "--status")  # the database is down: one line, masked, exit 1
        assert res.returncode == 1 and res.stderr.count("\n") == 1 and "cannot connect" in res.stderr
        assert "follower: running" in res.stdout and "database unreachable" in res.stdout
        assert PASSWORD not in res.stdout + res.stderr
        log = (store / "team" / "follower.log").read_text()
        assert "unreachable" in log and PASSWORD not in log
        status = (store / "team" / "follower.json").read_text()
        assert "error" in status and PASSWORD not in status
        # Back up: the follower, still retrying, catches up by itself.
        server.up()
        url = server.url()
        wait(lambda: sorted(safe(lambda: db_keys(url), [])) == sorted(local_keys(store)), timeout=60)
        assert tracker.open_store(url).run("off").info.status == "finished"
        res = run_tracker(folder, "sync", "--status")
        assert res.returncode == 0 and "1 run up to date" in res.stdout, res.stdout + res.stderr
    finally:
        stop_follower(store)
        server.stop()


def test_without_a_team_url_nothing_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACKER_TEAM_URL", raising=False)
    with tracker.start_run("team", "local only", store=tmp_path / "s", system_metrics=False) as run:
        run.log({"loss": 1.0})
    assert not (tmp_path / "s" / "team").exists()
    assert not follower_running(tmp_path / "s")


def test_without_psycopg_a_run_warns_once_and_logs_locally(tmp_path: Path) -> None:
    folder, store = project(tmp_path, "postgresql://u:topsecret@127.0.0.1:1/x")
    child = train(folder, """
        import sys
        sys.modules["psycopg"] = None  # as if the team extra were not installed
        import tracker
        for name in ("a", "b"):
            with tracker.start_run("team", name) as run:
                run.log({"loss": 1.0})
        print(len(tracker.open_store().runs()))
    """)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0 and out.strip() == "2", err
    assert err.count("needs psycopg") == 1 and "tracker-core[team]" in err and "topsecret" not in err
    assert not follower_running(store)


def test_a_streamed_run_s_blobs_reach_the_bucket(proj: tuple[Path, Path, str], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``[team] blobs`` set too, the follower uploads what a run stores as it logs it, by content."""
    pytest.importorskip("obstore", reason="obstore is not installed (the blobs extra)")
    import hashlib

    folder, store, url = proj
    bucket = tmp_path / "bucket"
    bucket.mkdir()
    toml = folder / "tracker.toml"
    toml.write_text(toml.read_text() + f'blobs = "file://{bucket}/team"\n')
    weights = folder / "weights.bin"
    weights.write_bytes(bytes(range(256)) * 64)
    sha = hashlib.sha256(weights.read_bytes()).hexdigest()
    child = train(folder, """
        import tracker
        with tracker.start_run("team", "with a file", run_id="blobby") as run:
            run.log({"loss": 1.0}, step=0)
            run.log_artifact("weights.bin", kind="model")
    """)
    assert child.wait(60) == 0, child.stderr.read()
    obj = bucket / "team" / "sha256" / sha[:2] / sha[2:]
    wait(lambda: obj.is_file(), timeout=30)
    assert obj.read_bytes() == weights.read_bytes()
    # Read back over the team store, from the bucket: the bytes of the artifact, checked.
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", f"file://{bucket}/team")
    monkeypatch.setenv("TRACKER_BLOB_CACHE", str(tmp_path / "cache"))
    team = tracker.open_store(url)
    assert team.run("blobby").open_artifact("weights.bin").read() == weights.read_bytes()
