"""Segments in numbers, permissions and sizes a reader must cope with (issue 10, items 7, 8 and 10).

- Item 7: a run with more segments than the reader's open-file limit
  (``RLIMIT_NOFILE`` lowered with ``resource.setrlimit`` in a child reader,
  and for the real ``tracker tail`` and ``tracker export``).
- Item 8: a segment its reader may not open (mode 000; as root, the child
  reader drops the capabilities that pass permission bits): every other run
  is still listed, the unreadable one is reported, and asking for that run
  is a clear ``StoreError``.
- Item 10: a run whose first line (its config) is larger than 16 MiB.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import child_env

NOFILE = 64
SEGMENTS = 120  # well over the limit: every segment open at once cannot work
PER_SEGMENT = 3

READER = r'''
import json, resource, sys, warnings
import tracker
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
warnings.simplefilter("error", tracker.TrackerWarning)
view = tracker.open_store(sys.argv[1]).run("many")
out = {"limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0], "segments": len(view.segment_paths())}
out["records"] = [[r.step, r.data["seg"], r.data["i"]] for r in view.records()]
out["metrics"] = view.metrics()["step"].tolist()
out["table"] = len(view.table("metrics"))
out["rows"] = sum(1 for _ in view.table("metrics").rows())
out["summaries"] = [s.title for s in view.summarize()]
out["info"] = [view.info.status, view.info.records, view.info.writers]
out["runs"] = [i.id for i in tracker.open_store(sys.argv[1]).runs()]
print(json.dumps(out))
'''


def nofile_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    return apply


@pytest.fixture(scope="module")
def many_segments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run written by SEGMENTS real writers in turn (each resume is a segment of its own)."""
    from tests.reliability.support import local_host

    store = tmp_path_factory.mktemp("many") / "store"
    old = tracker.set_host(local_host())
    try:
        step = 0
        for seg in range(SEGMENTS):
            with tracker.start_run(store=store, run_id="many", resume=True) as run:
                for i in range(PER_SEGMENT):
                    run.log({"seg": seg, "i": i})
                    step += 1
    finally:
        tracker.set_host(old)
    assert len(list((store / "runs" / "many").glob("*.jsonl"))) == SEGMENTS
    return store


