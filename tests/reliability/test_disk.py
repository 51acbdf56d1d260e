"""Full disk and read-only stores, for real.

- A child process whose file size limit (RLIMIT_FSIZE) is reached mid-run:
  Python ignores SIGXFSZ, so the write that crosses the limit is cut short
  and the next fails with EFBIG, as on a full disk.
- A small tmpfs that fills up, then gets room again (needs mount rights;
  skipped without them).
- A store made read-only with permission bits, read and written by a child
  running as another user (root passes permission bits), and a store on a
  read-only mount.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import ack_lines, child_env, read_run, spawn, tree_hashes

FSIZE_LIMIT = 48 * 1024


def fill(work: Path, store: Path, run_id: str, limit: int) -> tuple[list[int], dict]:
    out = work / f"fill-{run_id}.txt"
    p = spawn("fill", work, out, child_env(work), "--store", str(store), "--run-id", run_id,
              "--fsize-limit", str(limit))
    assert p.wait(120) == 0, out.with_suffix(".err").read_text()
    lines = ack_lines(out)
    assert lines[0][0] == "ready"
    report = {}
    for line in out.with_suffix(".err").read_text().splitlines():
        if line.startswith("{"):
            report.update(json.loads(line))
    return [int(a[0]) for a in lines[1:]], report


def assert_clean_segments(view: tracker.RunView) -> None:
    """No partial line anywhere: every segment ends with a newline and every line is an event."""
    for seg in view.segment_paths():
        data = seg.read_bytes()
        assert data.endswith(b"\n"), f"{seg} ends with a partial line"
    assert view.problems == []


@pytest.mark.parametrize("limit", [FSIZE_LIMIT, FSIZE_LIMIT + 77, FSIZE_LIMIT + 150])
def test_file_size_limit_mid_run_raises_store_error_and_keeps_every_acknowledged_record(tmp_path: Path,
                                                                                        limit: int) -> None:
    store = tmp_path / "store"
    acked, report = fill(tmp_path, store, "full", limit)
    assert len(acked) > 100
    # log raised a clear StoreError, three times in a row, naming the file and the cause.
    assert len(report["errors"]) == 3
    for err in report["errors"]:
        assert err.startswith("StoreError: cannot append to ") and "File too large" in err, err
    view, records = read_run(store, "full")
    assert [r.data["k"] for r in records] == acked  # every acknowledged record, nothing more
    assert all(r.data["pad"] == r.data["k"] * 1.5 for r in records)
    assert_clean_segments(view)
    (seg,) = view.segment_paths()
    assert seg.stat().st_size <= limit
    # The writer could not write its finish event: once it is gone, the run reads as crashed.
    assert view.info.status == "crashed" and "finish_error" in report


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True,
                             text=True)
    except FileNotFoundError:
        pytest.skip("cannot mount a tmpfs here: no mount command")
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_full_tmpfs_raises_store_error_then_logging_goes_on_when_room_is_made(small_tmpfs: Path,
                                                                             host: tracker.Host) -> None:
    store = small_tmpfs / "store"
    filler = small_tmpfs / "filler"
    run = tracker.start_run(store=store, run_id="full")
    # Take all but ~6 KiB of the filesystem.
    free = shutil.disk_usage(small_tmpfs).free
    filler.write_bytes(b"\0" * (free - 6 * 1024))
    acked, errors, k = [], [], 0
    while len(errors) < 3:
        try:
            run.log({"k": k, "pad": k * 1.5}, step=k)
        except tracker.StoreError as exc:
            errors.append(str(exc))
            continue
        acked.append(k)
        k += 1
    assert acked and all("No space left on device" in e for e in errors), errors
    filler.unlink()  # room again: the same run goes on
    for j in range(k, k + 10):
        run.log({"k": j, "pad": j * 1.5}, step=j)
    run.finish()
    view, records = read_run(store, "full")
    assert [r.data["k"] for r in records] == acked + list(range(k, k + 10))
    assert view.info.status == "finished"
    assert_clean_segments(view)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder another user can reach (pytest's own temporary folders are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="tracker-ro-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(path)


def test_read_only_store_reads_and_refuses_writes_clearly(shared_tmp: Path) -> None:
    store = shared_tmp / "store"
    p = spawn("write", shared_tmp, shared_tmp / "w.txt", child_env(shared_tmp), "--store", str(store),
              "--run-id", "done", "--count", "5")
    assert p.wait(60) == 0
    for path in [store, *store.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    before = tree_hashes(store)
    out = shared_tmp / "ro.txt"
    # As root, drop to another user inside the child so that the permission bits apply.
    args = ["--store", str(store), "--run-id", "done"] + (["--uid", "65534"] if os.geteuid() == 0 else [])
    p = spawn("readonly", shared_tmp, out, child_env(shared_tmp), *args)
    assert p.wait(60) == 0, out.with_suffix(".err").read_text()
    report = json.loads(out.read_text())
    assert report["uid"] != 0
    # Nothing was imported once the other user ran the child: the test does not depend on who may
    # read the folder the checkout, its environment or the interpreter sit in.
    assert report["imported_late"] == []
    assert report["status"] == "finished" and report["values"] == list(range(5)) and report["runs"] == ["done"]
    assert report["new_run"].startswith("StoreError: cannot create ") and "Permission denied" in report["new_run"]
    assert report["resume"].startswith("StoreError: cannot create ") and "Permission denied" in report["resume"]
    assert tree_hashes(store) == before


def test_store_on_read_only_mount(small_tmpfs: Path, host: tracker.Host) -> None:
    store = small_tmpfs / "store"
    with tracker.start_run(store=store, run_id="done") as run:
        run.log({"k": 1.0})
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    before = tree_hashes(store)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading a read-only store is not even worth a warning
        view, records = read_run(store, "done")
        assert [r.data for r in records] == [{"k": 1.0}] and view.info.status == "finished"
    for kwargs in ({"run_id": "new"}, {"run_id": "done", "resume": True}, {}):
        with pytest.raises(tracker.StoreError, match="Read-only file system"):
            tracker.start_run(store=store, **kwargs)
    assert tracker.current_run() is None
    assert tree_hashes(store) == before
