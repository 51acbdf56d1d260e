"""Artifacts: round trips of files and folders, dedup across runs, references, damage."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import tracker
from tracker.capture.blobs import BlobStore, references

from .conftest import blob_files, cli


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_file_round_trip(run: tracker.Run, tmp_path: Path) -> None:
    src = tmp_path / "model.bin"
    data = os.urandom(300_000)
    src.write_bytes(data)
    run.log({"loss": 1.0})
    a = run.log_artifact(src, kind="model")
    assert isinstance(a, tracker.Artifact)
    assert (a.name, a.kind, a.size, a.sha256, a.step) == ("model.bin", "model", len(data), _sha(data), 0)
    assert a.path == run.store / "blobs" / "sha256" / a.sha256[:2] / a.sha256[2:]
    assert a.path.read_bytes() == data
    # The automatic step is not advanced by the artifact.
    run.log({"loss": 0.5})
    view = tracker.open_store(run.store).run(run.id)
    assert view.metrics()["step"].tolist() == [0, 1]
    [got] = view.artifacts()
    assert (got.name, got.kind, got.sha256, got.size, got.path, got.step) == \
        (a.name, a.kind, a.sha256, a.size, a.path, a.step)
    with view.open_artifact("model.bin") as f:
        assert f.read() == data
    out = view.copy_artifact("model.bin", tmp_path / "out" / "copy.bin")
    assert out.read_bytes() == data
    assert not list(tmp_path.glob("out/.*"))  # no temporary left


def test_large_file_hashed_on_the_thread_path(run: tracker.Run, tmp_path: Path) -> None:
    # Above THREAD_MIN the hash runs on a worker thread: it must still be the hash of every byte.
    src = tmp_path / "big.bin"
    data = os.urandom(40 << 20) + b"tail"
    src.write_bytes(data)
    a = run.log_artifact(src, step=7)
    assert a.sha256 == _sha(data) and a.size == len(data) and a.step == 7
    assert _sha(a.path.read_bytes()) == a.sha256


def test_folder_round_trip_with_same_named_files(run: tracker.Run, tmp_path: Path) -> None:
    src = tmp_path / "ckpt"
    files = {"config.json": b'{"lr": 0.1}', "a/weights.bin": os.urandom(1000), "b/weights.bin": os.urandom(2000),
             "a/deep/er/weights.bin": b"third", "empty.txt": b""}
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    a = run.log_artifact(src, name="checkpoint")
    assert a.folder and a.kind == "folder" and a.file_count == 5 and len(a.files()) == 5
    assert a.size == sum(len(d) for d in files.values())
    manifest = BlobStore(run.store).read_manifest(a.sha256)
    assert {e.path: e.sha256 for e in manifest.files} == {k: _sha(v) for k, v in files.items()}
    view = tracker.open_store(run.store).run(run.id)
    out = view.copy_artifact("checkpoint", tmp_path / "restored")
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == files
    with pytest.raises(tracker.TrackerError, match="folder"):
        view.open_artifact("checkpoint")
    # Every blob the run refers to: the manifest and each member.
    assert references(view) == {a.sha256, *(_sha(d) for d in files.values())}


def test_same_content_stored_once_across_runs(tmp_store: Path, tmp_path: Path) -> None:
    src = tmp_path / "data.bin"
    src.write_bytes(os.urandom(50 << 20))
    for _ in range(2):
        with tracker.start_run(system_metrics=False) as r:
            r.log_artifact(src)
    [blob] = blob_files(tmp_store)
    # Two records, one blob of 50 MB: the store holds the bytes once.
    total = sum(p.stat().st_size for p in (tmp_store / "blobs").rglob("*") if p.is_file())
    assert blob.stat().st_size == 50 << 20
    assert total == 50 << 20
    assert sum(p.stat().st_blocks * 512 for p in (tmp_store / "blobs").rglob("*") if p.is_file()) < 51 << 20
    store = tracker.open_store(tmp_store)
    assert [len(store.run(i.id).artifacts()) for i in store.runs()] == [1, 1]
    assert not list((tmp_store / "blobs" / "tmp").iterdir())


def test_reference_without_copy_and_verify_reports_a_change(tmp_store: Path, tmp_path: Path) -> None:
    src = tmp_path / "shared" / "ckpt.pt"
    src.parent.mkdir()
    src.write_bytes(b"weights v1")
    with tracker.start_run(system_metrics=False) as r:
        a = r.log_artifact(src, copy=False)
    assert a.reference and a.path == src.absolute() and a.sha256 == _sha(b"weights v1")
    assert blob_files(tmp_store) == []  # nothing copied
    assert cli(tmp_store, "verify").returncode == 0
    src.write_bytes(b"weights v2!")
    res = cli(tmp_store, "verify")
    assert res.returncode == 1
    assert str(src.absolute()) in res.stdout and r.id in res.stdout and "changed" in res.stdout
    src.unlink()
    res = cli(tmp_store, "verify", "--format", "json")
    assert res.returncode == 1
    [problem] = json.loads(res.stdout)["problems"]
    assert problem["kind"] == "missing" and problem["path"] == str(src.absolute()) and r.id in problem["message"]


def test_damaged_blob_reported_by_verify_and_refused_by_get(tmp_store: Path, tmp_path: Path) -> None:
    src = tmp_path / "preds.csv"
    src.write_bytes(b"id,pred\n" + b"1,0.5\n" * 10000)
    with tracker.start_run(system_metrics=False) as r:
        a = r.log_artifact(src)
    ok = cli(tmp_store, "get", r.id, "preds.csv", "-o", str(tmp_path / "ok.csv"))
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "ok.csv").read_bytes() == src.read_bytes()
    # Flip one byte of the blob (same size), as bit rot would.
    os.chmod(a.path, 0o644)
    with open(a.path, "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0xFF]))
    res = cli(tmp_store, "verify")
    assert res.returncode == 1
    assert str(a.path) in res.stdout and "damaged" in res.stdout and r.id in res.stdout
    dest = tmp_path / "bad.csv"
    res = cli(tmp_store, "get", r.id, "preds.csv", "-o", str(dest))
    assert res.returncode != 0
    assert "damaged" in res.stderr and str(a.path) in res.stderr and "Traceback" not in res.stderr
    assert not dest.exists() and not list(tmp_path.glob(".bad.csv*"))
    # A blob that is gone is named too.
    a.path.unlink()
    res = cli(tmp_store, "verify")
    assert res.returncode == 1 and "missing" in res.stdout and str(a.path) in res.stdout


def test_artifacts_command_and_get_default_path(tmp_store: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "dir" / "sub").mkdir(parents=True)
    (tmp_path / "dir" / "sub" / "x.txt").write_text("x")
    with tracker.start_run(system_metrics=False) as r:
        r.log({"loss": 1.0}, step=4)
        r.log_artifact(tmp_path / "notes.txt")
        r.log_artifact(tmp_path / "dir", name="tree", step=9)
    res = cli(tmp_store, "artifacts", r.id[:10], "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["artifacts"]
    assert [(x["name"], x["kind"], x["size"], x["step"]) for x in rows] == [("notes.txt", "file", 5, 4),
                                                                           ("tree", "folder", 1, 9)]
    table = cli(tmp_store, "artifacts", r.id)
    assert "notes.txt" in table.stdout and rows[0]["sha256"][:12] in table.stdout
    work = tmp_path / "work2"
    work.mkdir()
    res = cli(tmp_store, "get", r.id, "notes.txt", cwd=work)
    assert res.returncode == 0, res.stderr
    assert (work / "notes.txt").read_text() == "hello"
    res = cli(tmp_store, "get", r.id, "tree", cwd=work)
    assert res.returncode == 0 and (work / "tree" / "sub" / "x.txt").read_text() == "x"
    res = cli(tmp_store, "get", r.id, "nope", cwd=work)
    assert res.returncode != 0 and "nope" in res.stderr and "notes.txt" in res.stderr


def test_bad_input_writes_nothing(run: tracker.Run, tmp_path: Path) -> None:
    with pytest.raises(tracker.TrackerError, match="no such file"):
        run.log_artifact(tmp_path / "missing.bin")
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(tracker.SchemaError, match="name"):
        run.log_artifact(tmp_path / "f", name="")
    with pytest.raises(tracker.SchemaError, match="kind"):
        run.log_artifact(tmp_path / "f", kind=3)  # type: ignore[arg-type]
    assert "artifact" not in tracker.open_store(run.store).run(run.id).schemas()
