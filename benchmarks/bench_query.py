"""Query at scale: the "10 lowest-loss runs with their lr" question, four ways, on generated stores.

Not part of CI and not in run_all.py: the large store is about 25 GB. For each
size (runs x records of 4 floats) it measures, wall clock, one round each:

- generating the store (segments written directly in the documented line
  format, valid CRCs, one finished writer per run);
- ``tracker runs --format json`` (listing reads each segment's two ends);
- the baseline: the Python reading API, ``RunView.metrics()`` per run, min of loss;
- ``tracker query`` on the JSONL (``--no-index``: CRC check in Python, then DuckDB);
- ``tracker index`` (Parquet, zstd) and ``tracker query`` on the index;
- bytes on disk per record, JSONL and Parquet;
- ``tracker sync`` into PostgreSQL (records per second; a server is started in
  a temporary folder when ``--pg-url`` is not given and server binaries exist).

The three answers are checked to be the same ten runs. With ``--api-runs N``
the baseline reads only N runs and its time is scaled to all runs (said so in
the output); ``--sync-runs N`` does the same for the sync.

    python benchmarks/bench_query.py --size 2000x1000
    python benchmarks/bench_query.py --size 10000x10000 --api-runs 500 --sync-runs 100 --root /big/disk
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
QUERY = ("SELECT m.run_id, min(m.value) AS best, r.lr FROM metrics m JOIN runs r ON r.id = m.run_id "
         "WHERE m.name = 'loss' GROUP BY m.run_id, r.lr ORDER BY best, m.run_id LIMIT 10")


# --- generating -----------------------------------------------------------------------------------

def _line(env: dict) -> bytes:
    head = orjson.dumps(env)[:-1]
    return b'%b,"crc":"%08x"}\n' % (head, zlib.crc32(head))


def make_run(runs_dir: Path, i: int, n: int) -> int:
    """One finished run of ``n`` metrics records of 4 floats; returns its bytes."""
    rng = random.Random(i)
    rid = f"r{i:07d}"
    w = f"bench-{1000 + i}-{i % 0xFFFFFF:06x}"
    d = runs_dir / rid
    d.mkdir(parents=True, exist_ok=True)
    lr = 10 ** rng.uniform(-5, -1)
    cfg = {"lr": lr, "batch_size": rng.choice([32, 64, 128]), "optimizer": rng.choice(["adam", "sgd"])}
    t = 1.7e9 + i * 10.0
    out = [_line({"v": 1, "kind": "run_started", "schema": None, "step": None, "time": t, "w": w, "seq": 1,
                  "data": {"host": "bench", "pid": 1000 + i, "proc_start": "1", "writer": w, "name": f"run-{i}",
                           "project": "bench", "config": cfg, "tags": ["bench"], "env": {}, "resumed": False}})]
    base = rng.uniform(0.5, 2.0)
    head = b'{"v":1,"kind":"record","schema":"metrics","step":'
    wb = w.encode()
    crc32, rand = zlib.crc32, rng.random
    loss = base
    for s in range(n):
        t += 0.01
        loss = base / (1 + s * lr * 100) + rand() * 0.01
        h = b'%b%d,"time":%r,"w":"%b","seq":%d,"data":{"loss":%r,"acc":%r,"grad_norm":%r,"tokens_per_s":%r}' % (
            head, s, t, wb, s + 2, loss, 1 - loss / 3, rand(), 1000 + rand() * 50)
        out.append(b'%b,"crc":"%08x"}\n' % (h, crc32(h)))
    out.append(_line({"v": 1, "kind": "run_finished", "schema": None, "step": None, "time": t + 0.01, "w": w,
                      "seq": n + 2, "data": {"status": "finished", "error": None, "records": n,
                                             "max_step": n - 1, "last": {"loss": loss, "acc": 1 - loss / 3}}}))
    data = b"".join(out)
    (d / f"{w}.jsonl").write_bytes(data)
    return len(data)


def _make_many(args: tuple[str, list[int], int]) -> int:
    folder, ids, n = args
    return sum(make_run(Path(folder), i, n) for i in ids)


def generate(store: Path, runs: int, n: int, procs: int) -> float:
    """Write the store; returns seconds."""
    t0 = time.perf_counter()
    chunks = [(str(store / "runs"), list(range(k, runs, procs * 8)), n) for k in range(procs * 8)]
    with multiprocessing.Pool(procs) as pool:
        pool.map(_make_many, chunks)
    return time.perf_counter() - t0


# --- measuring --------------------------------------------------------------------------------------

def tracker_cmd(*args: str, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"tracker {' '.join(args)}: {proc.stderr[-500:]}")
    return took, proc


def api_top10(store: Path, limit: int | None) -> tuple[float, int, list]:
    """The baseline: RunView.metrics() per run; returns (seconds, runs read, top 10)."""
    import numpy as np

    import tracker

    t0 = time.perf_counter()
    st = tracker.open_store(store)
    infos = st.runs()
    if limit:
        infos = infos[:limit]
    best = []
    for info in infos:
        loss = tracker.RunView(st.path, info.id).metrics()["loss"]
        best.append((float(np.nanmin(loss)), info.id, info.config.get("lr")))
    best.sort()
    return time.perf_counter() - t0, len(infos), [(rid, b, lr) for b, rid, lr in best[:10]]


def du(path: Path, suffix: str) -> int:
    return sum(p.stat().st_size for p in path.rglob(f"*{suffix}") if p.is_file())


def start_pg() -> tuple[object | None, str | None]:
    sys.path.insert(0, str(ROOT))
    try:
        from tests.query.pg import Server, bindir
    except ImportError:
        return None, None
    bins = bindir()
    if bins is None:
        return None, None
    server = Server(bins)
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE bench")
    return server, server.url("bench")


def measure(size: str, root: Path, args: argparse.Namespace) -> dict:
    runs, n = (int(x) for x in size.lower().split("x"))
    store = root / f"store-{runs}x{n}"
    out: dict = {"size": size, "runs": runs, "records_per_run": n, "records": runs * n}
    if not (store / "runs").exists() or args.regenerate:
        shutil.rmtree(store, ignore_errors=True)
        out["generate_s"] = generate(store, runs, n, args.procs)
        print(f"[{size}] generated in {out['generate_s']:.1f}s", flush=True)
    if args.generate_only:
        return out
    shutil.rmtree(store / "index", ignore_errors=True)
    env = {"TRACKER_STORE": str(store), "NO_COLOR": "1"}
    jsonl = du(store / "runs", ".jsonl")
    out["jsonl_bytes"] = jsonl
    out["jsonl_bytes_per_record"] = jsonl / (runs * n)
    out["tracker_runs_s"], _ = tracker_cmd("runs", "--format", "json", env=env)
    print(f"[{size}] tracker runs {out['tracker_runs_s']:.2f}s", flush=True)
    t, done, api = api_top10(store, args.api_runs)
    out["api_s"] = t * runs / done
    out["api_runs_read"] = done
    print(f"[{size}] API {t:.1f}s for {done} runs -> {out['api_s']:.1f}s for all", flush=True)
    out["query_jsonl_s"], proc = tracker_cmd("query", QUERY, "--no-index", "--format", "json", env=env)
    jsonl_top = [(r["run_id"], r["best"], r["lr"]) for r in json.loads(proc.stdout)]
    print(f"[{size}] query on JSONL {out['query_jsonl_s']:.1f}s", flush=True)
    out["index_s"], proc = tracker_cmd("index", "--format", "json", env=env)
    rep = json.loads(proc.stdout)
    out["parquet_bytes"] = rep["parquet_bytes"]
    out["parquet_bytes_per_record"] = rep["parquet_bytes"] / (runs * n)
    print(f"[{size}] tracker index {out['index_s']:.1f}s", flush=True)
    times = []
    for _ in range(3):
        took, proc = tracker_cmd("query", QUERY, "--format", "json", env=env)
        times.append(took)
    out["query_index_s"] = sorted(times)[1]
    index_top = [(r["run_id"], r["best"], r["lr"]) for r in json.loads(proc.stdout)]
    print(f"[{size}] query on index {out['query_index_s']:.2f}s (median of 3)", flush=True)
    out["index_equals_jsonl"] = jsonl_top == index_top
    # The baseline reads every run only without --api-runs; then its ten runs must be the same.
    out["api_equals_sql"] = [r[0] for r in api] == [r[0] for r in jsonl_top] if not args.api_runs else None
    if not args.skip_sync:
        server, url = (None, args.pg_url) if args.pg_url else start_pg()
        if url is not None:
            try:
                sub = root / f"sync-{runs}x{n}"
                shutil.rmtree(sub, ignore_errors=True)
                (sub / "runs").mkdir(parents=True)
                ids = sorted(os.listdir(store / "runs"))[: args.sync_runs or None]
                for rid in ids:
                    os.symlink(store / "runs" / rid, sub / "runs" / rid)
                took, proc = tracker_cmd("--store", str(sub), "sync", url)
                out["sync_runs"] = len(ids)
                out["sync_s"] = took
                out["sync_records_per_s"] = len(ids) * (n + 2) / took
                print(f"[{size}] sync {len(ids)} runs in {took:.1f}s: {out['sync_records_per_s']:.0f} events/s",
                      flush=True)
                shutil.rmtree(sub, ignore_errors=True)
            finally:
                if server is not None:
                    server.stop()  # type: ignore[attr-defined]
    if not args.keep:
        shutil.rmtree(store, ignore_errors=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", action="append", help="RUNSxRECORDS (repeatable; default 2000x1000)")
    p.add_argument("--root", type=Path, help="where to write the stores (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the stores (and reuse them on the next call)")
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--generate-only", action="store_true", help="write the stores (kept) and stop")
    p.add_argument("--api-runs", type=int, default=0, help="baseline on this many runs, scaled (0: all)")
    p.add_argument("--sync-runs", type=int, default=0, help="sync this many runs (0: all)")
    p.add_argument("--skip-sync", action="store_true")
    p.add_argument("--pg-url", help="a database to sync into (default: a temporary server)")
    p.add_argument("--procs", type=int, default=2, help="processes generating the store")
    p.add_argument("--out", type=Path, help="append the JSON results to this file")
    args = p.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="tracker-bench-query-"))
    root.mkdir(parents=True, exist_ok=True)
    results = []
    for size in args.size or ["2000x1000"]:
        res = measure(size, root, args)
        res["load_average"] = os.getloadavg()
        print(json.dumps(res), flush=True)
        results.append(res)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(res) + "\n")
    if args.root is None and not args.keep and not args.generate_only:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
