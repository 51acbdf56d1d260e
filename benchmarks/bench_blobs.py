"""Blobs in object storage: what ``tracker sync`` costs to upload a large artifact, and to re-sync, next to floors.

Figures, against an S3 server (moto in server mode, a separate process on
127.0.0.1) and a ``file://`` bucket:

- uploading a run's 1 GB artifact the way ``tracker sync`` does (its
  references read, the bucket asked, the bytes hashed while sent in a
  multipart upload) against obstore's own multipart upload of the same file
  (``obstore.put(store, key, Path(file))``, the same part size and
  concurrency: obstore's defaults), wall time, medians over rounds that
  alternate the two; and SHA-256 of the file alone next to the same floor;
- a re-sync of a store whose blobs are all in the bucket: the requests it
  sends per run (the target: at most one listing per run) and its time next to
  one listing of the bucket alone.

Run: ``python benchmarks/bench_blobs.py [--quick] [--size-mb N] [--backends s3,file]``; one JSON line per figure.
Needs the ``blobs`` extra (obstore) and ``moto[server]``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, main_guard, parse_args, scratch, side_by_side  # noqa: E402

import tracker  # noqa: E402


def _wall(fn) -> float:  # noqa: ANN001
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoProcess:
    """moto's S3 server as its own process (so that it shares no interpreter with the client measured)."""

    def __init__(self) -> None:
        port = _free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([sys.executable, "-c", "from moto.server import main; main()", "-H",
                                      "127.0.0.1", "-p", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("moto's server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


class Counting:
    """Counts obstore's calls by name while active (list, head, put, get)."""

    def __init__(self) -> None:
        import obstore

        self.calls: list[str] = []
        self._saved = {}
        for name in ("put", "get", "head", "list"):
            real = getattr(obstore, name)
            self._saved[name] = real

            def wrapped(*a: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
                self.calls.append(_name)
                return _real(*a, **kw)

            setattr(obstore, name, wrapped)

    def close(self) -> None:
        import obstore

        for name, real in self._saved.items():
            setattr(obstore, name, real)


def bench_large(tmp: Path, url: str, label: str, size: int, args) -> None:  # noqa: ANN001
    import obstore

    from tracker.capture.blobs import hash_file
    from tracker.team.blobs import CONCURRENCY, PART, BucketBlobs, object_key
    from tracker.team.blobsync import BlobSync

    src = tmp / "big.bin"
    if not src.exists():
        block = os.urandom(1 << 20)
        with open(src, "wb") as f:
            for _ in range(size >> 20):
                f.write(block)
    store = tmp / "bstore"
    if not store.exists():
        # environment=False: the package list is a blob of its own, and these figures count the model's alone.
        with tracker.start_run("bench", "large", store=store, run_id="large", system_metrics=False,
                               environment=False) as run:
            sha = run.log_artifact(src, name="model.pt").sha256
    else:
        sha = next(tracker.open_store(store).run("large").records("artifact")).data["sha256"]
    folder = tracker.open_store(store)
    bucket = BucketBlobs(url)
    key = object_key(sha)

    def clear() -> None:
        try:
            obstore.delete(bucket.client, key)
        except FileNotFoundError:
            pass

    def subject() -> float:
        clear()
        sync = BlobSync(folder, BucketBlobs(url))
        t = _wall(lambda: sync.sync_run("large"))
        assert sync.report.uploaded == 1 and not sync.report.errors, sync.report
        return t

    def floor() -> float:
        clear()
        return _wall(lambda: obstore.put(bucket.client, key, src))

    def hash_alone() -> float:
        return _wall(lambda: hash_file(src))

    floor()  # warm the page cache and the connection pool for both
    res = side_by_side(subject, floor, args.repeat)
    seconds = ("value", "floor")
    emit("blobs", f"tracker sync's upload of a {size >> 20} MB artifact, {label} (hashed, multipart)",
         **{k: (round(v / 1e6, 3) if k in seconds else v) for k, v in res.items()}, unit="s", clock="wall",
         floor_is=f"obstore.put(store, key, Path(file)) of the same file (obstore's multipart: {PART >> 20} MiB "
                  f"parts, {CONCURRENCY} in flight)", target="<= 1.25x", size_bytes=size)
    res = side_by_side(hash_alone, floor, max(3, args.repeat // 2))
    emit("blobs", f"sha256 of the same {size >> 20} MB file alone, next to the same floor, {label}",
         **{k: (round(v / 1e6, 3) if k in seconds else v) for k, v in res.items()}, unit="s", clock="wall",
         floor_is="obstore.put(store, key, Path(file)) of the same file", size_bytes=size)


def bench_resync(tmp: Path, url: str, label: str, args) -> None:  # noqa: ANN001
    import numpy as np
    import obstore

    from tracker.team.blobs import BucketBlobs
    from tracker.team.blobsync import BlobSync

    runs = 10 if args.quick else 50
    store = tmp / f"rstore-{label}"
    rng = np.random.default_rng(0)
    for i in range(runs):
        with tracker.start_run("bench", f"r{i}", store=store, run_id=f"r{i:03d}", system_metrics=False,
                               environment=False) as run:
            for j in range(3):
                f = tmp / f"a{i}-{j}.bin"
                f.write_bytes(rng.bytes(4096))
                run.log_artifact(f)
            run.log_image("x", rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
    folder = tracker.open_store(store)
    first = BlobSync(folder, BucketBlobs(url))
    for rid in folder.run_ids():
        first.sync_run(rid)
    assert first.report.uploaded == runs * 4 and not first.report.errors, first.report
    counting = Counting()
    times, floors, calls = [], [], []
    try:
        for _ in range(args.repeat):
            counting.calls.clear()
            sync = BlobSync(folder, BucketBlobs(url))

            def again(sync: BlobSync = sync) -> None:
                for rid in folder.run_ids():
                    sync.sync_run(rid)

            times.append(_wall(again))
            assert sync.report.uploaded == 0 and sync.report.present == runs * 4, sync.report
            calls.append(list(counting.calls))
            bucket = BucketBlobs(url)
            _ = bucket.client
            floors.append(_wall(lambda b=bucket: [m for page in obstore.list(b.client, "sha256/") for m in page]))
    finally:
        counting.close()
    import statistics

    requests = max(len(c) for c in calls)
    emit("blobs", f"re-sync of {runs} runs whose {runs * 4} blobs are all in the bucket, {label}: requests",
         value=requests, floor=runs, ratio=round(requests / runs, 3), unit="requests", target="<= 1 per run",
         floor_is="one listing per run", calls=sorted(set(calls[-1])), rounds=args.repeat)
    emit("blobs", f"re-sync of {runs} runs whose blobs are all in the bucket, {label}: time",
         value=round(statistics.median(times), 4), floor=round(statistics.median(floors), 4),
         ratio=round(statistics.median(times) / statistics.median(floors), 3), unit="s", clock="wall",
         floor_is="one obstore.list of the bucket's sha256/ alone", rounds=args.repeat)


def body(args) -> None:  # noqa: ANN001
    size = (args.size_mb if args.size_mb else (64 if args.quick else 1024)) << 20
    server = MotoProcess()
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                                            "AWS_ENDPOINT_URL", "TRACKER_BLOB_CACHE")}
    try:
        os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret",
                          AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=server.endpoint)
        import boto3

        boto3.client("s3", endpoint_url=server.endpoint).create_bucket(Bucket="bench")
        with scratch() as tmp:
            os.environ["TRACKER_BLOB_CACHE"] = str(tmp / "cache")
            (tmp / "bucket").mkdir()
            for label, url in (("S3 (moto)", "s3://bench/tracker"), ("file://", f"file://{tmp}/bucket/tracker")):
                if args.backends and label.split()[0].rstrip(":/").lower() not in args.backends.split(","):
                    continue
                bench_large(tmp, url, label, size, args)
                bench_resync(tmp, url, label.split()[0].rstrip(":/"), args)
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0],
                                         size_mb=dict(type=int, default=None,
                                                      help="the large artifact's size in MB (default 1024, "
                                                           "quick 64)"),
                                         backends=dict(default="", help="only these, comma-separated: s3, file"))))
