"""kill -9 in the middle of logging a large artifact: never a record without its complete blob.

The child makes the cut itself, so the test checks the same thing on an idle
and on a busy machine: it copies through the store's real code, and when the
bytes copied reach the round's cut (or once the blob is renamed to its hash,
before the record is written) it says so on stdout and waits; the test checks
that the copy is really in progress, then sends SIGKILL.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import tracker
from tracker.capture.blobs import CHUNK, THREAD_MIN, blob_path, hash_file

CHILD = r"""
import os, sys, tracker
from tracker.capture import blobs, hashing

store, run_id, path, cut, how = sys.argv[1:6]
cut = int(cut)
copied = 0


def pause(where):
    print(where, copied, flush=True)
    sys.stdin.readline()  # the test kills this process here
    sys.exit("not killed")


def counted(n):
    global copied
    copied += n
    if 0 <= cut <= copied:
        pause("INSIDE")
    return n


real_range, real_write, real_settle = os.copy_file_range, hashing._write_all, blobs.BlobStore._settle


def copy_file_range(*args, **kwargs):
    if how == "write":
        raise OSError(95, "not here")  # before any byte moved: the store falls back to read and write
    return counted(real_range(*args, **kwargs))


def write_all(fd, data):
    real_write(fd, data)
    counted(len(data))


def settle(self, *args):
    final = real_settle(self, *args)
    if cut == -1:
        pause("SETTLED")
    return final


os.copy_file_range, hashing._write_all, blobs.BlobStore._settle = copy_file_range, write_all, settle
run = tracker.start_run(store=store, run_id=run_id, resume=True, system_metrics=False)
a = run.log_artifact(path, name="big")
print("ACK", a.sha256, flush=True)
run.finish()
"""

SIZE = 64 << 20  # above THREAD_MIN: the threaded copy, 16 chunks
# (bytes copied when the child stops, copy path): the first chunk, the middle, every byte but not yet
# renamed; -1: renamed to its hash, record not written. "kernel": copy_file_range; "write": read and write.
CUTS = [(CHUNK, "kernel"), (SIZE // 2, "kernel"), (SIZE, "kernel"), (-1, "kernel"),
        (CHUNK, "write"), (SIZE // 2 + CHUNK, "write"), (-1, "write")]


def _child(store: Path, run_id: str, path: Path, cut: int, how: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(store), run_id, str(path), str(cut), how],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _parts(store: Path) -> list[Path]:
    return sorted((store / "blobs" / "tmp").glob("*.part"))


def test_kill_while_logging_a_large_artifact(tmp_path: Path) -> None:
    assert SIZE >= THREAD_MIN
    store = tmp_path / "store"
    src = tmp_path / "big.bin"
    block = os.urandom(1 << 20)
    with open(src, "wb") as f:
        for _ in range(SIZE >> 20):
            f.write(block)
    run_id = "kill-artifact"
    # One uninterrupted round: acknowledged, recorded.
    p = _child(store, run_id, src, -2, "kernel")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    acked = {out.split()[1]}
    cut_off: set[str] = set()
    for i, (cut, how) in enumerate(CUTS):
        # A different content each round: a new blob to be cut off.
        with open(src, "r+b") as f:
            f.write(i.to_bytes(8, "little") + b"round")
        sha = hash_file(src)[0]
        cut_off.add(sha)
        before = set(_parts(store))
        p = _child(store, run_id, src, cut, how)
        line = p.stdout.readline()
        where, copied = line.split() if line else ("", "")
        if cut == -1:
            assert where == "SETTLED", (line, p.stderr.read())
            assert blob_path(store, sha).is_file()  # the blob is there; its record is not
        else:
            assert where == "INSIDE" and cut <= int(copied) < cut + CHUNK, (line, p.stderr.read())
            # Really inside the write: a partial copy of at least `cut` bytes under blobs/tmp.
            [part] = sorted(set(_parts(store)) - before)
            assert cut <= part.stat().st_size <= SIZE
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=60)
        assert p.returncode == -signal.SIGKILL
    view = tracker.open_store(store).run(run_id)
    recorded = {a.sha256: a for a in view.artifacts()}
    # What was acknowledged is recorded and readable, byte for byte; nothing cut off is recorded.
    assert set(recorded) == acked and not cut_off & set(recorded)
    # Every record names a complete blob.
    for sha, a in recorded.items():
        assert a.path.stat().st_size == SIZE
        assert hash_file(a.path) == (sha, SIZE)
    # Cut-off copies are only ever under blobs/tmp, never under a hash name.
    for p in (store / "blobs" / "sha256").rglob("*"):
        if p.is_file():
            assert hashlib.sha256(p.read_bytes()).hexdigest() == p.parent.name + p.name
    assert len(_parts(store)) == len([c for c, _ in CUTS if c != -1])
