"""``tracker server`` over the team database: keys in its tables, shipped runs through the spool into it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import tracker

from ..query.conftest import pg_server  # noqa: F401 - the one PostgreSQL server of the session
from .conftest import ServerProcess
from .test_server import local_run, post

_dbs = iter(range(1, 1000))


@pytest.fixture(scope="module")
def bucket(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The team's bucket: a file:// one (the same client library as s3://)."""
    pytest.importorskip("obstore", reason="the team extra (obstore) is not installed")
    return tmp_path_factory.mktemp("bucket")


@pytest.fixture(scope="module")
def pg_served(pg_server: Any, server_factory: Any, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
              bucket: Path) -> tuple[ServerProcess, str, Path]:
    """A server of a fresh database (and a bucket), its URL and its spool."""
    import psycopg

    name = f"remote{next(_dbs)}_{os.getpid()}"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = pg_server.url(name)
    spool = tmp_path_factory.mktemp("spool")
    return server_factory("--spool", str(spool), store=url, env={"TRACKER_TEAM_BLOBS": bucket.as_uri()}), url, spool


def wait_for(fn: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = fn()
            if value:
                return value
        except tracker.TrackerError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("not there in time")
        time.sleep(0.1)


def test_keys_live_in_the_database(pg_served: tuple[ServerProcess, str, Path]) -> None:
    import psycopg

    server, url, _ = pg_served
    made = json.loads(server.cli("keys", "create", "db key", "--scope", "read", "--format", "json").stdout)
    with server.client(made["key"]) as c:
        assert c.get("/api/v1/whoami").json()["name"] == "db key"
    rows = {r["id"]: r for r in json.loads(server.cli("keys", "list", "--format", "json").stdout)}
    assert rows[made["id"]]["scope"] == "read" and rows[server.admin_key.split("_")[1]]["scope"] == "admin"
    with psycopg.connect(url) as conn:
        dump = json.dumps(conn.execute("SELECT * FROM tracker_keys").fetchall(), default=str)
    assert made["key"].split("_")[2] not in dump and made["id"] in dump
    server.cli("keys", "revoke", made["id"])
    with server.client(made["key"]) as c:
        r = c.get("/api/v1/whoami")
    assert r.status_code == 401 and "revoked" in r.json()["error"]


def test_shipped_and_json_runs_reach_the_database(pg_served: tuple[ServerProcess, str, Path], tmp_path: Path) -> None:
    server, url, spool = pg_served
    key = server.make_key("shipper", "write", projects=("vision",))
    rid, seg = local_run(tmp_path, n=12)
    data = seg.read_bytes()
    with server.client(key) as c:
        cut = data.index(b"\n", len(data) // 2) + 1
        assert post(c, rid, seg.name, 0, data[:cut]).json() == {"offset": cut}
        assert post(c, rid, seg.name, cut + 1, data[cut + 1:]).status_code == 409
        assert post(c, rid, seg.name, cut, data[cut:]).json() == {"offset": len(data)}
        made = c.post("/api/v1/runs", json={"project": "vision", "name": "json over db"}).json()["id"]
        assert c.post(f"/api/v1/runs/{made}/log", json={"batch": [{"metrics": {"loss": 0.3}},
                                                                   {"metrics": {"loss": 0.2}}]}).json() == {"logged": 2}
        assert c.post(f"/api/v1/runs/{made}/finish", json={}).status_code == 200
        assert c.get(f"/api/v1/runs/{rid}/segments").json() == {"segments": {seg.name: len(data)}}
    assert (spool / "runs" / rid / seg.name).read_bytes() == data
    team = tracker.open_store(url)
    info = wait_for(lambda: (i := team.run(rid).info).records == 12 and i.status == "finished" and i)
    assert info.project == "vision" and info.config == {"lr": 0.1}
    assert list(team.run(rid).metrics()["step"]) == list(range(12))
    json_info = wait_for(lambda: (i := team.run(made).info).status == "finished" and i.records == 2 and i)
    assert json_info.name == "json over db"
    assert "trk_" not in server.text()
    for path in spool.rglob("*"):
        if path.is_file():
            assert b"trk_" not in path.read_bytes(), path


def test_blobs_go_on_to_the_bucket(pg_served: tuple[ServerProcess, str, Path], bucket: Path, tmp_path: Path) -> None:
    server, url, spool = pg_served
    key = server.make_key("artifacts", "write")
    weights = tmp_path / "weights.bin"
    weights.write_bytes(os.urandom(50_000))
    local = tmp_path / "local"
    run = tracker.start_run("vision", "with a file", store=local, system_metrics=False, console=False,
                            environment=False)
    run.log({"loss": 1.0}, step=0)
    art = run.log_artifact(weights, "weights")
    run.finish()
    blob = next(p for p in (local / "blobs" / "sha256").rglob("*") if p.is_file() and p.stat().st_size == 50_000)
    sha = blob.parent.name + blob.name
    assert art.sha256 == sha
    seg = next((local / "runs" / run.id).glob("*.jsonl"))
    with server.client(key) as c:
        assert c.head(f"/api/v1/blobs/sha256/{sha}").status_code == 404
        assert c.put(f"/api/v1/blobs/sha256/{sha}", content=weights.read_bytes()).status_code == 201
        assert post(c, run.id, seg.name, 0, seg.read_bytes()).status_code == 200
    target = bucket / "sha256" / sha[:2] / sha[2:]
    wait_for(target.is_file)
    assert target.read_bytes() == weights.read_bytes()
    team = tracker.open_store(url)
    wait_for(lambda: team.run(run.id).info.status == "finished")
    (spool / "blobs" / "sha256" / sha[:2] / sha[2:]).unlink()  # the server still knows it: the bucket has it
    with server.client(key) as c:
        head = c.head(f"/api/v1/blobs/sha256/{sha}")
    assert head.status_code == 200 and int(head.headers["content-length"]) == 50_000


def test_a_database_away_does_not_stop_shipping(pg_server: Any, server_factory: Any,  # noqa: F811
                                                tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """The database behind the server drops its link: keys it knew still open the server, shipped lines land
    in the spool, and reach the database once it is back."""
    import psycopg

    from ..team.faults import Proxy

    name = f"remoteaway{next(_dbs)}_{os.getpid()}"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    proxy = Proxy(pg_server.port)
    url = proxy.url(pg_server, name)
    spool = tmp_path_factory.mktemp("spool-away")
    # The server's deadline on each round trip to the database: 2 s, from the tracker.toml of its folder.
    env = {"TRACKER_CONFIG": str(tmp_path / "tracker.toml")}
    (tmp_path / "tracker.toml").write_text("[team]\ntimeout = 2\n")
    try:
        server = server_factory("--spool", str(spool), store=url, env=env)
        key = server.make_key("away", "write")
        rid, seg = local_run(tmp_path, n=10)
        data = seg.read_bytes()
        cut = data.index(b"\n", len(data) // 2) + 1
        with server.client(key) as c:
            assert post(c, rid, seg.name, 0, data[:cut]).json() == {"offset": cut}
            proxy.freeze()
            assert post(c, rid, seg.name, cut, data[cut:]).json() == {"offset": len(data)}
            other, other_seg = local_run(tmp_path, n=2)
            r = post(c, other, other_seg.name, 0, other_seg.read_bytes())  # who may make a run: the database says
            assert r.status_code == 503 and r.headers["retry-after"]
        assert (spool / "runs" / rid / seg.name).read_bytes() == data
        proxy.thaw()
        team = tracker.open_store(pg_server.url(name))
        info = wait_for(lambda: (i := team.run(rid).info).records == 10 and i.status == "finished" and i, 60)
        assert info.project == "vision"
    finally:
        proxy.close()
