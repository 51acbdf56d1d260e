"""CLI start: ``tracker --help`` and ``tracker runs`` on an empty store, next to a bare interpreter.

Each command runs in a fresh process (``python -m tracker``, what the console
script runs); the figure is the median wall time of several starts, next to
``python -c pass``. One more start with ``python -X importtime`` tells the time
spent importing, the heaviest top-level imports, and whether numpy,
matplotlib or click's formatting were loaded.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, main_guard, parse_args, scratch  # noqa: E402

_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def start(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one process start."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-300:]}")
    return elapsed


def import_profile(argv: list[str], env: dict[str, str]) -> dict:
    """What ``-X importtime`` says about one start."""
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, env=env)
    rows = []
    for line in proc.stderr.splitlines():
        m = _LINE.match(line)
        if m:
            rows.append((int(m.group(2)), len(m.group(3)), m.group(4)))
    top = [(us, name) for us, depth, name in rows if depth <= 1]
    loaded = {name for _, _, name in rows}
    total = sum(us for us, depth, _ in rows if depth == 1)
    return {"import_ms": round(total / 1000, 1),
            "heaviest": [f"{name} {us / 1000:.1f} ms" for us, name in sorted(top, reverse=True)[:6]],
            "numpy": "numpy" in loaded, "matplotlib": any(n.startswith("matplotlib") for n in loaded),
            "click_formatting": "click.formatting" in loaded, "modules": len(loaded)}


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    py = sys.executable
    starts = 1 if args.quick else 9
    with scratch() as tmp:
        (tmp / "empty-store" / "runs").mkdir(parents=True)
        env = dict(os.environ, TRACKER_STORE=str(tmp / "empty-store"), NO_COLOR="1")
        env.pop("TRACKER_CONFIG", None)
        # The same starts with every installed plugin but the built-in disabled in tracker.toml:
        # what the core alone costs.
        from importlib.metadata import entry_points

        others = sorted({ep.name for ep in entry_points(group="tracker")} - {"metrics"})
        (tmp / "core.toml").write_text("[plugins]\ndisable = [" + ", ".join(f'"{n}"' for n in others) + "]\n")
        core_env = dict(env, TRACKER_CONFIG=str(tmp / "core.toml"))
        cases = [("python -c pass", [py, "-c", "pass"], env),
                 ("import tracker", [py, "-c", "import tracker"], env),
                 ("tracker --help", [py, "-m", "tracker", "--help"], env),
                 ("tracker runs (empty store)", [py, "-m", "tracker", "runs"], env),
                 ("tracker --help, plugins disabled", [py, "-m", "tracker", "--help"], core_env),
                 ("tracker runs (empty store), plugins disabled", [py, "-m", "tracker", "runs"], core_env)]
        start(cases[2][1], env)  # warm the file cache
        times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
        for _ in range(starts):
            for name, argv, case_env in cases:
                times[name].append(start(argv, case_env))
        floor = statistics.median(times["python -c pass"])
        for name, argv, case_env in cases:
            value = statistics.median(times[name])
            extra = import_profile(argv, case_env) if name != "python -c pass" else {}
            if name.endswith("plugins disabled"):
                extra["disabled"] = others
            emit("cli_start", name, unit="ms", clock="wall", value=round(value * 1000, 1),
                 floor=round(floor * 1000, 1), ratio=round(value / floor, 2), floor_name="python -c pass",
                 rounds=starts, **extra)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
