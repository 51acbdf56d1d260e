"""Two processes logging one name at the same moment: distinct contents get distinct versions, the same
content one version, and every reader numbers them the same way (no counter, no lock)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import tracker

LOGGER = r"""
import os, sys, time
from pathlib import Path
import tracker
store, go, content, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].encode(), sys.argv[4]
src = Path(sys.argv[5])
src.write_bytes(content)
with tracker.start_run(project="lab", store=store, system_metrics=False) as run:
    Path(str(go) + "." + str(os.getpid())).touch()   # ready
    while not go.exists():
        time.sleep(0.001)
    a = run.log_artifact(src, name=name, type="model")
print(a.sha256)
"""


def _race(store: Path, tmp: Path, contents: list[str]) -> list[str]:
    go = tmp / "go"
    procs = [subprocess.Popen([sys.executable, "-c", LOGGER, str(store), str(go), c, "model", str(tmp / f"src{i}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, c in enumerate(contents)]
    deadline = time.monotonic() + 60
    while len(list(tmp.glob("go.*"))) < len(procs):  # every process holds its run open, waiting
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            [p.communicate() for p in procs]
        time.sleep(0.005)
    go.touch()
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(out.strip())
    return outs


def _numbering(store: Path) -> list[tuple[str, str, str]]:
    c = tracker.open_store(store).artifact_collection("lab/model")
    return [(v.version, v.sha256, v.producer) for v in c.versions]


def test_two_processes_log_one_name_at_once(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "store"
    shas = _race(store, tmp_path, ["weights of A", "weights of B"])
    got = _numbering(store)
    assert [v for v, _, _ in got] == ["v0", "v1"] and sorted(s for _, s, _ in got) == sorted(shas)
    assert len({p for _, _, p in got}) == 2
    # The order is the records' (time, run id, writer, seq), whoever reads, from scratch or not.
    shutil.rmtree(store / "index")
    assert _numbering(store) == got
    monkeypatch.setenv("TRACKER_INDEX", "off")
    assert _numbering(store) == got
    recs = []
    for rid in os.listdir(store / "runs"):
        for r in tracker.open_store(store).run(rid).records("artifact"):
            recs.append((r.time, rid, r.writer, r.seq, r.data["sha256"]))
    assert [s for *_, s in sorted(recs)] == [s for _, s, _ in got]


def test_two_processes_log_the_same_content_at_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shas = _race(store, tmp_path, ["same", "same"])
    got = _numbering(store)
    assert len(got) == 1 and got[0][1] == shas[0] == shas[1]
    c = tracker.open_store(store).registry().collections[("lab", "model")]
    assert len(c.loggers[shas[0]]) == 2  # both runs logged it; the first is its producer
    assert len([p for p in (store / "blobs" / "sha256").rglob("*") if p.is_file()]) == 1
