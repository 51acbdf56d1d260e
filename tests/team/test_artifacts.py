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
from ..query.pg import PASSWORD
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


# --- a lab of two machines: a name logged on one, used on the other through the team database ------------

TRAIN_A = """
    import tracker
    with tracker.start_run("lab", "train", run_id="train-a") as run:
        run.log({"loss": 0.5}, step=0)
        run.log_artifact("w0.bin", name="model", type="model")
        run.log_artifact("w1.bin", name="model", type="model", aliases=["prod"])
"""

EVAL_B = """
    import json, tracker
    with tracker.start_run("lab", "eval", run_id="eval-b") as run:
        art = run.use_artifact("model:prod", type="model")
        got = {"version": art.version, "aliases": art.aliases, "producer": art.producer,
               "bytes": art.file().read_text(), "downloaded": sorted(p.name for p in art.download().iterdir())}
        got["api"] = tracker.Api().artifact("lab/model:v0").file().read_text()
        try:
            run.use_artifact("model:staging")
        except tracker.ArtifactNotFound as exc:
            got["missing"] = str(exc)
    print(json.dumps(got))
"""


@pytest.mark.parametrize("bucket", ["s3"], indirect=True)
def test_a_version_logged_on_one_machine_is_used_on_another(tmp_path: Path, pg_url: str, bucket: Bucket,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from .streaming import project, run_tracker, stop_follower, train, wait

    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (folder_a, store_a), (folder_b, store_b) = project(a, pg_url), project(b, pg_url)
    for folder in (folder_a, folder_b):  # both machines: the same database and bucket
        toml = folder / "tracker.toml"
        toml.write_text(toml.read_text() + f'blobs = "{bucket.url}"\n')
    (folder_a / "w0.bin").write_text("weights-0")
    (folder_a / "w1.bin").write_text("weights-1")
    env = {"TRACKER_BLOB_CACHE": str(tmp_path / "cache-b")}
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", bucket.url)
    try:
        # Machine A trains and logs two versions; its follower streams the records and the bytes.
        child = train(folder_a, TRAIN_A)
        assert child.wait(60) == 0, child.stderr.read()
        wait(lambda: version_in(pg_url, "model:prod") == "v1", timeout=30)
        mine = tracker.open_store(store_a)
        wait(lambda: {bucket.key(v.sha256) for v in mine.artifact_collection("model").versions} <= set(bucket.keys()),
             timeout=30)
        # A name both know numbers the same: the same records, derived the same way.
        team = tracker.open_store(pg_url)
        assert [(v.version, v.sha256, v.aliases, v.producer) for v in team.artifact_collection("model").versions] == \
            [(v.version, v.sha256, v.aliases, v.producer) for v in mine.artifact_collection("model").versions]
        # Machine B's evaluation (its own folder store) uses A's model:prod: resolved in the database,
        # the bytes from the bucket, checked.
        child = train(folder_b, EVAL_B, env=env)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        got = json.loads(out)
        assert (got["version"], got["aliases"], got["producer"]) == ("v1", ["latest", "prod"], "train-a")
        assert got["bytes"] == "weights-1" and got["downloaded"] == ["w1.bin"] and got["api"] == "weights-0"
        assert got["missing"].startswith("artifact 'model:staging' is not in this store (no artifact named 'model'")
        assert "nor in the team database postgresql://" in got["missing"] and PASSWORD not in got["missing"]
        assert "has no version or alias 'staging' (versions v0-v1; aliases: latest, prod)" in got["missing"]
        # Its record is the one a local version gets: name, version, content, the alias asked.
        used = [r.data for r in tracker.open_store(store_b).run("eval-b").records("artifact_use")]
        assert used == [{"name": "model", "project": "lab", "version": "v1", "sha256": got_sha(team, "model:v1"),
                         "type": "model", "alias": "prod"}]
        # `tracker artifact get` on B's folder, as a user types it there.
        res = run_tracker(folder_b, "artifact", "get", "model:prod", "-o", "model.bin", env=env)
        assert res.returncode == 0, res.stderr
        assert (folder_b / "model.bin").read_text() == "weights-1"
        # Once B's run is synced, the lineage over the database shows it as the consumer.
        res = run_tracker(folder_b, "sync", env=env)
        assert res.returncode == 0, res.stderr
        code, text, err = _cli(pg_url, "lineage", "model:prod")
        assert code == 0, err
        assert "eval-b" in text and "train-a" in text
        code, doc, _ = _cli(pg_url, "lineage", "model:prod", "--format", "json")
        edges = {(e["from"], e["to"], e["kind"]) for e in json.loads(doc)["edges"]}
        assert ("artifact:lab/model:v1", "run:eval-b", "used") in edges
        assert ("run:train-a", "artifact:lab/model:v1", "produced") in edges
        assert tracker.open_store(pg_url).artifact("model:prod").consumers == ["eval-b"]
    finally:
        stop_follower(store_a)
        stop_follower(store_b)


def got_sha(store: Any, ref: str) -> str:
    return store.artifact(ref).sha256


def version_in(url: str, ref: str) -> str | None:
    """The version ``ref`` names in the database, or ``None`` while it is not there (yet)."""
    try:
        return tracker.open_store(url).artifact(ref).version
    except (tracker.TrackerError, psycopg.Error):
        return None


def test_an_unreachable_database_is_one_line_within_the_timeout(tmp_path: Path, pg_server: Any, pg_url: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from .faults import Proxy

    store = tmp_path / "store"
    (tmp_path / "d.csv").write_text("x\n1\n")
    with tracker.start_run("lab", "prep", store=store, system_metrics=False) as run:
        run.log_artifact(tmp_path / "d.csv", name="data", type="dataset")
    (tmp_path / "tracker.toml").write_text("[team]\ntimeout = 2\n")
    monkeypatch.setenv("TRACKER_CONFIG", str(tmp_path / "tracker.toml"))
    proxy = Proxy(pg_server.port)
    url = proxy.url(pg_server, pg_url.rsplit("/", 1)[1])
    monkeypatch.setenv("TRACKER_TEAM_URL", url)
    try:
        proxy.freeze()  # a link that drops every packet: connecting never gets an answer
        t0 = time.monotonic()
        with pytest.raises(tracker.TrackerError) as exc:
            tracker.open_store(store).artifact("model:prod")
        took = time.monotonic() - t0
        msg = str(exc.value)
        assert took < 2 + 1.5, took
        assert "\n" not in msg and PASSWORD not in msg and redact_url(url) in msg, msg
        assert msg.startswith("artifact 'model:prod' is not in this store (no artifact named 'model' "
                              "(artifacts: lab/data)), and the team database could not be asked: cannot connect to")
        # The command: one line on stderr, nothing on stdout; what the folder knows still answers offline.
        res = CliRunner().invoke(make_cli(), ["--store", str(store), "artifact", "get", "model:prod"])
        assert res.exit_code == 1 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
        assert PASSWORD not in res.stderr and redact_url(url) in res.stderr
        assert tracker.open_store(store).artifact("data").version == "v0"
    finally:
        proxy.close()
