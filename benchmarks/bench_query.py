"""Query at scale: the "10 lowest-loss runs" question and ``tracker index`` on generated stores.

Not part of CI and not in run_all.py: the large store is about 25 GB. For each
size (runs x records of 4 floats) it measures, wall clock, process start included:

- generating the store (segments written directly in the documented line
  format with the store's own encoders, valid CRCs, one finished writer per run);
  kept under ``--root`` and reused by the next call;
- ``tracker index`` from nothing (every segment's derived columns and the run
  catalog, ``--procs`` worker processes), against two floors: the records per
  second of the old Parquet index (510.5 s for 100M records, RESULTS.md of
  2026-11-23; target: at least twice that), and ``orjson.loads`` of every
  line in one process (measured here on a sample of runs, scaled);
- the question on the catalog's figures (``metric_stats``, median of 3;
  target: within 3 s), against ``tracker query "SELECT 1"`` (process start,
  DuckDB) as its floor;
- the question on the long ``metrics`` view over the derived columns (median of 3);
- ``tracker runs --format json`` once the catalog exists (median of 3);
- with ``--check-jsonl``, the question over the JSONL (``--no-index``), which
  must give the same ten runs (the other two always must agree).

    python benchmarks/bench_query.py --size 1000x10000 --root /tmp/tracker-bench-query --keep
    python benchmarks/bench_query.py --size 10000x10000 --root /big/disk --keep --skip-metrics-view
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent


# --- generating -----------------------------------------------------------------------------------

def _line(env: dict) -> bytes:
    from tracker.core.format import encode_line, event

    return encode_line(event(env["kind"], env["schema"], env["step"], env["time"], env["w"], env["seq"],
                             env["data"]))


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

QUERY = ("SELECT m.run_id, min(m.value) AS best, r.lr FROM metrics m JOIN runs r ON r.id = m.run_id "
         "WHERE m.name = 'loss' GROUP BY m.run_id, r.lr ORDER BY best, m.run_id LIMIT 10")
STATS_QUERY = ("SELECT s.run_id, s.min AS best, r.lr FROM metric_stats s JOIN runs r ON r.id = s.run_id "
               "WHERE s.name = 'loss' ORDER BY best, s.run_id LIMIT 10")
#: The old Parquet index built 100M records in 510.5 s (RESULTS.md, 2026-11-23, this machine).
OLD_INDEX_RECORDS_PER_S = 100_000_000 / 510.5


def tracker_cmd(*args: str, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"tracker {' '.join(args)}: {proc.stderr[-500:]}")
    return took, proc


def median_cmd(rounds: int, *args: str, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    times, proc = [], None
    for _ in range(rounds):
        took, proc = tracker_cmd(*args, env=env)
        times.append(took)
    return sorted(times)[len(times) // 2], proc  # type: ignore[return-value]


def parse_floor(store: Path, sample: int) -> tuple[float, int]:
    """Seconds and lines of ``orjson.loads`` of every line of ``sample`` runs' segments, in one process."""
    runs = sorted(os.listdir(store / "runs"))[:sample]
    lines = 0
    t0 = time.perf_counter()
    loads = orjson.loads
    for rid in runs:
        for seg in (store / "runs" / rid).glob("*.jsonl"):
            with open(seg, "rb") as f:
                for line in f:
                    loads(line)
                    lines += 1
    return time.perf_counter() - t0, lines


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def top(proc: subprocess.CompletedProcess) -> list:
    return [(r["run_id"], r["best"], r["lr"]) for r in json.loads(proc.stdout)]


