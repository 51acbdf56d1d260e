"""Named artifacts over the team database: the same versions, aliases and lineage as over the folder it was
synced from; blobs from the bucket; `tracker artifact alias` writes to the database, refused for a
read-only role in one line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli
from tracker.core.urls import redact_url
from tracker.team.postgres import sync

from ..artifacts.conftest import make_chain
from ..query.support import run_tracker
from .conftest import Bucket


def quiet_sync(store: Path, url: str, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sync(tracker.open_store(store), url, **kw)


@pytest.fixture
def synced(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, dict[str, Any]]:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    ids = make_chain(store, tmp_path / "src")
    quiet_sync(store, pg_url)
    return store, pg_url, ids


def _cli(where: str, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(make_cli(), ["--store", where, *args], catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


CASES = [
    ("artifact", "list", "--format", "json"),
    ("artifact", "list", "--type", "model"),
    ("artifact", "show", "mnist-cnn", "--format", "json"),
    ("artifact", "show", "mnist-cnn"),
    ("lineage", "mnist-cnn:prod", "--format", "json"),
    ("lineage", "{train-2}"),
    ("lineage", "{eval}", "--format", "dot"),
    ("artifact", "show", "mnist-cnn:staging"),
    ("artifact", "get", "nope"),
]


def test_the_same_answers_over_the_folder_and_the_database(synced) -> None:
    store, url, ids = synced
    for case in CASES:
        args = [a.format(**ids) for a in case]
        folder = _cli(str(store), *args)
        team = _cli(url, *args)
        assert team == folder, args
        if "json" in args:
            assert orjson.loads(team[1]) == orjson.loads(folder[1])
    f, t = tracker.open_store(store), tracker.open_store(url)
    for ref in ("mnist-cnn:prod", "mnist:raw", "mnist-eval", "mnist/mnist-cnn:v0"):
        a, b = f.artifact(ref), t.artifact(ref)
        assert (a.version, a.aliases, a.sha256, a.size, a.producer, a.consumers, a.type, a.kind, a.time) == \
            (b.version, b.aliases, b.sha256, b.size, b.producer, b.consumers, b.type, b.kind, b.time)
    assert [(a.name, a.version) for a in t.run(ids["train-2"]).artifacts()] == [("mnist-cnn", "v1")]
    # A second sync adds no alias edit twice.
    quiet_sync(store, url)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM tracker_alias_edits").fetchone()[0] == 1


def test_alias_edits_over_the_database_and_a_read_only_role(synced, pg_url: str) -> None:
    store, url, ids = synced
    code, out, err = _cli(url, "artifact", "alias", "mnist-cnn:v0", "prod")
    assert code == 0, err
    assert out == "mnist/mnist-cnn:v0 is now 'prod' (moved from v1)\n"
    team = tracker.open_store(url)
    assert team.artifact("mnist-cnn:prod").version == "v0"
    assert tracker.open_store(store).artifact("mnist-cnn:prod").version == "v1"  # written to the database only
    hist = team.artifact_collection("mnist-cnn").history
    assert [(h.alias, h.version, h.how) for h in hist] == [("best", "v1", "log"), ("prod", "v1", "edit"),
                                                            ("prod", "v0", "edit")]
    tracker.remove_alias("mnist-cnn", "best", store=url)
    assert "best" not in tracker.open_store(url).artifact_collection("mnist-cnn").aliases
    quiet_sync(store, url)  # syncing again keeps the database's newer edits
    assert tracker.open_store(url).artifact("mnist-cnn:prod").version == "v0"
    # The dashboard's read-only role: refused in one line, nothing written.
    database = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS tracker_art_ro")
        conn.execute(f"CREATE ROLE tracker_art_ro LOGIN PASSWORD 'ro-pass-1'; "
                     "ALTER ROLE tracker_art_ro SET default_transaction_read_only = on; "
                     f"GRANT CONNECT ON DATABASE {database} TO tracker_art_ro; "
                     "GRANT USAGE ON SCHEMA public TO tracker_art_ro; "
                     "GRANT SELECT ON ALL TABLES IN SCHEMA public TO tracker_art_ro")
        before = conn.execute("SELECT count(*) FROM tracker_alias_edits").fetchone()[0]
    ro = url.replace(f"{url.split('//', 1)[1].split('@', 1)[0]}@", "tracker_art_ro:ro-pass-1@")
    assert tracker.open_store(ro).artifact("mnist-cnn:prod").version == "v0"  # it reads
    res = run_tracker("--store", ro, "artifact", "alias", "mnist-cnn:v1", "prod")
    assert res.returncode == 1 and res.stdout == "" and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "may not write alias edits" in res.stderr
    assert "ro-pass-1" not in res.stderr and redact_url(ro) in res.stderr
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM tracker_alias_edits").fetchone()[0] == before


def test_versions_download_from_the_bucket_checked(tmp_path: Path, pg_url: str, bucket: Bucket,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    make_chain(store, tmp_path / "src")
    quiet_sync(store, pg_url, blobs=bucket.url)
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", bucket.url)
    team = tracker.open_store(pg_url)
    ds = team.artifact("mnist:raw")
    out = ds.download(tmp_path / "ds")
    assert (out / "train.csv").read_text() == "x,y\n1,2\n" and (out / "sub" / "test.csv").read_text() == "x,y\n3,4\n"
    assert [f.path for f in ds.files()] == ["sub/test.csv", "train.csv"]
    model = team.artifact("mnist-cnn:best")
    with model.open() as f:
        assert f.read() == b"weightsweights"
    code, out_text, err = _cli(pg_url, "artifact", "get", "mnist-cnn:v0", "-o", str(tmp_path / "m0.pt"))
    assert code == 0, err
    assert (tmp_path / "m0.pt").read_bytes() == b"weights"
    # A damaged object: one line naming the artifact, its version and the object; nothing at the target.
    v0 = team.artifact("mnist-cnn:v0")
    bucket.put(v0.sha256, b"WEIGHTS")
    from tracker.team.blobs import clear_cache

    clear_cache()
    with pytest.raises(tracker.StoreError) as exc:
        tracker.open_store(pg_url).artifact("mnist-cnn:v0").download(tmp_path / "bad")
    assert "mnist/mnist-cnn:v0" in str(exc.value) and v0.sha256[2:] in str(exc.value)  # the object key
    assert not (tmp_path / "bad").exists()


def test_lineage_json_is_strict(synced) -> None:
    _, url, ids = synced
    code, out, _ = _cli(url, "lineage", ids["prep"], "--format", "json")
    doc = json.loads(out)
    assert doc["root"] == f"run:{ids['prep']}" and len([n for n in doc["nodes"] if n["kind"] == "run"]) == 4


def test_the_dashboard_gives_the_same_json(synced) -> None:
    from starlette.testclient import TestClient

    import tracker.ui

    store, url, ids = synced
    asks = [("/api/artifacts", {}), ("/api/artifacts", {"type": "model"}), ("/api/artifact", {"ref": "mnist-cnn"}),
            ("/api/lineage", {"ref": ids["train-2"]}), ("/api/lineage", {"ref": "mnist-cnn:prod", "depth": "1"}),
            ("/api/artifact", {"ref": "nope"})]
    clients = [TestClient(tracker.ui.create_app(where), base_url="http://127.0.0.1") for where in (store, url)]
    for path, params in asks:
        folder, team = (c.get(path, params=params) for c in clients)
        assert (team.status_code, team.json()) == (folder.status_code, folder.json()), (path, params)
