"""The first ``tracker sync`` of a lab's many small runs: 10,000 runs of 10 steps into an empty database.

The runs are :mod:`labstore`'s (segment lines written with the store's own encoder, cached under
``benchmarks/.cache/``). Each round makes a new empty database and runs the real command,
``tracker --store STORE sync URL``, in its own process, timed by wall clock from the parent. The floor,
measured in the same run against the same server: one ``COPY`` of the same events (the rows of
``tracker_events``, already parsed) into an empty table of the same shape from one process, which is what
the database must take in at the least. Target: at most 10 s for 10,000 runs (DESIGN, "A lab of 100,000
runs").
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import emit, main_guard, parse_args  # noqa: E402
from labstore import lab_store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _events(store: Path) -> list[tuple]:
    """Every event of the store as the rows ``tracker sync`` inserts into ``tracker_events``."""
    import orjson

    from tracker.core.format import parse_line

    rows = []
    for rid in sorted(os.listdir(store / "runs")):
        for seg in (store / "runs" / rid).glob("*.jsonl"):
            for line in seg.read_bytes().splitlines():
                ev = parse_line(line)
                rows.append((rid, seg.stem, ev["seq"], ev["kind"], ev.get("schema"), ev.get("step"),
                             float(ev["time"]), orjson.dumps(ev.get("data") or {}).decode()))
    return rows


def _fresh_database(admin: str, name: str) -> str:
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return admin.rsplit("/", 1)[0] + "/" + name


def _copy_floor(url: str, rows: list[tuple]) -> float:
    import psycopg

    t = time.perf_counter()
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE events (run_id text, writer text, seq bigint, kind text, schema text, step bigint, "
                    "time double precision, data jsonb, PRIMARY KEY (run_id, writer, seq))")
        with cur.copy("COPY events (run_id, writer, seq, kind, schema, step, time, data) FROM STDIN") as cp:
            for row in rows:
                cp.write_row(row)
        conn.commit()
    return time.perf_counter() - t


def _sync(store: Path, url: str) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's Python runs commands: compiled modules cached
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "sync", url], env=env,
                          capture_output=True, text=True)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return took


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    from bench_team import database

    n = 300 if args.quick else args.runs
    rounds = 1 if args.quick else min(args.repeat, 5)
    store = lab_store(n, indexed=False)
    rows = _events(store)
    admin, server = database()
    try:
        pairs = []
        for i in range(rounds):
            floor = _copy_floor(_fresh_database(admin, f"floor{i}"), rows)
            took = _sync(store, _fresh_database(admin, f"sync{i}"))
            pairs.append((took, floor))
        ratios = [s / f for s, f in pairs]
        emit("sync_many", f"first tracker sync of {n:,} runs of 10 steps ({len(rows):,} events)", unit="s",
             clock="wall", value=round(statistics.median(s for s, _ in pairs), 3),
             floor=round(statistics.median(f for _, f in pairs), 3), ratio=round(statistics.median(ratios), 2),
             ratio_min=round(min(ratios), 2), ratio_max=round(max(ratios), 2), rounds=rounds,
             floor_name="one COPY of the same event rows into an empty table of the same shape",
             target_seconds=10.0 if n == 10_000 else None,
             per_run_ms=round(statistics.median(s for s, _ in pairs) / n * 1e3, 3))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0], runs={"type": int, "default": 10_000})))
