"""Media blobs (audio, video, 3D, HTML) go up with ``tracker sync`` and are read back from the team store's bucket."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import tracker
from tracker.capture.blobs import blobs_of
from tracker.team.postgres import sync

from .conftest import Bucket

pytest.importorskip("av", reason="PyAV is part of the media extra, which the test extra installs")


@pytest.mark.parametrize("bucket", ["file"], indirect=True)
def test_sync_uploads_media_blobs_and_the_team_store_reads_them(tmp_path: Path, pg_url: str, bucket: Bucket,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    with tracker.start_run("lab", "media", store=store, run_id="media", system_metrics=False) as run:
        run.log({"clip": tracker.Audio(np.linspace(-1, 1, 800), sample_rate=8000),
                 "video": tracker.Video(np.zeros((3, 3, 8, 8), np.uint8), fps=3, format="mp4"),
                 "cloud": tracker.Object3D(np.ones((10, 3))), "page": tracker.Html("<p>synced</p>")})
    local = tracker.open_store(store).run("media")
    media = {s: next(iter(local.records(s))).data["sha256"] for s in ("audio", "video", "object3d", "html")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = sync(tracker.open_store(store), pg_url, blobs=bucket.url)
    assert report.blobs.failed == 0 and not report.blobs.errors
    keys = set(bucket.keys())
    assert {bucket.key(sha) for sha in media.values()} <= keys
    for sha in media.values():
        assert bucket.read(sha) == (store / "blobs" / "sha256" / sha[:2] / sha[2:]).read_bytes()
    monkeypatch.setenv("TRACKER_TEAM_BLOBS", bucket.url)
    monkeypatch.setenv("TRACKER_BLOB_CACHE", str(tmp_path / "cache"))
    team = tracker.open_store(pg_url).run("media")
    assert {s: next(iter(team.records(s))).data["sha256"] for s in media} == media
    fetched = blobs_of(team).fetch(media["html"], None)
    assert Path(os.fspath(fetched)).read_bytes().endswith(b"<p>synced</p>")
