"""Reading over HTTP from a server whose store is the team database (PostgreSQL and a bucket).

The store of tests/remote/readsupport.py is synced to a fresh database (its blobs to a ``file://``
bucket); a real server process serves the database; ``open_store("http://127.0.0.1:P")`` and
``tracker --store http://...`` give the answers the team store itself gives.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli

from ..query.conftest import pg_server  # noqa: F401 - the one PostgreSQL server of the session
from ..team.conftest import new_database
from .readsupport import make_store, same

pytest.importorskip("psycopg", reason="the team store needs psycopg")
pytest.importorskip("obstore", reason="the team's bucket needs obstore")


@pytest.fixture(scope="module")
def team(pg_server: object, server_factory: Any,  # noqa: F811
         tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any, dict[str, str], str, str]:
    """``(database URL, server, ids, bucket URL, read key)``: the store synced, and a server over the database."""
    from tracker.team.postgres import sync

    tmp = tmp_path_factory.mktemp("remote-team")
    store = tmp / "store"
    ids = make_store(store, tmp)
    url = new_database(pg_server)
    bucket = f"file://{tmp / 'bucket'}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(tracker.open_store(store), url, blobs=bucket)
    server = server_factory(store=url, env={"TRACKER_TEAM_BLOBS": bucket,
                                            "TRACKER_BLOB_CACHE": str(tmp / "server-cache")})
    return url, server, ids, bucket, server.make_key("reader", "read")


@pytest.fixture(autouse=True)
def _client_env(team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process reads the bucket (for the team store's answers), with the read key and caches of its own."""
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", team[3])
    monkeypatch.setenv("TRACKER_API_KEY", team[4])
    monkeypatch.setenv("TRACKER_BLOB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def stores(team) -> Iterator[tuple[Any, Any, dict[str, str]]]:
    from tracker.team.postgres import open_team_store

    url, server, ids, _, _ = team
    db = open_team_store(url)
    yield db, tracker.open_store(server.url), ids
    db.close()


def test_the_same_answers_as_the_team_store(stores) -> None:
    from tracker.read.environment import run_environment

    db, remote, ids = stores
    assert same(remote.runs(), db.runs())
    assert [i.name for i in remote.runs()] == ["gamma", "beta", "alpha"]
    page = remote.runs(limit=2)
    assert [i.id for i in page] == [ids["gamma"], ids["beta"]] and page.next is not None and page.total == 3
    assert same(list(remote.runs(limit=2, cursor=page.next)), list(db.runs(limit=2, cursor=page.next)))
    assert same(list(remote.runs(sort="-metric.loss.last")), list(db.runs(sort="-metric.loss.last")))
    assert {e.info.id: e.metrics for e in remote.catalog()} == {e.info.id: e.metrics for e in db.catalog()}
    for name in ("alpha", "beta", "gamma"):
        r, t = remote.run(name), db.run(name)
        assert same(r.info, t.info)
        a, b = r.metrics(), t.metrics()
        assert list(a) == list(b)
        for k in a:
            assert np.array_equal(a[k], b[k], equal_nan=True), k
        assert same(list(r.records()), list(t.records()))
        assert r.schemas() == t.schemas()
        assert same(r.metric_stats(), t.metric_stats())
    env = run_environment(remote.run("alpha"), remote.blobs)
    assert env is not None and env["package_list"] and same(env, run_environment(db.run("alpha"), db.blobs))
    assert same(remote.lineage("model:best"), db.lineage("model:best"))


def test_artifact_bytes_come_from_the_bucket_checked(stores, tmp_path: Path) -> None:
    db, remote, ids = stores
    with remote.run(ids["alpha"]).open_artifact("model") as f:
        got = f.read()
    with db.run(ids["alpha"]).open_artifact("model") as f:
        assert got == f.read()
    assert hashlib.sha256(got).hexdigest() == remote.artifact("model:v0").sha256 == db.artifact("model:v0").sha256
    out = remote.run("alpha").copy_artifact("model", tmp_path / "copy.bin")
    assert out.read_bytes() == got


def test_segments_are_not_files_over_the_database(team) -> None:
    _, server, ids, _, key = team
    with server.client(key) as client:
        r = client.get(f"/api/v1/runs/{ids['alpha']}/segments/x.jsonl")
    assert r.status_code == 404 and "keeps records, not segment files" in r.json()["error"]


@pytest.mark.parametrize("case", [("runs",), ("show", "alpha"), ("logs", "alpha"), ("env", "alpha", "--format", "json"),
                                  ("compare", "alpha", "beta", "--format", "json")], ids=lambda c: " ".join(c[:2]))
def test_cli_over_the_url_answers_as_over_the_database(team, case) -> None:
    url, server, _, _, _ = team
    http = server.url
    host = tracker.Host(tracker.get_plugin_manager(), tracker.Config())
    over_db = CliRunner().invoke(make_cli(host), ["--store", url, *case], catch_exceptions=False)
    over_http = CliRunner().invoke(make_cli(host), ["--store", http, *case], catch_exceptions=False)
    assert over_db.exit_code == 0, over_db.output
    assert (over_http.exit_code, over_http.stdout) == (over_db.exit_code, over_db.stdout)
