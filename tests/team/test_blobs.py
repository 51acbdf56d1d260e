"""Blobs in object storage, on an S3 server started here (moto) and on file://: sync, skip, reading, faults."""

from __future__ import annotations

import hashlib
import os
import socket
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tracker
from tracker.core.errors import StoreError, TrackerError
from tracker.team.postgres import sync

from ..query.support import run_tracker
from .conftest import Bucket

#: Larger than one part (8 MiB): uploaded as a multipart upload.
BIG = 9 << 20


def sha_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_store(root: Path, big: int = BIG) -> dict[str, Any]:
    """Two runs: a large file, a small file, a folder and an image; the second shares the small file and
    references a file outside the store. Returns what was logged."""
    src = root / "src"
    src.mkdir(parents=True)
    rng = np.random.default_rng(7)
    big_bytes = rng.integers(0, 256, big, dtype=np.uint8).tobytes()
    (src / "model.pt").write_bytes(big_bytes)
    (src / "notes.txt").write_bytes(b"small and shared\n")
    (src / "ckpt").mkdir()
    (src / "ckpt" / "a.bin").write_bytes(b"A" * 1000)
    (src / "ckpt" / "sub").mkdir()
    (src / "ckpt" / "sub" / "b.bin").write_bytes(b"B" * 2000)
    (src / "outside.bin").write_bytes(b"stays where it is")
    store = root / "store"
    with tracker.start_run("lab", "alpha", store=store, run_id="alpha") as run:
        model = run.log_artifact(src / "model.pt", kind="model")
        run.log_artifact(src / "notes.txt")
        folder = run.log_artifact(src / "ckpt")
        run.log_image("samples", rng.integers(0, 256, (16, 16, 3), dtype=np.uint8), caption="x")
    with tracker.start_run("lab", "beta", store=store, run_id="beta") as run:
        run.log_artifact(src / "notes.txt")
        run.log_artifact(src / "outside.bin", copy=False)
    with tracker.start_run("lab", "gamma", store=store, run_id="gamma") as run:
        run.log({"loss": 1.0})
    image_sha = next(r.data["sha256"] for r in tracker.open_store(store).run("alpha").records("image"))
    return {"store": store, "big": big_bytes, "model": model.sha256, "folder": folder.sha256, "image": image_sha,
            "notes": sha_of(b"small and shared\n")}


