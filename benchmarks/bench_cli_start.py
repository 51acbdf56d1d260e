"""CLI start: ``tracker --help`` and ``tracker runs`` on an empty store, next to a bare interpreter.

Each command runs in a fresh process (``python -m tracker``, what the console
script runs); the figure is the median wall time of several starts, next to
``python -c pass``. One more start with ``python -X importtime`` tells the time
spent importing, the heaviest top-level imports, and whether numpy,
matplotlib or click's formatting were loaded.

As after ``pip install``, bytecode is cached (in a scratch ``PYTHONPYCACHEPREFIX``,
even where ``PYTHONDONTWRITEBYTECODE`` is set) and one start of each command
comes first; ``tracker --help`` then lists the plugins' commands from its cache
(tracker/cli/lazy.py, in a scratch ``XDG_CACHE_HOME``). The start that has to
build that cache (importing every plugin) is measured on its own.
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


#: tracker --help and tracker runs on an empty store: at most this many times python -c pass.
TARGET = 4


def start(argv: list[str], env: dict[str, str], fresh_cache: Path | None = None) -> float:
    """Wall seconds of one process start (after removing ``fresh_cache``, when given)."""
    if fresh_cache is not None and fresh_cache.exists():
        fresh_cache.unlink()
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
        env = dict(os.environ, TRACKER_STORE=str(tmp / "empty-store"), NO_COLOR="1",
                   PYTHONPYCACHEPREFIX=str(tmp / "pycache"), XDG_CACHE_HOME=str(tmp / "cache"))
        for var in ("TRACKER_CONFIG", "PYTHONDONTWRITEBYTECODE"):
            env.pop(var, None)
        # The start that builds the plugins' commands cache has a cache folder of its own, emptied each time.
        uncached_env = dict(env, XDG_CACHE_HOME=str(tmp / "cache-uncached"))
        commands_cache = tmp / "cache-uncached" / "tracker" / "cli-commands.json"
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
                 ("tracker runs (empty store), plugins disabled", [py, "-m", "tracker", "runs"], core_env),
                 ("tracker --help, plugins' commands not cached yet", [py, "-m", "tracker", "--help"], uncached_env)]
        for _, argv, case_env in cases:  # bytecode, the file cache, the plugins' commands
            start(argv, case_env)
        times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
        for _ in range(starts):
            for name, argv, case_env in cases:
                uncached = commands_cache if "not cached" in name else None
                times[name].append(start(argv, case_env, uncached))
        floor = statistics.median(times["python -c pass"])
        for name, argv, case_env in cases:
            value = statistics.median(times[name])
            extra = import_profile(argv, case_env) if name != "python -c pass" else {}
            if "not cached" in name:
                extra = {}  # the profile's own start would find the cache written by the last round
            if name.endswith("plugins disabled"):
                extra["disabled"] = others
            if name in ("tracker --help", "tracker runs (empty store)"):
                extra["target"] = TARGET
            emit("cli_start", name, unit="ms", clock="wall", value=round(value * 1000, 1),
                 floor=round(floor * 1000, 1), ratio=round(value / floor, 2), floor_name="python -c pass",
                 rounds=starts, **extra)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
