"""tracker without its C extension: the write path's tests again, with ``TRACKER_PURE_PYTHON=1``.

A machine without a C compiler installs tracker without ``tracker.write._fastline``
and logs through the Python methods alone; this runs the tests of the write
path, its faults and a full disk in a child pytest with the extension turned
off, so that the Python path stays as tested as the C one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WRITE_PATH_TESTS = ["tests/test_api.py", "tests/test_fast_path.py", "tests/test_golden.py", "tests/test_store.py",
                    "tests/reliability/test_writer_faults.py", "tests/reliability/test_disk.py"]


def test_the_extension_can_be_turned_off() -> None:
    code = ("import threading, tracker, tracker.write.route as r, tracker.write.fast as f\n"
            "print(r.fast_append is None, f.Lock is threading.Lock, f.fastline is None,\n"
            "      type(tracker.Run.log).__name__ == type(tracker.Run.log_record).__name__ == 'function')")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TRACKER_PURE_PYTHON": "1"},
                         capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert out == ["True", "True", "True", "True"]


@pytest.mark.slow
def test_the_write_path_tests_pass_without_the_extension(tmp_path: Path) -> None:
    env = {**os.environ, "TRACKER_PURE_PYTHON": "1"}
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                          "--basetemp", str(tmp_path / "t"), *WRITE_PATH_TESTS],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert " passed" in res.stdout.splitlines()[-1] and "skipped" not in res.stdout.splitlines()[-1]
