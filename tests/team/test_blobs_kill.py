"""kill -9 of ``tracker sync`` in the middle of a large upload, ten times, then a clean resume (S3 and file://)."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tracker

from .conftest import Bucket

pytestmark = pytest.mark.slow


def _bucket_keys(bucket: Bucket) -> set[str]:
    return {k for k in bucket.keys() if k.startswith("team/sha256/")}


def _mid_upload(bucket: Bucket, big_key: str, since: int) -> bool:
    """Whether the large blob's upload is under way (and not finished)."""
    if bucket.kind == "s3":
        parts = [r for r in bucket.requests()[since:] if r[1].endswith(big_key) and "partNumber=" in r[2]]
        return len(parts) >= 1
    folder = bucket.root / Path(big_key).parent
    return folder.is_dir() and any("#" in p.name for p in folder.iterdir())


def test_kill_during_a_large_upload_ten_times_then_resume(tmp_path: Path, pg_url: str, bucket: Bucket) -> None:
    rng = np.random.default_rng(3)
    big = rng.integers(0, 256, (96 if bucket.kind == "file" else 48) << 20, dtype=np.uint8).tobytes()
    big_sha = hashlib.sha256(big).hexdigest()
    (tmp_path / "big.bin").write_bytes(big)
    store = tmp_path / "store"
    with tracker.start_run("lab", store=store, run_id="alpha") as run:
        run.log_artifact(tmp_path / "big.bin")
        for i in range(4):
            (tmp_path / f"s{i}.txt").write_bytes(b"small %d" % i)
            run.log_artifact(tmp_path / f"s{i}.txt")
    big_key = bucket.key(big_sha)
    if bucket.server is not None:
        bucket.server.part_delay = 1.0
    cmd = [sys.executable, "-m", "tracker", "--store", str(store), "sync", pg_url, "--blobs", bucket.url]
    interrupted = 0
    try:
        for _ in range(10):
            since = len(bucket.requests())
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            end = time.monotonic() + 60
            while not _mid_upload(bucket, big_key, since) and proc.poll() is None and time.monotonic() < end:
                time.sleep(0.002)
            time.sleep(random.uniform(0, 0.05 if bucket.kind == "file" else 0.5))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            keys = _bucket_keys(bucket)
            if big_key in keys:  # the upload finished before the kill: then it is whole
                assert hashlib.sha256(bucket.read(big_sha)).hexdigest() == big_sha
                bucket.delete(big_sha)
            else:
                interrupted += 1
            # Nothing that passes for the large blob: no object at its key, in a listing or by name.
            import obstore

            with pytest.raises(FileNotFoundError):
                obstore.head(bucket.store(), big_key)
    finally:
        if bucket.server is not None:
            bucket.server.part_delay = 0.0
    assert interrupted >= 8, f"only {interrupted} of 10 kills landed mid-upload"
    missing = {bucket.key(s) for s in _local_shas(store)} - _bucket_keys(bucket)
    assert big_key in missing
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"blobs: {len(missing)} uploaded" in res.stdout
    assert hashlib.sha256(bucket.read(big_sha)).hexdigest() == big_sha
    assert {bucket.key(s) for s in _local_shas(store)} <= _bucket_keys(bucket)
    local = store / "blobs" / "sha256" / big_sha[:2] / big_sha[2:]
    assert hashlib.sha256(local.read_bytes()).hexdigest() == big_sha  # the local blob is never touched


def _local_shas(store: Path) -> list[str]:
    return [p.parent.name + p.name for p in (store / "blobs" / "sha256").glob("*/*")]
