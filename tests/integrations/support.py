"""Helpers of the import tests: the real ``tracker`` command, a fingerprint of a source folder."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path


def invoke(args: list[str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``python -m tracker ARGS`` in a subprocess (the store from TRACKER_STORE); exit code, stdout, stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TRACKER_RUN_ID"}
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def hash_tree(root: Path) -> dict[str, tuple[str, float]]:
    """Every file and folder under ``root``: its content's sha256 (files) and its mtime."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[path.relative_to(root).as_posix()] = (digest, st.st_mtime)
    return out
