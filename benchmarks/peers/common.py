"""Shared harness of the peer benchmarks: a virtual environment per peer, one measurement.

Each ``benchmarks/peers/<peer>.py`` names the packages to install and the code
that starts a run, logs one step of 4 float metrics and finishes. This module
makes ``benchmarks/peers/.venvs/<distribution>`` with ``python -m venv``, installs the
packages there with pip (once; ``--reinstall`` starts over), then runs the
measurement in that environment and prints one JSON line.

The measurement runs, in one process: the floor (``orjson.dumps`` and
``os.write`` of the same dict, one line per step), then the peer: ``setup``,
``log(i)`` for every step, ``finish``. It reports per step the time spent in
the loop (wall and CPU), the time including ``finish`` (which is where
trackers that queue records write them), the process CPU time in all (every
thread of the process, including background writers), and the ratios to the
floor. A peer's helper processes (W&B's service) are not counted in the CPU
figures; the wall figures include any waiting for them. Peers of one
distribution (MLflow's two stores) share its environment.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENVS = HERE / ".venvs"

MEASURE = r'''
import json, os, platform, statistics, sys, tempfile, time
import importlib.metadata as md
try:
    import orjson
    dumps, floor_name = orjson.dumps, "orjson.dumps + os.write"
except ImportError:
    import json as _json
    dumps, floor_name = (lambda d: _json.dumps(d).encode()), "json.dumps + os.write"

STEPS = int(os.environ["PEER_STEPS"])
REPEAT = int(os.environ["PEER_REPEAT"])
WORK = tempfile.mkdtemp(prefix="peer-")
os.chdir(WORK)
values = {"loss": 0.5, "acc": 0.25, "lr": 0.001, "grad_norm": 1.5}

def floor():
    fd = os.open(os.path.join(WORK, "floor.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    w = os.write
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(STEPS):
        values["loss"] = 1.0 / (i + 1)
        w(fd, dumps(values) + b"\n")
    c1, t1 = time.process_time(), time.perf_counter()
    os.close(fd)
    return (t1 - t0) / STEPS, (c1 - c0) / STEPS

PEER_CODE

def peer(k):
    state = setup(os.path.join(WORK, f"peer{k}"))
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(STEPS):
        values["loss"] = 1.0 / (i + 1)
        log(state, i, values)
    c1, t1 = time.process_time(), time.perf_counter()
    finish(state)
    c2, t2 = time.process_time(), time.perf_counter()
    return (t1 - t0) / STEPS, (c1 - c0) / STEPS, (t2 - t0) / STEPS, (c2 - c0) / STEPS

floors, peers = [], []
for k in range(REPEAT):
    floors.append(floor())
    peers.append(peer(k))
med = lambda xs: statistics.median(xs)
f_wall, f_cpu = med([f[0] for f in floors]), med([f[1] for f in floors])
loop_wall, loop_cpu = med([p[0] for p in peers]), med([p[1] for p in peers])
all_wall, all_cpu = med([p[2] for p in peers]), med([p[3] for p in peers])
print(json.dumps({
    "benchmark": "peers", "peer": PEER_NAME, "version": md.version(PEER_DIST), "steps": STEPS, "repeat": REPEAT,
    "python": platform.python_version(), "floor": floor_name,
    "floor_us": round(f_wall * 1e6, 3), "floor_cpu_us": round(f_cpu * 1e6, 3),
    "loop_us": round(loop_wall * 1e6, 3), "loop_cpu_us": round(loop_cpu * 1e6, 3),
    "total_us": round(all_wall * 1e6, 3), "total_cpu_us": round(all_cpu * 1e6, 3),
    "ratio_loop": round(loop_wall / f_wall, 2), "ratio_total_cpu": round(all_cpu / f_cpu, 2),
}))
'''


def venv_python(name: str) -> Path:
    """The interpreter of the peer's virtual environment."""
    return VENVS / name / "bin" / "python"


def ensure_venv(name: str, packages: list[str], reinstall: bool = False) -> Path:
    """Make the peer's virtual environment and install its packages (skipped when already done).

    :raises subprocess.CalledProcessError: when pip cannot install the packages.
    """
    root = VENVS / name
    marker = root / ".installed"
    wanted = "\n".join(packages)
    if reinstall and root.exists():
        shutil.rmtree(root)
    if marker.exists() and marker.read_text() == wanted:
        return venv_python(name)
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    py = venv_python(name)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "orjson", *packages], check=True)
    marker.write_text(wanted)
    return py


def main(name: str, dist: str, packages: list[str], code: str, steps: int = 2000, env: dict | None = None) -> int:
    """Install the peer if needed, run the measurement and print its JSON line (or a failure line).

    :param name: the peer's name in the results.
    :param dist: the distribution whose version is reported.
    :param packages: pip requirements of the peer's environment.
    :param code: defines ``setup(folder) -> state``, ``log(state, step, values)`` and ``finish(state)``.
    :param steps: logging calls per repetition.
    :param env: extra environment variables for the measurement.
    """
    parser = argparse.ArgumentParser(description=f"Logging cost of {name} next to the orjson + os.write floor.")
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reinstall", action="store_true", help="make the virtual environment again")
    args = parser.parse_args()
    started = time.time()
    try:
        py = ensure_venv(dist, packages, args.reinstall)
    except subprocess.CalledProcessError as exc:
        print(json.dumps({"benchmark": "peers", "peer": name, "error": f"install failed: {exc}"}))
        return 1
    program = MEASURE.replace("PEER_CODE", textwrap.dedent(code)).replace("PEER_NAME", repr(name)).replace(
        "PEER_DIST", repr(dist))
    run_env = dict(os.environ, PEER_STEPS=str(args.steps), PEER_REPEAT=str(args.repeat), **(env or {}))
    proc = subprocess.run([str(py), "-c", program], capture_output=True, text=True, env=run_env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith('{"benchmark"')]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        print(json.dumps({"benchmark": "peers", "peer": name, "error": "measurement failed: " + " | ".join(tail)}))
        return 1
    result = json.loads(lines[-1])
    result["seconds"] = round(time.time() - started, 1)
    print(json.dumps(result))
    return 0
