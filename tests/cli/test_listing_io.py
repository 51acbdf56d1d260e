"""``tracker runs`` reads what listing needs, not every record: bytes read per run stay flat.

The first listing of a store builds its run catalog (``<store>/index/``, which
parses each run once); every listing after it reads the catalog and, per
segment, the last line it covers (the check that the catalog still holds):
that is what is measured here.

Bytes are counted by the kernel (``rchar`` of /proc/self/io: every byte any
read call of the process returned) around the real command, run in-process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.support import write_run

IO = Path("/proc/self/io")
pytestmark = pytest.mark.skipif(not IO.exists(), reason="needs /proc/self/io (Linux)")

#: What one run may cost to list once the catalog exists: its catalog entry, the last covered
#: line of its segment, and a little slack for the reads around the listing (/proc/self/io itself).
PER_RUN_BUDGET = 2 * 1024 + 512


def _rchar() -> int:
    for line in IO.read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def _make_store(root: Path, runs: int, records: int) -> int:
    """``runs`` runs of ``records`` metrics records each; returns the store's size in bytes."""
    first = write_run(root, "run00000", [(s, {"loss": 1.0 / (s + 1), "acc": s * 1e-3}) for s in range(records)],
                      name="r0", project="p")
    for i in range(1, runs):
        run_dir = root / "runs" / f"run{i:05d}"
        run_dir.mkdir()
        shutil.copyfile(first, run_dir / first.name)
    return runs * first.stat().st_size


def _bytes_to_list(cli, store: Path, runs: int) -> int:
    """Bytes read by a listing of the store, once its catalog exists."""
    assert cli("--store", str(store), "runs", "--format", "json").exit_code == 0  # builds the catalog
    before = _rchar()
    result = cli("--store", str(store), "runs", "--format", "json")
    read = _rchar() - before
    assert result.exit_code == 0, result.output
    docs = json.loads(result.stdout)
    assert len(docs) == runs and all(d["status"] == "finished" for d in docs)
    return read


def test_listing_2000_runs_reads_a_few_kib_per_run_whatever_their_length(cli, tmp_path, host):
    warm = tmp_path / "warm"
    _make_store(warm, 3, 5)
    _bytes_to_list(cli, warm, 3)  # imports and first-use costs are not the listing's

    short = tmp_path / "short"
    short_size = _make_store(short, 2000, 10)
    long = tmp_path / "long"
    long_size = _make_store(long, 200, 1000)
    longer = tmp_path / "longer"
    longer_size = _make_store(longer, 20, 10_000)

    per_run = {
        10: _bytes_to_list(cli, short, 2000) / 2000,
        1000: _bytes_to_list(cli, long, 200) / 200,
        10_000: _bytes_to_list(cli, longer, 20) / 20,
    }
    print(f"\nbytes read per run by `tracker runs`: {per_run} "
          f"(segment sizes {short_size // 2000}, {long_size // 200}, {longer_size // 20} bytes)")
    assert all(v <= PER_RUN_BUDGET for v in per_run.values())
    # A hundred times more records, not one byte more read per run (what differs is the listing's
    # own fixed reads, shared by 20 runs instead of 200).
    assert abs(per_run[10_000] - per_run[1000]) < 512
    assert per_run[1000] < 0.1 * long_size / 200
    # The whole 2,000-run listing reads a few MiB at most.
    assert per_run[10] * 2000 < 2000 * PER_RUN_BUDGET
