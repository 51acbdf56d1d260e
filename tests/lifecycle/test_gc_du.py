"""gc and du: blobs in the documented layout, references, the one-hour rule, sizes."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tracker
from tracker.lifecycle import collect_garbage, disk_usage

from .support import make_runs


def put_blob(store: Path, content: bytes, age: float = 7200.0) -> str:
    """A blob in the documented layout, ``blobs/sha256/<2 hex>/<62 hex>``, ``age`` seconds old."""
    sha = hashlib.sha256(content).hexdigest()
    path = store / "blobs" / "sha256" / sha[:2] / sha[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    t = time.time() - age
    os.utime(path, (t, t))
    return sha


def refs_in_summary(view: tracker.RunView) -> list[str]:
    """The test's reference rule: a run references the blobs listed in its summary under "blobs"."""
    return list(view.info.summary.get("blobs", []))


def blob_names(store: Path) -> set[str]:
    root = store / "blobs" / "sha256"
    return {p.parent.name + p.name for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def test_gc_empties_the_trash_and_removes_unreferenced_old_blobs(store: Path) -> None:
    make_runs(store, 3)
    s = tracker.open_store(store)
    kept = put_blob(store, b"kept by run0")
    shared = put_blob(store, b"shared by run0 and run1")
    trashed_only = put_blob(store, b"only run1, which goes to the trash")
    orphan = put_blob(store, b"nobody")
    young = put_blob(store, b"nobody, but written a minute ago", age=60)
    s.update_summary("run0", {"blobs": [kept, shared]})
    s.update_summary("run1", {"blobs": [shared, trashed_only]})
    s.remove(["run1"])
    dry = collect_garbage(s, dry_run=True, references=refs_in_summary)
    assert dry.trash_runs == ["run1"] and dry.blobs == 2 and dry.blobs_kept_young == 1
    assert blob_names(store) == {kept, shared, trashed_only, orphan, young}
    assert s.trashed()[0].id == "run1"
    report = collect_garbage(s, references=refs_in_summary)
    assert report.trash_runs == ["run1"] and report.trash_bytes > 0
    assert report.blobs == 2 and report.blob_bytes == len(b"nobody") + len(b"only run1, which goes to the trash")
    assert blob_names(store) == {kept, shared, young}
    assert s.trashed() == [] and sorted(i.id for i in s.runs()) == ["run0", "run2"]


def test_gc_keeps_blobs_of_a_run_that_appears_during_it(store: Path) -> None:
    make_runs(store, 1)
    s = tracker.open_store(store)
    late = put_blob(store, b"named by a run that appears after the first reference pass")
    calls = []

    def refs(view: tracker.RunView) -> list[str]:
        calls.append(view.id)
        if len(calls) == 1:  # while gc lists references, another process starts a run naming the blob
            make_runs(store, 1, prefix="late")
            s.update_summary("late0", {"blobs": [late]})
        return refs_in_summary(view)

    report = collect_garbage(s, references=refs)
    assert late in blob_names(store) and report.blobs == 0
    assert "late0" in calls


def test_gc_rechecks_the_age_of_each_blob_before_removing_it(store: Path) -> None:
    make_runs(store, 1)
    s = tracker.open_store(store)
    reused = put_blob(store, b"old content logged again meanwhile")
    path = store / "blobs" / "sha256" / reused[:2] / reused[2:]

    def refs(view: tracker.RunView) -> list[str]:
        os.utime(path)  # a writer that logs the same content again refreshes the blob
        return []

    report = collect_garbage(s, references=refs)
    assert reused in blob_names(store) and report.blobs == 0 and report.blobs_kept_young == 1


def test_du_counts_a_shared_blob_once_in_the_total(store: Path) -> None:
    make_runs(store, 2, project="a")
    make_runs(store, 1, project="b", prefix="b")
    s = tracker.open_store(store)
    big = put_blob(store, b"x" * 5000)
    small = put_blob(store, b"y" * 100)
    orphan = put_blob(store, b"z" * 10)
    s.update_summary("run0", {"blobs": [big, small]})
    s.update_summary("run1", {"blobs": [big]})
    s.update_summary("b0", {"blobs": [big]})
    (store / "index").mkdir()
    (store / "index" / "run0.parquet").write_bytes(b"i" * 300)
    (store / "index" / "catalog.json").write_bytes(b"c" * 7)
    make_runs(store, 1, prefix="gone")
    s.remove(["gone0"])
    usage = disk_usage(s, references=refs_in_summary)
    runs = {r["id"]: r for r in usage["runs"]}
    assert [r["id"] for r in usage["runs"]][0] == "run0"
    assert runs["run0"]["blobs"] == 5100 and runs["run1"]["blobs"] == 5000 and runs["run0"]["index"] == 300
    for r in usage["runs"]:
        assert r["jsonl"] == sum(p.stat().st_size for p in (store / "runs" / r["id"]).rglob("*") if p.is_file())
        assert r["total"] == r["jsonl"] + r["blobs"] + r["index"]
    projects = {p["project"]: p for p in usage["projects"]}
    assert projects["a"]["blobs"] == 5100 and projects["b"]["blobs"] == 5000 and projects["a"]["runs"] == 2
    assert [p["project"] for p in usage["projects"]] == ["a", "b"]
    jsonl = sum(r["jsonl"] for r in usage["runs"])
    assert usage["runs_total"] == jsonl + 5100 + 300
    trash = sum(p.stat().st_size for p in (store / "trash").rglob("*") if p.is_file())
    assert usage["trash"] == trash > 0
    assert usage["blobs"]["unreferenced"] == 1 and usage["blobs"]["unreferenced_bytes"] == 10
    assert usage["total"] == jsonl + 5110 + 307 + trash
    assert orphan


def test_du_and_gc_commands(store: Path, cmd: Callable[..., Any]) -> None:
    make_runs(store, 2, project="a")
    proc = cmd("du", "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and [p["project"] for p in doc["projects"]] == ["a"]
    assert doc["total"] == sum(r["total"] for r in doc["runs"])
    proc = cmd("du")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["id", "name", "project", "jsonl", "blobs", "index", "total"]
    assert any(line.startswith("total:") for line in lines)
    proc = cmd("du", "-n", "1")
    assert "1 smaller runs not shown" in proc.stdout
    assert cmd("rm", "run0", "--yes").returncode == 0
    proc = cmd("gc", "--dry-run", "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["dry_run"] and doc["trash_runs"] == ["run0"] and (store / "trash" / "runs" / "run0").is_dir()
    proc = cmd("gc")
    assert proc.returncode == 0 and "removed 1 run" in proc.stdout
    assert not (store / "trash" / "runs" / "run0").exists()
    proc = cmd("--store", str(store.parent / "nothing"), "du")
    assert proc.returncode == 1 and "no store at" in proc.stderr