def measure(size: str, root: Path, args: argparse.Namespace) -> dict:
    runs, n = (int(x) for x in size.lower().split("x"))
    store = root / f"store-{runs}x{n}"
    out: dict = {"size": size, "runs": runs, "records_per_run": n, "records": runs * n, "procs": args.procs}
    if not (store / "runs").exists() or args.regenerate:
        shutil.rmtree(store, ignore_errors=True)
        out["generate_s"] = generate(store, runs, n, args.procs)
        print(f"[{size}] generated in {out['generate_s']:.1f}s", flush=True)
    if args.generate_only:
        return out
    env = {"TRACKER_STORE": str(store), "NO_COLOR": "1"}
    out["jsonl_bytes"] = du(store / "runs")
    tracker_cmd("index", "--drop", env=env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["index_s"], proc = tracker_cmd("index", "--jobs", str(args.procs), "--format", "json", env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of tracker index and its workers: what the build costs whatever else the machine runs.
    out["index_cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out["index_records_per_cpu_s"] = runs * n / out["index_cpu_s"]
    rep = json.loads(proc.stdout)
    out["index_bytes"] = rep["index_bytes"]
    out["index_records_per_s"] = runs * n / out["index_s"]
    out["index_vs_old"] = out["index_records_per_s"] / OLD_INDEX_RECORDS_PER_S
    print(f"[{size}] tracker index from nothing {out['index_s']:.1f}s "
          f"({out['index_records_per_s']:,.0f} records/s, {out['index_vs_old']:.2f}x the old index; "
          f"{out['index_cpu_s']:.1f} CPU s, {out['index_records_per_cpu_s']:,.0f} records per CPU second)", flush=True)
    sample = min(runs, args.parse_sample)
    cpu0 = time.process_time()
    took, lines = parse_floor(store, sample)
    out["parse_floor_lines_per_s"] = lines / took
    out["parse_floor_lines_per_cpu_s"] = lines / (time.process_time() - cpu0)
    out["index_vs_parse_floor"] = out["index_records_per_s"] / out["parse_floor_lines_per_s"]
    print(f"[{size}] orjson.loads floor {out['parse_floor_lines_per_s']:,.0f} lines/s on one core "
          f"({sample} runs)", flush=True)
    out["select1_s"], _ = median_cmd(3, "query", "SELECT 1", "--format", "json", env=env)
    out["top10_stats_s"], proc = median_cmd(3, "query", STATS_QUERY, "--format", "json", env=env)
    stats_top = top(proc)
    out["top10_stats_vs_select1"] = out["top10_stats_s"] / out["select1_s"]
    print(f"[{size}] top 10 on metric_stats {out['top10_stats_s']:.2f}s (SELECT 1: {out['select1_s']:.2f}s)",
          flush=True)
    out["runs_s"], _ = median_cmd(3, "runs", "--format", "json", env=env)
    print(f"[{size}] tracker runs {out['runs_s']:.2f}s", flush=True)
    if not args.skip_metrics_view:
        out["top10_metrics_s"], proc = median_cmd(3, "query", QUERY, "--format", "json", env=env)
        out["metrics_equals_stats"] = top(proc) == stats_top
        print(f"[{size}] top 10 on the metrics view {out['top10_metrics_s']:.2f}s", flush=True)
    if args.check_jsonl:
        out["top10_jsonl_s"], proc = tracker_cmd("query", QUERY, "--no-index", "--format", "json", env=env)
        out["jsonl_equals_stats"] = top(proc) == stats_top
        print(f"[{size}] top 10 on the JSONL {out['top10_jsonl_s']:.1f}s", flush=True)
    out["target_top10_3s"] = out["top10_stats_s"] <= 3.0
    out["target_index_2x_old"] = out["index_vs_old"] >= 2.0
    if not args.keep:
        shutil.rmtree(store, ignore_errors=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", action="append", help="RUNSxRECORDS (repeatable; default 1000x10000)")
    p.add_argument("--root", type=Path, help="where to write the stores (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the stores (and reuse them on the next call)")
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--generate-only", action="store_true", help="write the stores (kept) and stop")
    p.add_argument("--skip-metrics-view", action="store_true", help="leave out the question on the metrics view")
    p.add_argument("--check-jsonl", action="store_true", help="also ask the question over the JSONL (slow)")
    p.add_argument("--parse-sample", type=int, default=100, help="runs the parsing floor reads")
    p.add_argument("--procs", type=int, default=2, help="processes generating and indexing the store")
    p.add_argument("--out", type=Path, help="append the JSON results to this file")
    args = p.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="tracker-bench-query-"))
    root.mkdir(parents=True, exist_ok=True)
    results = []
    for size in args.size or ["1000x10000"]:
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
