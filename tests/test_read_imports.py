"""What a read imports: only the reading code, never the dashboard, the team store, SQL, data frames or capture.

A fresh process that opens a store, lists its runs and reads a run's metrics,
records and info pays for every module it imports (a tenth of a second of
imports is ten times the ``np.load`` of a small run's columns). ``python -X
importtime`` lists what such a read imports; the list must hold none of the
modules below, so that a change which pulls one in on the read path fails
here, naming the module and the chain that brought it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import tracker

from .childenv import child_environ

#: Modules (and their submodules) that a read of metrics, records and infos does not need.
NOT_ON_THE_READ_PATH = (
    "tracker.ui", "tracker.cli", "tracker.team", "tracker.remote", "tracker.query", "tracker.capture",
    "tracker.lifecycle", "tracker.sweeps", "tracker.alerts", "tracker.mcp", "tracker.integrations",
    "tracker.host.host", "tracker.host.pluginmanager", "tracker.write.api", "tracker.write.wandb",
    "tracker.write.artifacts", "tracker.read.registry",
    "duckdb", "pandas", "polars", "pyarrow", "psycopg", "starlette", "uvicorn", "click", "pluggy", "cattrs",
    "psutil", "obstore", "boto3", "optuna", "mcp", "av", "PIL",
)

READ = """
import sys
sys.stderr.write("-- read --\\n")
import tracker
store = tracker.open_store(sys.argv[1])
infos = store.runs()
view = store.run(infos[0].id)
cols = view.metrics()
recs = list(view.records("metrics"))
info = view.info
assert len(recs) == 50 and len(cols["loss"]) == 50, (len(recs), len(cols["loss"]))
"""


def _imported(stderr: str) -> list[tuple[int, str]]:
    """``(depth, module)`` of each ``-X importtime`` line after the marker, in import order."""
    out = []
    for line in stderr.split("-- read --\n", 1)[1].splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+\d+ \|( *)(\S+)", line)
        if m:
            out.append((len(m.group(1)), m.group(2)))
    return out


def _chain(imported: list[tuple[int, str]], index: int) -> str:
    """The modules that imported ``imported[index]``, outermost first (importtime prints children first)."""
    depth, name = imported[index]
    chain = [name]
    for d, parent in imported[index + 1:]:
        if d < depth:
            chain.append(parent)
            depth = d
    return " <- ".join(chain)


def test_a_read_imports_only_the_reading_code(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with tracker.start_run("imports", "small", store=store, config={"lr": 0.1}) as run:
        for step in range(50):
            run.log({"loss": 1.0 / (step + 1), "acc": step / 50}, step=step)
    warm = tracker.open_store(store)  # its derived data built (the catalog too), as for any store read before
    warm.runs()
    warm.run(run.id).metrics()
    env = child_environ()
    env["PYTHONPATH"] = os.pathsep.join([str(Path(tracker.__file__).resolve().parents[1]),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", READ, str(store)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = _imported(proc.stderr)
    names = [name for _, name in imported]
    assert "tracker.read.reader" in names and "tracker.read.view" in names, names
    wrong = [_chain(imported, i) for i, (_, name) in enumerate(imported)
             if any(name == bad or name.startswith(bad + ".") for bad in NOT_ON_THE_READ_PATH)]
    assert not wrong, "a read imported modules it does not need:\n" + "\n".join(wrong)
