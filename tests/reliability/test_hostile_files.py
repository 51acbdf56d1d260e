"""Paths that are not files (FIFO, socket, device) refused at once, wherever a path enters or a blob is read back.

Each case runs in a child process under a timeout, so that a regression (a
read that blocks on a FIFO, or never ends on ``/dev/zero``) fails the test
instead of hanging the suite; the child measures how long the refusal took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import tracker

from ..childenv import child_environ

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

LIMIT = 30.0  # the child is killed after this: a hang fails the test


def _child(code: str, cwd: Path) -> dict:
    """Run ``code`` in a fresh interpreter; it calls ``timed(fn)`` once: the error raised, and how long it took."""
    script = textwrap.dedent("""\
        import json, os, socket, sys, time
        import tracker
        result = {}
        def timed(fn):
            t0 = time.perf_counter()
            try:
                fn()
            except Exception as exc:
                result['error'] = f'{type(exc).__name__}: {exc}'
            result['seconds'] = time.perf_counter() - t0
        """) + textwrap.dedent(code) + "\nprint(json.dumps(result))\n"
    env = child_environ()
    env["TRACKER_STORE"] = str(cwd / "store")
    try:
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=LIMIT,
                             cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after {LIMIT} s: it blocked on a path that is not a file") from None
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _refused(out: dict, *words: str) -> str:
    assert "error" in out, out
    assert out["seconds"] < 1.0, out
    for w in words:
        assert w in out["error"], (w, out["error"])
    assert "no such file" not in out["error"]
    return out["error"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "pipe")
    return tmp_path


START = "run = tracker.start_run(project='p', system_metrics=False)\n"


def test_log_artifact_of_a_fifo_says_what_it_is(work):
    out = _child(START + "timed(lambda: run.log_artifact('pipe'))", work)
    _refused(out, "pipe is a FIFO (named pipe)", "log_artifact")


def test_log_artifact_of_dev_zero_says_it_is_a_device(work):
    out = _child(START + "timed(lambda: run.log_artifact('/dev/zero'))", work)
    _refused(out, "/dev/zero", "a character device")


def test_log_artifact_of_a_socket_says_it_is_a_socket(work):
    code = START + "s = socket.socket(socket.AF_UNIX)\ns.bind('sock')\ntimed(lambda: run.log_artifact('sock'))"
    _refused(_child(code, work), "sock", "is a socket")


@pytest.mark.parametrize("copy", [True, False])
def test_a_folder_holding_a_fifo_is_refused_naming_it(work, copy):
    folder = work / "ckpt" / "sub"
    folder.mkdir(parents=True)
    (work / "ckpt" / "weights.bin").write_bytes(b"w" * 100)
    os.mkfifo(folder / "queue")
    out = _child(START + f"timed(lambda: run.log_artifact('ckpt', copy={copy}))", work)
    _refused(out, str(folder / "queue"), "is a FIFO")
    # Nothing was recorded for the refused artifact.
    store = tracker.Store(work / "store")
    (info,) = store.runs()
    assert store.run(info.id).artifacts() == []


def test_log_image_of_a_fifo_path(work):
    pytest.importorskip("PIL")
    out = _child(START + "timed(lambda: run.log_image('img', 'pipe'))", work)
    _refused(out, "SchemaError", "pipe", "a FIFO (named pipe)")


def test_open_regular_refuses_a_swap_and_names_the_kind(work):
    from tracker.core.files import NotAFileError, check_regular, open_regular

    for path, kind in ((work / "pipe", "a FIFO (named pipe)"), ("/dev/null", "a character device"),
                       (work, "a folder")):
        with pytest.raises(NotAFileError) as err:
            open_regular(path)
        assert err.value.kind == kind and str(path) in str(err.value)
    (work / "f").write_bytes(b"abc")
    with open_regular(work / "f") as f:
        assert f.read() == b"abc"
    assert check_regular(work, folder_ok=True)


def _store_with_blobs(root: Path) -> tuple[Path, str, str, str]:
    """A store with one file artifact and one image; returns (store, run id, file sha, image sha)."""
    store = root / "store"
    src = root / "model.bin"
    src.write_bytes(os.urandom(1000))
    with tracker.start_run(project="p", store=store, system_metrics=False) as run:
        art = run.log_artifact(src)
        img = None
        try:
            import numpy as np

            img = run.log_image("sample", np.zeros((4, 4), dtype=np.uint8))
        except tracker.TrackerError:
            pass  # no Pillow
    return store, run.id, art.sha256, img


def _make_fifo(blob: Path) -> None:
    os.chmod(blob.parent, 0o755)
    blob.unlink()
    os.mkfifo(blob)


def test_tracker_get_and_verify_refuse_a_blob_that_became_a_fifo(tmp_path):
    from tracker.capture.blobs import blob_path

    store, rid, sha, _ = _store_with_blobs(tmp_path)
    _make_fifo(blob_path(store, sha))
    env = child_environ()
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "get", rid, "model.bin",
                          "-o", str(tmp_path / "out.bin")], capture_output=True, text=True, timeout=LIMIT, env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "is a FIFO (named pipe)" in res.stderr and sha[2:] in res.stderr
    assert not (tmp_path / "out.bin").exists()
    assert list(tmp_path.glob(".out.bin*")) == []
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "verify"],
                         capture_output=True, text=True, timeout=LIMIT, env=env)
    assert res.returncode == 1 and sha[2:] in res.stdout + res.stderr
    assert time.monotonic() - t0 < LIMIT
    out = _child(f"v = tracker.open_store({str(store)!r}).run({rid!r})\ntimed(lambda: v.open_artifact('model.bin'))",
                 tmp_path)
    _refused(out, "StoreError", "is a FIFO")


def _remove_tree(root: Path) -> None:
    """Remove a folder of any depth (shutil.rmtree, and so pytest's cleanup, recurse)."""
    folders, todo = [], [str(root)]
    while todo:
        p = todo.pop()
        folders.append(p)
        with os.scandir(p) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    todo.append(e.path)
                else:
                    os.unlink(e.path)
    for p in reversed(folders):
        os.rmdir(p)


def test_a_folder_deeper_than_the_recursion_limit(tmp_path):
    try:
        _deep_round_trip(tmp_path)
    finally:
        for name in ("deep", "back"):
            if (tmp_path / name).exists():
                _remove_tree(tmp_path / name)


def _deep_round_trip(tmp_path: Path) -> None:
    depth = sys.getrecursionlimit() + 200
    root = tmp_path / "deep"
    deepest = str(root)
    os.mkdir(deepest)
    for _ in range(depth):  # os.makedirs and Path.mkdir(parents=True) recurse themselves
        deepest = os.path.join(deepest, "d")
        os.mkdir(deepest)
    with open(os.path.join(deepest, "leaf.txt"), "w") as f:
        f.write("bottom")
    (root / "top.txt").write_text("top")
    with tracker.start_run(project="p", store=tmp_path / "store", system_metrics=False) as run:
        art = run.log_artifact(root)
    assert art.folder and art.file_count == 2
    view = tracker.open_store(tmp_path / "store").run(run.id)
    from tracker.capture.blobs import BlobStore

    manifest = BlobStore(tmp_path / "store").read_manifest(art.sha256)
    assert sorted(e.path for e in manifest.files) == ["d/" * depth + "leaf.txt", "top.txt"]
    assert view.artifacts()[0].size == len("bottom") + len("top")
    out = view.copy_artifact("deep", tmp_path / "back")
    assert (out / "top.txt").read_text() == "top"
    with open(os.path.join(str(out), *["d"] * depth, "leaf.txt")) as f:
        assert f.read() == "bottom"