def quiet_sync(store: Path, url: str, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sync(tracker.open_store(store), url, **kw)


class Calls:
    """Counts the object-storage client's calls (obstore's functions), whatever the backend."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import obstore

        self.calls: list[str] = []
        for name in ("put", "get", "head", "list", "delete"):
            real = getattr(obstore, name)

            def wrapped(*a: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
                self.calls.append(_name)
                return _real(*a, **kw)

            monkeypatch.setattr(obstore, name, wrapped)

    def take(self) -> list[str]:
        out, self.calls = self.calls, []
        return out


def test_sync_uploads_every_blob_once_and_a_resync_only_lists(tmp_path: Path, pg_url: str, bucket: Bucket,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    made = make_store(tmp_path)
    calls = Calls(monkeypatch)
    rep = quiet_sync(made["store"], pg_url, blobs=bucket.url)
    b = rep.blobs
    # model, notes (once for both runs), ckpt manifest + 2 members, the image; outside.bin is a reference.
    expected = {made["model"], made["notes"], made["folder"], made["image"], sha_of(b"A" * 1000),
                sha_of(b"B" * 2000)}
    assert b.uploaded == 6 and b.failed == 0 and not b.errors
    assert b.not_local == 1  # the referenced file: its bytes are not the store's
    assert [k for k in bucket.keys() if k.startswith("team/")] == sorted(bucket.key(s) for s in expected)
    assert bucket.read(made["model"]) == made["big"]
    first = calls.take()
    assert first.count("put") == 6
    if bucket.kind == "s3":  # the large file went up in parts (initiate, parts, complete), the others in one PUT
        reqs = bucket.requests()
        assert any(q.startswith("uploads") for m, _p, q in reqs if m == "POST")
        assert sum(1 for m, _p, q in reqs if m == "PUT" and "partNumber=" in q) == 2
    sent = len(bucket.requests())

    again = quiet_sync(made["store"], pg_url, blobs=bucket.url).blobs
    assert again.uploaded == 0 and again.present == 7  # notes counted for each run that names it
    calls_again = calls.take()
    assert calls_again == ["list"], calls_again  # one listing for the whole sync: at most one per run
    if bucket.kind == "s3":
        new = bucket.requests()[sent:]
        assert len(new) == 1 and new[0][0] == "GET" and "list-type=2" in new[0][2], new


def test_a_run_with_one_new_blob_asks_with_one_head(tmp_path: Path, pg_url: str, bucket: Bucket,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    (tmp_path / "one.txt").write_bytes(b"one")
    with tracker.start_run("lab", store=store, run_id="one") as run:
        run.log_artifact(tmp_path / "one.txt")
    calls = Calls(monkeypatch)
    assert quiet_sync(store, pg_url, blobs=bucket.url).blobs.uploaded == 1
    assert calls.take() == ["head", "put"]
    assert quiet_sync(store, pg_url, blobs=bucket.url).blobs.uploaded == 0
    assert calls.take() == ["head"]


def test_every_reading_path_fetches_from_the_bucket(tmp_path: Path, pg_url: str, bucket: Bucket,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    made = make_store(tmp_path)
    quiet_sync(made["store"], pg_url, blobs=bucket.url)
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", bucket.url)
    team = tracker.open_store(pg_url)
    view = team.run("alpha")
    assert team.blobs.exists(made["model"]) and not team.blobs.exists("0" * 64)
    # RunView.open_artifact: streamed into the cache, checked
    with view.open_artifact("model.pt") as f:
        assert f.read() == made["big"]
    cache = Path(os.environ["TRACKER_BLOB_CACHE"])
    assert (cache / "sha256" / made["model"][:2] / made["model"][2:]).is_file()
    # copy_artifact: a file and a folder
    out = view.copy_artifact("notes.txt", tmp_path / "out" / "notes.txt")
    assert out.read_bytes() == b"small and shared\n"
    got = view.copy_artifact("ckpt", tmp_path / "out" / "ckpt")
    assert (got / "a.bin").read_bytes() == b"A" * 1000 and (got / "sub" / "b.bin").read_bytes() == b"B" * 2000
    assert [a.name for a in view.artifacts()] == ["model.pt", "notes.txt", "ckpt"]
    # the blob reader of the protocol
    with team.blobs.open(made["notes"]) as f:
        assert f.read() == b"small and shared\n"
    # tracker get, the real command, with [team] blobs from tracker.toml
    toml = tmp_path / "tracker.toml"
    toml.write_text(f'[team]\nblobs = "{bucket.url}"\n')
    env = {"TRACKER_CONFIG": str(toml), "TRACKER_BLOB_CACHE": str(tmp_path / "cli-cache")}
    env.pop("TRACKER_TEAM_BLOBS", None)
    monkeypatch.delenv("TRACKER_TEAM_BLOBS")
    res = run_tracker("--store", pg_url, "get", "alpha", "model.pt", "-o", str(tmp_path / "got.pt"), env=env)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "got.pt").read_bytes() == made["big"]
    res = run_tracker("--store", pg_url, "artifacts", "alpha", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    assert "model.pt" in res.stdout and f"sha256/{made['model'][:2]}/{made['model'][2:]}" in res.stdout
    # the dashboard: an image and an artifact download
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", bucket.url)
    from starlette.testclient import TestClient

    from tracker.ui import create_app

    client = TestClient(create_app(team))
    r = client.get(f"/api/runs/alpha/blobs/{made['image']}")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png" and r.content.startswith(b"\x89PNG")
    r = client.get(f"/api/runs/alpha/blobs/{made['model']}?download=1")
    assert r.status_code == 200 and r.content == made["big"] and "attachment" in r.headers["content-disposition"]
    # tracker gc empties this machine's cache of the bucket
    res = run_tracker("--store", pg_url, "gc", env={**env, "TRACKER_BLOB_CACHE": str(cache)})
    assert res.returncode == 0, res.stderr
    assert "blob cache: removed" in res.stdout
    assert not any(cache.rglob("*/*/*"))


def test_a_missing_or_altered_object_is_an_error_naming_key_and_run(tmp_path: Path, pg_url: str, bucket: Bucket,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    made = make_store(tmp_path)
    quiet_sync(made["store"], pg_url, blobs=bucket.url)
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", bucket.url)
    team = tracker.open_store(pg_url)
    view = team.run("alpha")
    from starlette.testclient import TestClient

    from tracker.ui import create_app

    client = TestClient(create_app(team))
    bucket.delete(made["notes"])
    for call in (lambda: view.open_artifact("notes.txt"),
                 lambda: view.copy_artifact("notes.txt", tmp_path / "n.txt")):
        with pytest.raises(StoreError, match=r"alpha.*team/sha256/[0-9a-f]{2}/[0-9a-f]{62} is missing"):
            call()
    assert not (tmp_path / "n.txt").exists()
    # altered: other bytes under the model's key (same size), and a shorter image
    data = bytearray(made["big"])
    data[12345] ^= 0xFF
    bucket.put(made["model"], bytes(data))
    bucket.put(made["image"], b"\x89PNG not the image")
    with pytest.raises(StoreError, match=rf"alpha.*{made['model'][2:]} is damaged.*not served"):
        view.open_artifact("model.pt")
    with pytest.raises(StoreError, match="damaged"):
        view.copy_artifact("model.pt", tmp_path / "m.pt")
    assert not (tmp_path / "m.pt").exists()
    for sha in (made["model"], made["image"]):
        r = client.get(f"/api/runs/alpha/blobs/{sha}")
        assert r.status_code == 500 and "damaged" in r.text and sha[2:] in r.text
        assert b"not the image" not in r.content
    cache = Path(os.environ["TRACKER_BLOB_CACHE"])
    kept = {p.parent.name + p.name: sha_of(p.read_bytes()) for p in cache.glob("sha256/*/*")}
    assert made["model"] not in kept and made["image"] not in kept  # nothing damaged was kept
    assert all(k == v for k, v in kept.items())
    res = run_tracker("--store", pg_url, "get", "alpha", "model.pt", "-o", str(tmp_path / "g.pt"))
    assert res.returncode != 0 and "damaged" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "g.pt").exists()


def test_without_team_blobs_opening_says_it_is_not_set(tmp_path: Path, pg_url: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    made = make_store(tmp_path)
    monkeypatch.delenv("TRACKER_TEAM_BLOBS", raising=False)
    (tmp_path / "none.toml").write_text("")
    rep = quiet_sync(made["store"], pg_url)
    assert rep.blobs is None  # no bucket: the records sync, the blobs stay local
    view = tracker.open_store(pg_url).run("alpha")
    with pytest.raises(StoreError, match=r"\[team\] blobs is not set"):
        view.open_artifact("model.pt")
    res = run_tracker("--store", pg_url, "get", "alpha", "model.pt", "-o", str(tmp_path / "x"),
                      env={"TRACKER_CONFIG": str(tmp_path / "none.toml")})
    assert res.returncode == 1 and "[team] blobs is not set" in res.stderr and "Traceback" not in res.stderr


def test_a_bucket_that_is_down_is_reported_and_the_next_sync_uploads(tmp_path: Path, pg_url: str,
                                                                     s3_server: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    made = make_store(tmp_path, big=1 << 20)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens here once closed
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{closed}",
           "TRACKER_BLOB_CACHE": str(tmp_path / "cache")}
    res = run_tracker("--store", str(made["store"]), "sync", pg_url, "--blobs", "s3://down-bucket/team", env=env)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "synced 3 runs" in res.stdout  # the records are in the database all the same
    assert "cannot" in res.stderr and "run `tracker sync` again" in res.stderr
    assert "testing-secret" not in res.stdout + res.stderr and "Traceback" not in res.stderr
    blob = made["store"] / "blobs" / "sha256" / made["model"][:2] / made["model"][2:]
    assert sha_of(blob.read_bytes()) == made["model"]  # the local blob is untouched
    import boto3

    boto3.client("s3", endpoint_url=s3_server.endpoint, region_name="us-east-1", aws_access_key_id="testing",
                 aws_secret_access_key="testing-secret").create_bucket(Bucket="down-bucket")
    res = run_tracker("--store", str(made["store"]), "sync", pg_url, "--blobs", "s3://down-bucket/team",
                      env={**env, "AWS_ENDPOINT_URL": s3_server.endpoint})
    assert res.returncode == 0, res.stderr
    assert "blobs: 6 uploaded" in res.stdout


def test_bad_blobs_urls_are_one_line(tmp_path: Path) -> None:
    toml = tmp_path / "tracker.toml"
    toml.write_text('[team]\nblobs = "ftp://x/y"\n')
    with pytest.raises(TrackerError, match=r"\[team\] blobs: expected a bucket URL starting with s3://"):
        tracker.core.config.load_config(toml)
    from tracker.team.blobs import BucketBlobs, shown_url

    with pytest.raises(TrackerError, match="absolute path"):
        _ = BucketBlobs("file://relative/path").client
    assert shown_url("s3://key:secret@bucket/p") == "s3://***@bucket/p"


def test_the_cache_stays_within_its_bound(tmp_path: Path, bucket: Bucket) -> None:
    from tracker.team.blobs import BucketBlobs, clear_cache

    blobs = BucketBlobs(bucket.url, cache=tmp_path / "c", cache_bytes=3000)
    shas = []
    for i in range(5):
        data = bytes([i]) * 1000
        sha = sha_of(data)
        src = tmp_path / f"b{i}"
        src.write_bytes(data)
        blobs.upload(sha, src, len(data))
        shas.append(sha)
    for sha in shas:
        with blobs.open(sha) as f:
            assert sha_of(f.read()) == sha
    cached = list((tmp_path / "c").glob("sha256/*/*"))
    assert sum(p.stat().st_size for p in cached) <= 3000 and blobs.path(shas[-1]).is_file()
    assert clear_cache(tmp_path / "c") == (len(cached), 1000 * len(cached))
    assert not list((tmp_path / "c").glob("sha256/*/*"))


def test_follow_uploads_each_blob_as_the_run_logs_it(tmp_path: Path, pg_url: str, bucket: Bucket) -> None:
    import threading

    from ..query.support import wait_for

    store = tmp_path / "store"
    run = tracker.start_run("lab", store=store, run_id="live", system_metrics=False)
    stop = threading.Event()
    done: list[Any] = []
    t = threading.Thread(target=lambda: done.append(quiet_sync(store, pg_url, follow=True, interval=0.2, stop=stop,
                                                               blobs=bucket.url)))
    t.start()
    try:
        for i in range(3):
            f = tmp_path / f"ckpt{i}.bin"
            f.write_bytes(os.urandom(2000))
            sha = run.log_artifact(f, kind="checkpoint").sha256
            wait_for(lambda sha=sha: bucket.key(sha) in bucket.keys(), timeout=30)
    finally:
        stop.set()
        t.join(60)
        run.finish()
    assert done and done[0].blobs.uploaded == 3 and not done[0].blobs.errors


def test_a_terminal_shows_the_upload_progress(tmp_path: Path, pg_url: str, bucket: Bucket) -> None:
    import pty
    import subprocess
    import sys

    store = tmp_path / "store"
    (tmp_path / "w.bin").write_bytes(os.urandom(6 << 20))
    with tracker.start_run("lab", store=store, run_id="bar", system_metrics=False) as run:
        run.log_artifact(tmp_path / "w.bin")
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("TRACKER_STORE", "TRACKER_CONFIG")}
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "sync", pg_url, "--blobs",
                             bucket.url], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 0, seen.decode(errors="replace")
    assert b"blobs of bar" in seen and b"100%" in seen  # the bar, drawn on the terminal
    assert b"blobs: 1 uploaded" in out
