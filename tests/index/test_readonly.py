"""A reader that may not write the store answers the same and creates nothing (privileges dropped in a child)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

import tracker
from tests.index.conftest import fill
from tests.index.support import answers, run_child

CHILD = """
import json, os, sys
import tracker
from tests.index.support import answers
# Everything imported first (a read that writes nothing: the JSONL parsed), then the child reads as
# another user, whatever the permissions of the checkout and of the Python installation.
import tracker.read.index.segments, tracker.read.index.catalog, tracker.read.index.build, tracker.read.index.stats
answers({store!r}, "off")
os.setgid(65534)
os.setuid(65534)
print(json.dumps(answers({store!r})))
"""


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture
def shared_store():
    # Outside the test's own temporary folder, which only its owner may enter.
    base = Path(tempfile.mkdtemp(prefix="tracker-ro-"))
    os.chmod(base, 0o755)
    try:
        yield base / "store"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def readable_only(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        os.chmod(p, (mode | 0o444 | (0o111 if p.is_dir() else 0)) & ~0o022)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="dropping privileges needs root")
@pytest.mark.parametrize("index", ["none", "stale"])
def test_a_store_the_reader_cannot_write_reads_the_same_and_gets_no_file(shared_store: Path, index: str):
    fill(shared_store)
    if index == "stale":
        answers(shared_store)  # an index exists, then the run grows behind it
        with tracker.start_run(store=shared_store, run_id="values", resume=True, system_metrics=False) as run:
            run.log({"loss": 0.125})
    else:
        shutil.rmtree(shared_store / "index", ignore_errors=True)
    readable_only(shared_store)
    before = tree(shared_store)
    expected = json.loads(json.dumps(answers(shared_store, "off")))
    proc = run_child(CHILD.format(store=str(shared_store)))
    assert json.loads(proc.stdout) == expected
    assert tree(shared_store) == before
