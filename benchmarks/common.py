"""Shared helpers of the benchmark scripts: timing next to a floor, JSON lines, stores.

Every script measures its own floor in the same process, alternating floor and
subject in rounds so that a noisy machine slows both alike, and prints one
JSON line per measurement::

    {"benchmark": "log", "name": "run.log, 4 floats", "value": 2.9, "floor": 1.3,
     "ratio": 2.2, "unit": "us/call", "rounds": 7, ...}

``value`` and ``floor`` are medians over the rounds; ``ratio`` is the median
of the per-round ratios. Times are CPU time of the process (``process_time``:
every thread, so a background writer would be counted) unless ``clock`` says
``wall``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import orjson

    _dumps = orjson.dumps
    FLOOR_ENCODER = "orjson.dumps"
except ImportError:  # the floor of a tracker without orjson would be the stdlib encoder
    _dumps = (lambda d: json.dumps(d, separators=(",", ":")).encode())  # noqa: E731
    FLOOR_ENCODER = "json.dumps"

FOUR_FLOATS = {"loss": 0.41, "acc": 0.93, "lr": 0.001, "grad_norm": 1.37}


def parse_args(description: str, **extra: Any) -> argparse.Namespace:
    """The options every benchmark script takes: ``--quick`` and ``--repeat``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a few seconds in all (the CI smoke run)")
    parser.add_argument("--repeat", type=int, default=None, help="rounds per measurement (default 7, quick 3)")
    for name, kwargs in extra.items():
        parser.add_argument(f"--{name.replace('_', '-')}", **kwargs)
    args = parser.parse_args()
    if args.repeat is None:
        args.repeat = 3 if args.quick else 7
    return args


def emit(benchmark: str, name: str, **fields: Any) -> dict[str, Any]:
    """Print one measurement as a JSON line (and return it)."""
    row = {"benchmark": benchmark, "name": name, **fields}
    print(json.dumps(row), flush=True)
    return row


def per_call(fn: Callable[[int], Any], n: int, clock: Callable[[], float] = time.process_time) -> float:
    """Seconds per call of ``fn(i)`` for ``i`` in ``range(n)``."""
    start = clock()
    for i in range(n):
        fn(i)
    return (clock() - start) / n


def side_by_side(subject: Callable[[], float], floor: Callable[[], float], rounds: int) -> dict[str, float]:
    """Alternate ``floor()`` and ``subject()`` (each returns seconds) for ``rounds`` rounds.

    :returns: medians of both (in µs), the median of the per-round ratios and their spread.
    """
    subj, base, ratios = [], [], []
    for _ in range(rounds):
        b = floor()
        s = subject()
        subj.append(s)
        base.append(b)
        ratios.append(s / b)
    return {"value": round(statistics.median(subj) * 1e6, 3), "floor": round(statistics.median(base) * 1e6, 3),
            "ratio": round(statistics.median(ratios), 3), "ratio_min": round(min(ratios), 3),
            "ratio_max": round(max(ratios), 3), "rounds": rounds}


class FloorWriter:
    """The floor of logging: ``orjson.dumps`` of the record and one ``os.write`` of the line."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(folder / f"floor-{os.getpid()}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def run(self, values: dict[str, Any], n: int) -> float:
        """Seconds per line for ``n`` lines of ``values``."""
        fd, write, dumps = self.fd, os.write, _dumps

        def one(i: int) -> None:
            write(fd, dumps(values) + b"\n")

        return per_call(one, n)

    def close(self) -> None:
        """Close the file."""
        os.close(self.fd)


@contextmanager
def scratch(prefix: str = "tracker-bench-") -> Iterator[Path]:
    """A temporary folder, also the working folder (no tracker.toml, no git repository above it)."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(old)


def start_follower(store: Path, url: str, **env: str) -> subprocess.Popen:
    """The store's follower into ``url``, started as a run's start would start it (but not detached: the script
    stops it with :func:`stop_process`), once its ``follower.json`` says it made a pass. Its environment is this
    one without the ``TRACKER_`` variables, plus ``env``."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")},
           "TRACKER_FOLLOWER_URL": url, "TRACKER_FOLLOWER_LINGER": "600", **env}
    proc = subprocess.Popen([sys.executable, "-m", "tracker.team.follower", "--store", str(store)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    status = store / "team" / "follower.json"
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            doc = json.loads(status.read_text())
            if doc.get("pass_at") and doc["pid"] == proc.pid:
                return proc
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the follower did not start")


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 30 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def with_and_without(fn: Callable[[int], Any], n: int, rounds: int,
                     start: Callable[[], subprocess.Popen]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Alternating rounds of ``n`` calls of ``fn(i)``, ``"without"`` and ``"with"`` the process ``start()`` starts
    (stopped after each round): CPU and wall seconds per call of each round."""
    cpu: dict[str, list[float]] = {"with": [], "without": []}
    wall: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(rounds):
        for mode in ("without", "with"):
            proc = start() if mode == "with" else None
            try:
                t0 = time.perf_counter()
                cpu[mode].append(per_call(fn, n))
                wall[mode].append((time.perf_counter() - t0) / n)
            finally:
                if proc is not None:
                    stop_process(proc)
    return cpu, wall


def quiet_environment() -> None:
    """Drop the variables that would point runs elsewhere than the benchmark's store."""
    for var in ("TRACKER_RUN_ID", "TRACKER_STORE", "TRACKER_CONFIG"):
        os.environ.pop(var, None)


def machine() -> dict[str, Any]:
    """Facts of this machine for the results table."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = {}
    for dist in ("tracker-core", "orjson", "numpy", "click", "attrs", "cattrs", "pluggy"):
        try:
            from importlib.metadata import version

            versions[dist] = version(dist)
        except Exception:  # noqa: BLE001 - a missing one is simply not listed
            pass
    fs = ""
    try:
        import subprocess

        fs = subprocess.run(["df", "-T", tempfile.gettempdir()], capture_output=True, text=True,
                            timeout=5).stdout.splitlines()[-1].split()[1]
    except Exception:  # noqa: BLE001 - df is optional
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) + " (1, 5, 15 min, at the end of the run)"
    return {"cpu": cpu, "cores": os.cpu_count(), "load_average": load, "python": platform.python_version(),
            "implementation": platform.python_implementation(), "system": platform.platform(),
            "tmp_filesystem": fs, "versions": versions}


def main_guard(fn: Callable[[argparse.Namespace], None], args: argparse.Namespace) -> int:
    """Run a benchmark's body; a failure prints one JSON line naming it and exits 1."""
    quiet_environment()
    try:
        fn(args)
    except Exception as exc:  # noqa: BLE001 - reported as data, the other benchmarks go on
        emit(Path(sys.argv[0]).stem, "error", error=f"{type(exc).__name__}: {exc}")
        raise
    return 0


class Served:
    """A dashboard app served by uvicorn in a thread, on a free loopback port (``with Served(app) as s``)."""

    def __init__(self, app: Any) -> None:
        import socket
        import threading

        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    access_log=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def browser() -> Any:
    """A headless Chromium at 1440x900 through Selenium, or ``None`` without Chromium or its driver."""
    import shutil

    path = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver = shutil.which("chromedriver")
    if path is None or driver is None:
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = path
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--window-size=1440,900", "--disable-background-networking", "--disable-component-update",
                "--enable-unsafe-swiftshader"):  # WebGL on the CPU (the Media panel's 3D view)
        opts.add_argument(arg)
    return webdriver.Chrome(options=opts, service=Service(executable_path=driver))
