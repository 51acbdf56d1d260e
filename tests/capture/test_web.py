"""What the dashboard may serve: only blobs a run names, whole, from inside the store."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

import tracker
from tracker.ui.capture import artifacts_json, checked_blob, images_json, system_json


def test_checked_blob_serves_only_named_whole_blobs(tmp_store: Path, tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"artifact bytes")
    (tmp_path / "dir" / "x").mkdir(parents=True)
    (tmp_path / "dir" / "x" / "m.txt").write_bytes(b"member")
    (tmp_path / "ref.bin").write_bytes(b"outside the store")
    with tracker.start_run(system_metrics=False) as run:
        a = run.log_artifact(tmp_path / "a.bin")
        folder = run.log_artifact(tmp_path / "dir")
        ref = run.log_artifact(tmp_path / "ref.bin", copy=False)
    with tracker.start_run(system_metrics=False) as other:
        (tmp_path / "b.bin").write_bytes(b"another run's bytes")
        b = other.log_artifact(tmp_path / "b.bin")
    view = tracker.open_store(tmp_store).run(run.id)
    path, meta = checked_blob(view, a.sha256)
    assert path.read_bytes() == b"artifact bytes" and meta["name"] == "a.bin" and meta["size"] == 14
    member = hashlib.sha256(b"member").hexdigest()
    assert checked_blob(view, member)[1]["name"] == "m.txt"
    for sha in (b.sha256, ref.sha256, "../../etc/passwd", "A" * 64, folder.sha256 + "0"):
        with pytest.raises(tracker.TrackerError):
            checked_blob(view, sha)
    os.chmod(a.path, 0o644)
    a.path.write_bytes(b"artifact bytez")
    with pytest.raises(tracker.StoreError, match="damaged"):
        checked_blob(view, a.sha256)
    rows = artifacts_json(view)
    assert [r["name"] for r in rows] == ["a.bin", "dir", "ref.bin"]
    assert rows[1]["members"] == [{"path": "x/m.txt", "size": 6, "sha256": member}]


def test_images_and_system_json(tmp_store: Path) -> None:
    pytest.importorskip("PIL")
    with tracker.start_run(system_metrics=False) as run:
        for step in range(3):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
            run.log_image("sample", np.full((2, 3), step * 40, np.uint8), caption=f"s{step}")
            run.log_record("system", cpu_percent=10.0 * step, memory_used_bytes=1000 + step)
    view = tracker.open_store(tmp_store).run(run.id)
    imgs = images_json(view)
    assert [(i["step"], i["caption"], i["width"]) for i in imgs["sample"]] == [(0, "s0", 3), (1, "s1", 3),
                                                                               (2, "s2", 3)]
    assert checked_blob(view, imgs["sample"][1]["sha256"])[1]["media_type"] == "image/png"
    sysj = system_json(view)
    # The process's first CPU sample reads 0.0 (psutil has no baseline yet): not drawn as 0%.
    assert sysj["system"]["cpu_percent"]["y"] == [None, 10.0, 20.0]
    assert "disk_read_bytes" not in sysj["system"] and sysj["gpus"] == {}