def test_readers_work_with_more_segments_than_open_files(many_segments: Path, tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-c", READER, str(many_segments), str(NOFILE)], capture_output=True,
                         text=True, env=child_env(tmp_path), cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    assert out["limit"] == NOFILE and out["segments"] == SEGMENTS
    n = SEGMENTS * PER_SEGMENT
    assert out["records"] == [[k, k // PER_SEGMENT, k % PER_SEGMENT] for k in range(n)]
    assert out["metrics"] == list(range(n))
    assert out["table"] == n and out["rows"] == n
    assert out["summaries"] and out["info"] == ["finished", n, SEGMENTS]
    assert out["runs"] == ["many"]


@pytest.mark.parametrize("command", [["tail", "many", "--format", "jsonl"],
                                     ["export", "many", "--format", "jsonl"],
                                     ["export", "many", "--format", "csv"]], ids=["tail", "export", "csv"])
def test_tail_and_export_work_with_more_segments_than_open_files(many_segments: Path, tmp_path: Path,
                                                                command: list[str]) -> None:
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(many_segments), *command],
                         capture_output=True, text=True, env=child_env(tmp_path), cwd=tmp_path, timeout=120,
                         preexec_fn=nofile_limit(NOFILE))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Too many open files" not in res.stderr
    lines = res.stdout.splitlines()
    n = SEGMENTS * PER_SEGMENT
    if command[-1] == "csv":
        assert len(lines) == n + 1
    else:
        steps = [json.loads(line)["step"] for line in lines]
        assert steps == list(range(n))


# --- item 8: an unreadable segment -------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def without_permission_override() -> None:
    """In the child (before exec): as root, give up the capabilities that pass permission bits."""
    if os.geteuid() == 0:
        for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


LISTER = r'''
import json, sys, warnings
import tracker
store = tracker.open_store(sys.argv[1])
out = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        out["runs"] = sorted(i.id for i in store.runs())
    except Exception as exc:
        out["runs_error"] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
out["warnings"] = [str(w.message) for w in caught]
try:
    store.run("locked").info
except Exception as exc:
    out["info_error"] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
out["open"] = [r.data["k"] for r in store.run("open1").records()]
print(json.dumps(out))
'''


@pytest.fixture
def locked_store(tmp_path: Path) -> tuple[Path, Path]:
    """Three runs; one segment of run ``locked`` has mode 000. Returns the store and that segment."""
    from tests.reliability.support import local_host

    store = tmp_path / "store"
    old = tracker.set_host(local_host())
    try:
        for rid in ("open1", "locked", "open2"):
            with tracker.start_run(name=rid, store=store, run_id=rid) as run:
                run.log({"k": 1.0})
        with tracker.start_run(store=store, run_id="locked", resume=True) as run:
            run.log({"k": 2.0})
    finally:
        tracker.set_host(old)
    seg = sorted((store / "runs" / "locked").glob("*.jsonl"))[-1]
    seg.chmod(0)
    probe = subprocess.run([sys.executable, "-c", f"open({str(seg)!r}, 'rb')"], capture_output=True,
                           preexec_fn=without_permission_override)
    if probe.returncode == 0:
        pytest.skip("cannot make a file unreadable here (capabilities could not be dropped)")
    yield store, seg
    seg.chmod(0o644)


def test_an_unreadable_segment_hides_no_other_run(locked_store: tuple[Path, Path], tmp_path: Path) -> None:
    store, seg = locked_store
    res = subprocess.run([sys.executable, "-c", LISTER, str(store)], capture_output=True, text=True,
                         env=child_env(tmp_path), cwd=tmp_path, timeout=60, preexec_fn=without_permission_override)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    assert out.get("runs") == ["open1", "open2"], out
    assert any(str(seg) in w and "Permission denied" in w for w in out["warnings"]), out["warnings"]
    assert out["info_error"].startswith("tracker.core.errors.StoreError: cannot read "), out
    assert str(seg) in out["info_error"] and "Permission denied" in out["info_error"]
    assert out["open"] == [1.0]


@pytest.mark.parametrize("command", [
    pytest.param(["runs"], id="runs"),
    pytest.param(["runs", "--format", "json"], id="json"),
    pytest.param(["show", "locked"], id="show"),
    pytest.param(["verify"], id="verify"),
])
def test_the_cli_lists_the_others_and_names_the_unreadable_segment(locked_store: tuple[Path, Path],
                                                                  tmp_path: Path, command: list[str]) -> None:
    store, seg = locked_store
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), *command], capture_output=True,
                         text=True, env=child_env(tmp_path), cwd=tmp_path, timeout=60,
                         preexec_fn=without_permission_override)
    assert "Traceback" not in res.stderr, res.stderr
    assert str(seg) in res.stderr and "Permission denied" in res.stderr, res.stderr
    if command == ["runs", "--format", "json"]:
        assert res.returncode == 0
        assert sorted(d["id"] for d in json.loads(res.stdout)) == ["open1", "open2"]
    elif command == ["runs"]:
        assert res.returncode == 0 and "open1" in res.stdout and "open2" in res.stdout
    else:  # the run asked for, or the integrity check, cannot be complete: exit 1
        assert res.returncode == 1


# --- item 10: a very large first line ----------------------------------------------------------

def test_a_first_line_over_16_mib_is_read(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    big = "x" * (21 * 1024 * 1024)
    with tracker.start_run(name="big", project="huge", store=store, run_id="big",
                           config={"vocab": big, "lr": 0.1}, tags=["t"]) as run:
        run.log({"k": 1.0})
    seg = next((store / "runs" / "big").glob("*.jsonl"))
    assert seg.read_bytes().index(b"\n") > 1 << 24  # the fault: the start line is over 16 MiB
    with warnings.catch_warnings():
        warnings.simplefilter("error", tracker.TrackerWarning)
        (info,) = tracker.open_store(store).runs()
        assert (info.name, info.project, info.tags, info.status) == ("big", "huge", ["t"], "finished")
        assert info.config["lr"] == 0.1 and info.config["vocab"] == big
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "runs", "--format", "json"],
                         capture_output=True, text=True, env=child_env(tmp_path), cwd=tmp_path, timeout=60)
    assert res.returncode == 0, res.stderr
    (doc,) = json.loads(res.stdout)
    assert doc["name"] == "big" and doc["project"] == "huge"
