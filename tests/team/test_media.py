"""The Media panel over the team store: the index from the database, the files from the bucket (Range included)."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest

import tracker
from tracker.team.postgres import sync

from .conftest import Bucket


def test_media_panel_reads_the_database_and_the_bucket(tmp_path: Path, pg_url: str, bucket: Bucket,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("av", reason="PyAV (the media extra) encodes the test video")
    from starlette.testclient import TestClient

    from tracker.ui import create_app

    from ..ui.media_support import media_run

    store = tmp_path / "store"
    rid = media_run(store, "team-media")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(tracker.open_store(store), pg_url, blobs=bucket.url)
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", bucket.url)
    client = TestClient(create_app(pg_url))
    doc = client.get(f"/api/runs/{rid}/media").json()
    assert doc["at"]["media"]["voice"]["step"] == 4
    assert [(n["name"], n["steps"]) for n in doc["names"]] == [
        ("voice", [0, 1, 2, 3, 4]), ("rollout", [0, 2, 4]), ("lidar", [4]), ("page", [1])]
    got = client.get(f"/api/runs/{rid}/media", params={"step": 3}).json()["media"]
    assert (got["rollout"]["step"], got["page"]["step"]) == (2, 1)
    sha = got["rollout"]["records"][0]["sha256"]
    # Served from the bucket through the blob cache: the bytes of the logged file, seekable.
    whole = client.get(f"/api/runs/{rid}/media/{sha}")
    assert whole.status_code == 200 and whole.headers["content-type"] == "video/mp4"
    assert hashlib.sha256(whole.content).hexdigest() == sha == hashlib.sha256(bucket.read(sha)).hexdigest()
    part = client.get(f"/api/runs/{rid}/media/{sha}", headers={"range": "bytes=10-29"})
    assert part.status_code == 206 and part.content == whole.content[10:30]
    page = got["page"]["records"][0]["sha256"]
    r = client.get(f"/api/runs/{rid}/media/{page}")
    assert r.headers["content-security-policy"].startswith("sandbox allow-scripts;")
    assert r.headers["x-content-type-options"] == "nosniff"
    # An object gone from the bucket: a 500 naming the file, not a crash or a partial answer.
    voice = got["voice"]["records"][0]["sha256"]
    bucket.delete(voice)
    r = client.get(f"/api/runs/{rid}/media/{voice}")
    assert r.status_code == 500 and voice in r.json()["error"]
