"""The run and store API of named artifacts: versions, aliases, uses, downloads checked, bad input refused."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import tracker
from tracker.capture.blobs import blob_path

from .conftest import make_chain


@pytest.fixture
def store(tmp_store: Path) -> Path:
    return tmp_store


def _run(**kw):
    return tracker.start_run(project="lab", system_metrics=False, **kw)


def _files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file() and "index" not in p.relative_to(store).parts)


def test_versions_by_content_and_no_new_bytes_for_the_same_content(store: Path, tmp_path: Path) -> None:
    f = tmp_path / "model.pt"
    f.write_bytes(b"one")
    with _run() as r:
        a0 = r.log_artifact(f, name="m", type="model")
        a0b = r.log_artifact(f, name="m", type="model")
        f.write_bytes(b"two")
        a1 = r.log_artifact(f, name="m", type="model", aliases="best")
    assert (a0.version, a0b.version, a1.version) == ("v0", "v0", "v1")
    assert a1.aliases == ["latest", "best"] and a0.aliases == []
    assert a0.producer == r.id and a0.type == "model" and a0.project == "lab"
    s = tracker.open_store()
    assert [v.version for v in s.artifact_collection("m").versions] == ["v0", "v1"]
    # view.artifacts(): one per record, each knowing its version.
    assert [(a.name, a.version) for a in s.run(r.id).artifacts()] == [("m", "v0"), ("m", "v0"), ("m", "v1")]
    blobs = [p for p in (store / "blobs" / "sha256").rglob("*") if p.is_file()]
    assert len(blobs) == 2


def test_relogging_a_large_unchanged_file_writes_nothing(store: Path, tmp_path: Path) -> None:
    from tracker.write.artifacts import PROBE_MIN

    f = tmp_path / "big.bin"
    f.write_bytes(os.urandom(PROBE_MIN + 5))
    with _run() as r:
        a = r.log_artifact(f, name="big", type="dataset")
        blob = blob_path(store, a.sha256)
        before = os.stat(blob)
        tmp = store / "blobs" / "tmp"
        leftovers = set(tmp.iterdir()) if tmp.exists() else set()
        again = r.log_artifact(f, name="big", type="dataset")
    after = os.stat(blob)
    assert again.version == "v0" and again.sha256 == a.sha256
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)  # not replaced by a new copy
    assert (set(tmp.iterdir()) if tmp.exists() else set()) == leftovers  # no temporary copy was made


def test_use_records_the_version_and_returns_it(store: Path, tmp_path: Path) -> None:
    f = tmp_path / "d.csv"
    f.write_text("x\n")
    with _run(name="prep") as p:
        p.log_artifact(f, name="data", type="dataset")
    with _run(name="train") as t:
        got = t.use_artifact("data")
        assert got.version == "v0" and got.asked is None
        by_alias = t.use_artifact("data:latest", type="dataset")
        with pytest.raises(tracker.TrackerError, match="of type 'dataset', not 'model'"):
            t.use_artifact("data", type="model")
    view = tracker.open_store().run(t.id)
    recs = [r.data for r in view.records("artifact_use")]
    assert recs == [{"name": "data", "project": "lab", "version": "v0", "sha256": got.sha256, "type": "dataset",
                     "alias": "latest"}] * 2
    assert by_alias.consumers == [t.id] and by_alias.producer == p.id
    assert tracker.open_store().artifact("lab/data:v0").consumers == [t.id]


def test_download_file_open_files_checked(store: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "x.txt").write_text("x")
    (folder / "y.txt").write_text("yy")
    single = tmp_path / "w.bin"
    single.write_bytes(b"weights")
    with _run() as r:
        r.log_artifact(folder, name="ds", type="dataset")
        r.log_artifact(single, name="w", type="model")
    s = tracker.open_store()
    ds, w = s.artifact("ds"), s.artifact("w:v0")
    assert [(f.path, f.size) for f in ds.files()] == [("a/x.txt", 1), ("y.txt", 2)]
    out = ds.download(tmp_path / "out")
    assert (out / "a" / "x.txt").read_text() == "x" and (out / "y.txt").read_text() == "yy"
    assert ds.get_path("a/x.txt").download(tmp_path / "one") == tmp_path / "one" / "a" / "x.txt"
    with ds.open("y.txt") as fh:
        assert fh.read() == b"yy"
    with pytest.raises(tracker.TrackerError, match=r"holds 2 files \(a/x.txt, y.txt\)"):
        ds.file()
    with pytest.raises(tracker.TrackerError, match="has no file 'z'"):
        ds.get_path("z")
    assert w.file(tmp_path / "wf") == tmp_path / "wf" / "w.bin"
    assert (tmp_path / "wf" / "w.bin").read_bytes() == b"weights"
    with w.open() as fh:
        assert fh.read() == b"weights"
    assert (Path.cwd() / "artifacts" / "w:v0" / "w.bin") == w.download() / "w.bin"  # W&B's default place


def test_a_damaged_blob_names_artifact_version_and_blob_and_writes_nothing(store: Path, tmp_path: Path) -> None:
    f = tmp_path / "m.bin"
    f.write_bytes(b"good bytes")
    with _run() as r:
        a = r.log_artifact(f, name="m", type="model")
    blob = blob_path(store, a.sha256)
    os.chmod(blob, 0o644)
    blob.write_bytes(b"evil bytes")  # the same size: only the hash tells
    art = tracker.open_store().artifact("m:latest")
    with pytest.raises(tracker.StoreError) as exc:
        art.download(tmp_path / "dl")
    text = str(exc.value)
    assert "lab/m:v0" in text and a.sha256 in text and "\n" not in text
    assert not (tmp_path / "dl").exists() and not list(tmp_path.glob(".dl*"))
    with pytest.raises(tracker.StoreError, match="lab/m:v0"):
        art.file(tmp_path / "dl2")
    assert not (tmp_path / "dl2").exists()
    with pytest.raises(tracker.StoreError, match="lab/m:v0"), art.open() as fh:
        fh.read()


def test_aliases_set_move_remove_and_history(store: Path, tmp_path: Path) -> None:
    ids = make_chain(store, tmp_path / "src")
    s = tracker.open_store()
    assert s.artifact("mnist-cnn:prod").version == "v1"
    moved = tracker.set_alias("mnist-cnn:v0", "prod")
    assert moved.version == "v0" and moved.aliases == ["prod"]
    assert s.artifact("mnist-cnn:v1").aliases == ["latest", "best"]
    tracker.remove_alias("mnist-cnn", "prod")
    c = s.artifact_collection("mnist-cnn")
    assert "prod" not in c.aliases
    assert [(h.alias, h.op, h.version) for h in c.history if h.alias == "prod"] == \
        [("prod", "set", "v1"), ("prod", "set", "v0"), ("prod", "remove", "v0")]
    assert all(h.user for h in c.history if h.how == "edit")
    # The alias edits live in the edit segments of the versions' producers.
    assert (store / "runs" / ids["train-1"] / "edits").is_dir() and (store / "runs" / ids["train-2"] / "edits").is_dir()
    # Setting an alias where it already is writes nothing.
    before = _files(store)
    tracker.set_alias("mnist-cnn:v1", "best")
    assert _files(store) == before


@pytest.mark.parametrize(("alias", "says"), [
    ("latest", "set automatically"), ("v7", "looks like a version number"),
    ("a b", "expected 1 to 64 of the characters"),
    ("x" * 65, "expected 1 to 64"), ("", "expected 1 to 64")])
def test_bad_aliases_are_one_line_and_change_nothing(store: Path, tmp_path: Path, alias: str, says: str) -> None:
    make_chain(store, tmp_path / "src")
    before = _files(store)
    with pytest.raises(tracker.TrackerError, match=says) as exc:
        tracker.set_alias("mnist-cnn:v0", alias)
    assert "\n" not in str(exc.value)
    with pytest.raises(tracker.TrackerError, match=says):
        tracker.remove_alias("mnist-cnn", alias)
    with pytest.raises(tracker.TrackerError, match=says), _run() as r:
        r.log_artifact(tmp_path / "src" / "report.txt", name="x", aliases=[alias])
    after = [p for p in _files(store) if p not in before]
    assert all(p.suffix == ".jsonl" for p in after)  # the run above: its segment, no artifact record, no blob
    assert "artifact" not in tracker.open_store().run(r.id).schemas()


@pytest.mark.parametrize(("name", "says"), [
    ("../x", "must not be a path"), ("/abs", "must not be a path"), ("a/../b", "must not be a path"),
    ("a:b", "must not hold ':'"), ("a\\b", "backslash"), ("", "non-empty"), ("two\nlines", "one line")])
def test_bad_names_are_refused_before_anything_is_written(store: Path, tmp_path: Path, name: str, says: str) -> None:
    f = tmp_path / "f.bin"
    f.write_bytes(b"x")
    with _run() as r:
        with pytest.raises(tracker.SchemaError, match=says) as exc:
            r.log_artifact(f, name=name)
        assert "\n" not in str(exc.value).replace("two\\nlines", "")
    assert not (store / "blobs").exists()
    assert "artifact" not in tracker.open_store().run(r.id).schemas()


def test_unknown_names_and_versions_name_what_exists(store: Path, tmp_path: Path) -> None:
    make_chain(store, tmp_path / "src")
    s = tracker.open_store()
    with pytest.raises(tracker.TrackerError, match=r"no artifact named 'mnist-cn' \(artifacts: mnist/mnist, "
                                                   r"mnist/mnist-cnn, mnist/mnist-eval\)"):
        s.artifact("mnist-cn:prod")
    with pytest.raises(tracker.TrackerError, match=r"no version or alias 'staging' \(versions v0-v1; "
                                                   r"aliases: best, latest, prod\)"):
        s.artifact("mnist-cnn:staging")
    with pytest.raises(tracker.TrackerError, match="no alias 'staging'"):
        tracker.remove_alias("mnist-cnn", "staging")
    with _run() as r, pytest.raises(tracker.TrackerError, match="no artifact named 'nope'"):
        r.use_artifact("nope:latest")
    assert "artifact_use" not in s.run(r.id).schemas()


def test_a_name_keeps_its_type(store: Path, tmp_path: Path) -> None:
    f = tmp_path / "f.bin"
    f.write_bytes(b"x")
    with _run() as r:
        r.log_artifact(f, name="d", type="dataset")
        f.write_bytes(b"y")
        with pytest.raises(tracker.SchemaError, match="is of type 'dataset'.*given type 'model'"):
            r.log_artifact(f, name="d", type="model")
        same = r.log_artifact(f, name="d")  # no type: the name's
    assert same.version == "v1" and same.type == "dataset"
    assert tracker.open_store().artifacts(type="dataset")[0].versions[1].type == "dataset"


def test_the_same_answers_without_derived_data(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_chain(store, tmp_path / "src")

    def answers() -> list:
        s = tracker.open_store()
        return [(c.qualified, c.type, c.aliases, [(v.version, v.sha256, v.producer, v.consumers) for v in c.versions],
                 [(h.alias, h.op, h.version) for h in c.history]) for c in s.artifacts()]

    first = answers()
    shutil.rmtree(store / "index")
    assert answers() == first
    monkeypatch.setenv("TRACKER_INDEX", "off")
    assert answers() == first


def test_an_old_catalog_is_rebuilt_with_the_artifact_figures(store: Path, tmp_path: Path) -> None:
    from tracker.read.index import catalog, container

    make_chain(store, tmp_path / "src")
    tracker.open_store().runs()
    path = catalog.catalog_file(store)
    with container.Reader(path) as rd:
        header = dict(rd.header)
        arrays = {k: bytes(rd.read(k)) for k in rd.arrays if not k.startswith("artifacts")}
    header.pop("arrays")
    header["layout"] = 4  # the layout before artifact figures: no "artifacts" arrays
    container.write(path, header, arrays)
    assert catalog.load(store) is None
    assert tracker.open_store().artifact("mnist-cnn:prod").version == "v1"
    assert catalog.load(store) is not None


def test_logging_reads_no_store_as_a_reader_does(store: Path, tmp_path: Path) -> None:
    from tracker.write.artifacts import PROBE_MIN

    f = tmp_path / "f.bin"
    f.write_bytes(b"x")
    with _run() as r:
        r.log_artifact(f, name="d", type="dataset")
    tracker.open_store().runs()  # a reader: the catalog now knows "d"
    shutil.rmtree(store / "index" / "segments")
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (PROBE_MIN + 1))
    before = sorted(p.name for p in (store / "index").rglob("*"))
    with _run() as r2:
        # Another run: the type is checked against what the catalog holds, nothing derived or written.
        with pytest.raises(tracker.SchemaError, match="is of type 'dataset'"):
            r2.log_artifact(f, name="d", type="model")
        r2.log_artifact(big, name="big", type="dataset")
        r2.log_artifact(big, name="big", type="dataset")
    assert sorted(p.name for p in (store / "index").rglob("*")) == before
