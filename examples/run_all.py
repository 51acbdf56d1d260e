"""Run every example: real runs through the core and all four plugins, then the CLI.

Each example logs into the store of the repository's tracker.toml
(``.tracker/`` at the top of the repository, unless TRACKER_STORE says
otherwise) and prints its own summary; at the end the CLI lists the runs and
the plugins.

Usage::

    python examples/run_all.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = ["basic.py", "fft_study.py", "ptq.py", "phase_trainer.py", "quant_analysis.py", "capture.py",
            # A dataset, groups of seeds, a model in prod, its evaluation; lineage, logs, diff and a report.
            "lab.py",
            # Each runs when its framework is installed, else prints one line on how to install it.
            "lightning_example.py", "transformers_example.py", "keras_example.py"]


def main() -> int:
    failed = []
    for name in EXAMPLES:
        print(f"\n=== examples/{name} ===", flush=True)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(HERE / name)], cwd=HERE.parent)
        print(f"--- examples/{name}: exit {proc.returncode} in {time.perf_counter() - start:.1f}s", flush=True)
        if proc.returncode != 0:
            failed.append(name)
    tracker_cmd = [sys.executable, "-m", "tracker"]
    print("\n=== tracker runs ===", flush=True)
    subprocess.run([*tracker_cmd, "runs"], cwd=HERE.parent)
    print("\n=== tracker plugins ===", flush=True)
    subprocess.run([*tracker_cmd, "plugins"], cwd=HERE.parent)
    print("\n=== the dashboard ===", flush=True)
    print("Look at these runs in a browser (charts, comparisons, plugin panels):\n"
          f"    {_tracker_command()} ui    # then open http://127.0.0.1:5170/ (Ctrl-C stops it)\n"
          "(from this folder, or with `--store PATH` before `ui` for another store)", flush=True)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _tracker_command() -> str:
    """How to call ``tracker`` from the top of the repository with the interpreter running this script."""
    script = Path(sys.executable).with_name("tracker")
    if script.exists():
        try:
            return str(script.relative_to(HERE.parent))
        except ValueError:
            return str(script)
    return f"{sys.executable} -m tracker"


if __name__ == "__main__":
    sys.exit(main())
