"""The registry kept warm in a long-lived reader (the dashboard's): later questions see what other processes
log, use and re-alias, whether in a new run, a run resumed, a run still open, or by an alias edit, without
reading the catalog again; the hints file is a hint only."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import tracker
from tracker.read.index import artifacts as warm_mod

from .conftest import cli, make_chain


def _py(code: str, store: Path, *args: str) -> str:
    res = subprocess.run([sys.executable, "-c", code, str(store), *args], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


NEW_RUN = """
import sys, pathlib, tracker
p = pathlib.Path(sys.argv[1]).parent / sys.argv[2]
p.write_text(sys.argv[2])
with tracker.start_run(project="mnist", store=sys.argv[1], system_metrics=False, run_id=sys.argv[3],
                       resume=True) as r:
    r.log_artifact(p, name="mnist-cnn", type="model")
"""


@pytest.fixture
def warm_store(chain, monkeypatch):
    store, ids = chain
    s = tracker.open_store(store)
    assert s.artifact("mnist-cnn:latest").version == "v1"  # built once
    builds = []
    real = warm_mod.Warm.build

    def counting(self):
        builds.append(1)
        return real(self)

    monkeypatch.setattr(warm_mod.Warm, "build", counting)
    return store, ids, s, builds


def test_a_new_run_and_a_resumed_run_are_seen(warm_store) -> None:
    store, ids, s, builds = warm_store
    _py(NEW_RUN, store, "content-a", "newrun")  # a new run folder
    assert s.artifact("mnist-cnn:latest").version == "v2"
    time.sleep(0.01)
    _py(NEW_RUN, store, "content-b", ids["prep"])  # a finished run resumed: found through its hint
    assert s.artifact("mnist-cnn:latest").version == "v3"
    assert s.artifact("mnist-cnn:v3").producer == ids["prep"]
    assert builds == []  # never built again from the whole catalog


def test_an_alias_edit_by_another_process_is_seen(warm_store) -> None:
    store, ids, s, builds = warm_store
    res = cli(store, "artifact", "alias", "mnist-cnn:v0", "prod")
    assert res.returncode == 0, res.stderr
    assert s.artifact("mnist-cnn:prod").version == "v0"
    assert builds == []


OPEN_RUN = """
import sys, time, pathlib, tracker
store, go = sys.argv[1], pathlib.Path(sys.argv[2])
src = go.parent / "late.bin"
with tracker.start_run(project="mnist", store=store, system_metrics=False) as r:
    print(r.id, flush=True)
    while not go.exists():
        time.sleep(0.005)
    for i in range(50):
        r.log({"loss": 1.0 / (i + 1)})     # lines that are not artifacts
    src.write_bytes(b"late weights")
    r.log_artifact(src, name="mnist-cnn", type="model")
    print("logged", flush=True)
    while pathlib.Path(str(go) + ".end").exists() is False:
        time.sleep(0.005)
"""


def test_a_run_still_open_logging_later_is_seen(chain, tmp_path: Path) -> None:
    store, ids = chain
    go = tmp_path / "go"
    # No hints at all (a folder where the file would be: writers cannot leave one), so that the
    # run's growing segment alone must tell.
    (store / warm_mod.HINTS).unlink()
    (store / warm_mod.HINTS).mkdir()
    proc = subprocess.Popen([sys.executable, "-c", OPEN_RUN, str(store), str(go)], stdout=subprocess.PIPE,
                            text=True)
    try:
        run_id = proc.stdout.readline().strip()
        s = tracker.open_store(store)
        assert s.artifact("mnist-cnn:latest").version == "v1"  # built while the run is open
        warm = s.__dict__["_registry"]
        assert run_id in warm.live
        go.touch()
        assert proc.stdout.readline().strip() == "logged"
        latest = s.artifact("mnist-cnn:latest")
        assert latest.version == "v2" and latest.producer == run_id
    finally:
        Path(str(go) + ".end").touch()
        proc.wait(timeout=60)
    assert s.artifact("mnist-cnn:latest").version == "v2"


def test_the_hints_file_is_only_a_hint(warm_store) -> None:
    store, ids, s, builds = warm_store
    first = [(c.qualified, c.aliases, [v.sha256 for v in c.versions]) for c in s.artifacts()]
    (store / warm_mod.HINTS).unlink()
    fresh = tracker.open_store(store)
    assert [(c.qualified, c.aliases, [v.sha256 for v in c.versions]) for c in fresh.artifacts()] == first
    assert [(c.qualified, c.aliases, [v.sha256 for v in c.versions]) for c in s.artifacts()] == first
    assert len(builds) == 2  # the fresh reader built, and the warm one found its hints gone: built again
    (store / warm_mod.HINTS).write_text("")  # replaced by a shorter one: built again, and sees the new run
    _py(NEW_RUN, store, "content-c", "another")
    assert s.artifact("mnist-cnn:latest").version == "v2"
    # A hint naming a run that is not there, or a torn last line, is harmless.
    with open(store / warm_mod.HINTS, "a") as f:
        f.write("no-such-run\npartial")
    assert s.artifact("mnist-cnn:latest").version == "v2"


def test_writers_leave_a_hint_before_they_write(tmp_path: Path) -> None:
    store = tmp_path / "s"
    make_chain(store, tmp_path / "src")
    lines = (store / warm_mod.HINTS).read_text().splitlines()
    # prep logs; each train uses and logs; set_alias hints before and after; eval uses and logs.
    assert len(lines) == 1 + 2 * 2 + 2 + 2


def test_a_fresh_reader_reads_the_kept_registry_back_and_never_a_stale_one(chain, monkeypatch) -> None:
    from tracker.read.registry import LazyCollection, Registry

    store, ids = chain
    first = tracker.open_store(store).registry()  # derived, and kept under index/
    assert (store / "index" / warm_mod.REGISTRY).is_file()
    built = []
    real = Registry._build
    monkeypatch.setattr(Registry, "_build", lambda self, figs: (built.append(1), real(self, figs))[1])
    again = tracker.open_store(store).registry()
    assert built == [] and all(isinstance(c, LazyCollection) for c in again.collections.values())
    assert tracker.open_store(store).lineage(ids["train-2"]) == tracker.open_store(store).lineage(ids["train-2"])
    assert [(c.qualified, c.aliases, [v.sha256 for v in c.versions]) for c in again.names()] == \
        [(c.qualified, c.aliases, [v.sha256 for v in c.versions]) for c in first.names()]
    # Something new: the kept registry no longer fits the figures, and is derived again.
    _py(NEW_RUN, store, "content-z", "later")
    assert tracker.open_store(store).artifact("mnist-cnn:latest").version == "v2"
    assert built == [1]
