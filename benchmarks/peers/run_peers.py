"""Run every peer benchmark of this folder and keep their JSON lines in results.jsonl.

Each peer installs itself into ``.venvs/<peer>`` on first use (needs the
package index); ``benchmarks/run_all.py`` puts results.jsonl in RESULTS.md.
Not run in CI.

Usage: ``python benchmarks/peers/run_peers.py [PEER ...] [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = ["tensorboard_writer", "trackio_local", "wandb_offline", "aim_run", "mlflow_file", "mlflow_default",
         "dvclive_live"]


def main() -> int:
    """Run the peers given (default: all) and merge their lines into results.jsonl."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peers", nargs="*", metavar="PEER", help=f"some of {', '.join(PEERS)} (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    unknown = set(args.peers) - set(PEERS)
    if unknown:
        parser.error(f"unknown peers {sorted(unknown)}: expected some of {PEERS}")
    args.peers = args.peers or PEERS
    out = HERE / "results.jsonl"
    kept = {}
    if out.exists():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            kept[row["script"]] = row
    for peer in args.peers:
        proc = subprocess.run([sys.executable, str(HERE / f"{peer}.py"), "--repeat", str(args.repeat)],
                              capture_output=True, text=True, cwd=HERE)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        row = json.loads(lines[-1]) if lines else {"benchmark": "peers", "peer": peer,
                                                    "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
        row["script"] = peer
        print(json.dumps(row), flush=True)
        kept[peer] = row
        out.write_text("".join(json.dumps(kept[k]) + "\n" for k in PEERS if k in kept))
    return 0


if __name__ == "__main__":
    sys.exit(main())
