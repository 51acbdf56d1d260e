"""gc and du with the capture module's real blobs: artifacts and images logged by another process."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tracker
from tracker.capture.blobs import references
from tracker.lifecycle import collect_garbage, disk_usage, iter_blobs

from .support import make_runs, spawn, wait_ready
from .test_gc_du import blob_names, put_blob


def test_gc_while_another_process_logs_artifacts_and_images_loses_nothing(
        store: Path, tmp_path: Path, cmd: Callable[..., Any]) -> None:
    make_runs(store, 2)
    s = tracker.open_store(store)
    orphan = put_blob(store, b"an old blob that no run names")
    again = tmp_path / "again.bin"
    again.write_bytes(b"old content that the new run logs again")
    reused = put_blob(store, again.read_bytes())  # old and unreferenced until the new run names it
    s.remove(["run1"])
    files = tmp_path / "files"
    files.mkdir()
    for i in range(40):
        (files / f"f{i}.bin").write_bytes(os.urandom(2000) + bytes([i]))
    child = spawn(store, f"""
        import time
        import numpy as np
        import tracker
        with tracker.start_run(project="p", run_id="new", system_metrics=False) as run:
            print("ready", flush=True)
            for i in range(40):
                run.log_artifact(r"{files}/f%d.bin" % i, name="f%d" % i)
                run.log_image("img%d" % i, np.full((8, 8, 3), i, dtype=np.uint8))
                if i % 10 == 5:
                    run.log_artifact(r"{again}", name="again")
                run.log({{"i": i}})
                time.sleep(0.02)
    """)
    assert wait_ready(child) == "ready"
    passes = 0
    while child.poll() is None:
        collect_garbage(s)
        passes += 1
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    report = collect_garbage(s)
    assert passes >= 1 and report.trash_runs == []
    view = s.run("new")
    arts = view.artifacts()
    assert [a.name for a in arts if a.name.startswith("f")] == [f"f{i}" for i in range(40)]
    for a in arts:
        with view.open_artifact(a.name) as f:
            assert hashlib.sha256(f.read()).hexdigest() == a.sha256
    refs = references(view)
    assert len(refs) == 40 + 40 + 1 and reused in refs
    present = {sha: p for sha, p, _ in iter_blobs(store)}
    for sha in refs:
        assert hashlib.sha256(present[sha].read_bytes()).hexdigest() == sha
    assert orphan not in blob_names(store)
    proc = cmd("verify")
    assert proc.returncode == 0, proc.stdout


def test_du_counts_real_blobs_once(store: Path, tmp_path: Path) -> None:
    data = tmp_path / "weights.bin"
    data.write_bytes(b"w" * 10000)
    for rid in ("a", "b"):
        with tracker.start_run(project="p", run_id=rid, store=store, system_metrics=False) as run:
            run.log_artifact(data, name="weights")
    usage = disk_usage(tracker.open_store(store))
    assert [r["blobs"] for r in usage["runs"]] == [10000, 10000]
    assert usage["projects"][0]["blobs"] == 10000
    jsonl = sum(r["jsonl"] for r in usage["runs"])
    assert usage["runs_total"] == jsonl + 10000 and usage["blobs"]["unreferenced"] == 0
    # An hour later, with both runs gone, gc takes the blob.
    s = tracker.open_store(store)
    s.remove(["a", "b"])
    (sha, path, _), = iter_blobs(store)
    old = time.time() - 7200
    os.utime(path, (old, old))
    assert s.gc().blobs == 1 and not path.exists()
