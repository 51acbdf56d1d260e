"""Streaming to the team database: log cost with the follower running, latency, sixteen stores at once.

Figures, each next to a floor measured in the same script:

- ``run.log`` of 4 floats while the store's follower streams the run (CPU
  and wall time of the logging process), against the same loop with no
  follower (alternating rounds; target 1.05x);
- the latency from ``log`` to the row being visible in the database
  (median, p99) at 10,000 records/s, against one INSERT + COMMIT round trip
  (what writing each record to the database itself would cost; target: median
  within 2 s);
- sixteen stores streaming into one database at once: records/s from the
  first ``log`` to the last row visible, with every row counted once (no
  duplicate) and no follower stuck (no deadlock), against one ``tracker
  sync`` of the same number of records.

Needs psycopg and PostgreSQL: ``--url postgresql://...`` names an empty
database to use; without it the script starts a throwaway server with
``initdb`` / ``pg_ctl`` (Debian's postgresql package) as the tests do.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import (  # noqa: E402
    FOUR_FLOATS,
    emit,
    main_guard,
    parse_args,
    scratch,
    start_follower,
    stop_process,
    with_and_without,
)

import tracker  # noqa: E402


def _server() -> tuple[str, object]:
    from tests.query.pg import Server
    from tests.sysdeps import postgres_bindir

    bins = postgres_bindir()
    if bins is None:
        raise RuntimeError("PostgreSQL's initdb and pg_ctl are not installed (Debian: apt-get install postgresql); "
                           "or give --url")
    server = Server(bins)
    return server.url(), server


def _fresh_db(admin_url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return admin_url.rsplit("/", 1)[0] + "/" + name


def _count(url: str, sql: str = "SELECT count(*) FROM tracker_events", params: tuple = ()) -> int:
    import psycopg

    try:
        with psycopg.connect(url) as conn:
            return int(conn.execute(sql, params).fetchone()[0])
    except psycopg.Error:
        return 0


def _follower(store: Path, url: str) -> subprocess.Popen:
    """The store's follower, started as a run's start would start it (but not detached: the script stops it)."""
    return start_follower(store, url)


def bench_log_cost(admin: str, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """Alternating rounds of the same logging loop, without and with the follower tailing the run."""
    url = _fresh_db(admin, "bench_log_cost")
    n = 20_000 if args.quick else 200_000
    store = tmp / "cost"
    values = dict(FOUR_FLOATS)
    with tracker.start_run("bench", "log-cost", store=store, system_metrics=False) as run:
        run.log(values)
        cpu, wall = with_and_without(lambda i: run.log(values), n, args.repeat, lambda: _follower(store, url))
    streamed = _count(url)
    for clock, got in (("cpu", cpu), ("wall", wall)):
        ratios = [w / o for w, o in zip(got["with"], got["without"], strict=True)]
        emit("stream", f"run.log, 4 floats, the follower streaming the run ({clock} time)", unit="us/call", calls=n,
             clock=clock, value=round(statistics.median(got["with"]) * 1e6, 3),
             floor=round(statistics.median(got["without"]) * 1e6, 3), ratio=round(statistics.median(ratios), 3),
             ratio_min=round(min(ratios), 3), ratio_max=round(max(ratios), 3), rounds=args.repeat,
             floor_name="the same loop, no follower", target=1.05, rows_streamed=streamed)


LOGGER = """
import sys, time, tracker
rate, n = float(sys.argv[1]), int(sys.argv[2])
with tracker.start_run("bench", "latency", run_id=sys.argv[3], system_metrics=False) as run:
    t0 = time.perf_counter()
    for i in range(n):
        run.log({"loss": 0.41, "acc": 0.93, "lr": 0.001, "grad_norm": 1.37}, step=i)
        if i % 10 == 9:
            d = t0 + (i + 1) / rate - time.perf_counter()
            if d > 0:
                time.sleep(d)
print(n / (time.perf_counter() - t0), flush=True)
"""


def bench_latency(admin: str, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """A process logs at 10,000 records/s with streaming on; this one polls the database for each row."""
    import psycopg

    url = _fresh_db(admin, "bench_latency")
    rate = 10_000.0
    n = 30_000 if args.quick else 100_000
    store = tmp / "latency"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env.update(TRACKER_TEAM_URL=url, TRACKER_STORE=str(store), TRACKER_FOLLOWER_LINGER="2")
    # The follower starts with the run; the figures count from the first row it copies.
    proc = subprocess.Popen([sys.executable, "-c", LOGGER, str(rate), str(n), "lat"], env=env, cwd=str(tmp),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lat: list[tuple[float, float]] = []  # (record's time, seconds until visible)
    last = 0
    with psycopg.connect(url, autocommit=True) as conn:
        deadline = time.monotonic() + 300
        while len(lat) < n and time.monotonic() < deadline:
            try:
                rows = conn.execute("SELECT seq, time FROM tracker_events WHERE run_id = 'lat' AND kind = 'record' "
                                    "AND seq > %s ORDER BY seq", (last,)).fetchall()
            except psycopg.Error:
                rows = []  # the tables are not there yet
            now = time.time()
            for seq, t in rows:
                lat.append((t, now - t))
                last = max(last, seq)
            time.sleep(0.005)
        # The floor: one row written and committed by the logging side itself.
        rtt = []
        with psycopg.connect(url) as writer:
            writer.execute("CREATE TEMP TABLE probe (i int, t double precision)")
            writer.commit()
            for i in range(200):
                t0 = time.perf_counter()
                writer.execute("INSERT INTO probe VALUES (%s, %s)", (i, t0))
                writer.commit()
                rtt.append(time.perf_counter() - t0)
    out, err = proc.communicate(timeout=120)
    achieved = float(out.strip() or 0)
    if not lat:
        raise RuntimeError(f"no row reached the database: {err.strip()[-500:]}")
    # The follower starts with the run (a new process: its imports, its connection): the records logged
    # before its first row was visible wait for that start; the others are the steady state.
    first_visible = lat[0][0] + lat[0][1]
    every = sorted(x for _, x in lat)
    steady = sorted(x for t, x in lat if t >= first_visible)
    rtt.sort()

    def pct(xs: list[float], q: float) -> float:
        return round(xs[min(len(xs) - 1, int(len(xs) * q))], 4)

    common = {"unit": "s", "clock": "wall", "floor": round(statistics.median(rtt), 5),
              "floor_name": "one INSERT + COMMIT round trip (median)", "achieved_rate": round(achieved)}
    emit("stream", "latency from log to the row visible, 10,000 records/s, median", value=pct(every, 0.5),
         target_seconds=2.0, records=len(every), missing=n - len(every), **common)
    emit("stream", "latency from log to the row visible, 10,000 records/s, p99", value=pct(every, 0.99),
         max=pct(every, 1.0), first_row=round(lat[0][1], 3), **common)
    emit("stream", "the same, records logged once the follower ran (steady state), median", value=pct(steady, 0.5),
         records=len(steady), **common)
    emit("stream", "the same, steady state, p99", value=pct(steady, 0.99), max=pct(steady, 1.0), **common)


def bench_sixteen(admin: str, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """Sixteen stores, each with its training process and its follower, into one database at once."""
    url = _fresh_db(admin, "bench_sixteen")
    stores = 16
    n = 2_000 if args.quick else 20_000
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env.update(TRACKER_TEAM_URL=url, TRACKER_FOLLOWER_LINGER="2")
    code = textwrap.dedent("""
        import sys, tracker
        with tracker.start_run("bench", sys.argv[2], run_id=sys.argv[2], system_metrics=False) as run:
            for i in range(int(sys.argv[1])):
                run.log({"loss": 0.41, "acc": 0.93, "lr": 0.001, "grad_norm": 1.37}, step=i)
    """)
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code, str(n), f"s{k:02d}"],
                              env={**env, "TRACKER_STORE": str(tmp / f"store{k:02d}")}, cwd=str(tmp),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for k in range(stores)]
    total = stores * (n + 2)
    first = None
    deadline = time.monotonic() + 600
    while (got := _count(url)) < total and time.monotonic() < deadline:
        if got and first is None:
            first = time.perf_counter()
        time.sleep(0.05)
    elapsed = time.perf_counter() - t0
    window = time.perf_counter() - (first or t0)
    for p in procs:
        p.wait(600)
    live = _check(url, total, tmp, stores)
    emit("stream", "sixteen stores streaming into one database at once (from the runs' start)", unit="records/s",
         clock="wall", value=round(live["rows"] / elapsed), seconds=round(elapsed, 2),
         steady_value=round(live["rows"] / window), steady_seconds=round(window, 2), **live)
    # The same sixteen stores, their followers started at once on what the runs wrote: the database's side.
    url = _fresh_db(admin, "bench_sixteen_again")
    t0 = time.perf_counter()
    followers = [_follower_proc(tmp / f"store{k:02d}", url) for k in range(stores)]
    deadline = time.monotonic() + 600
    while _count(url) < total and time.monotonic() < deadline:
        time.sleep(0.05)
    again_s = time.perf_counter() - t0
    for f in followers:
        stop_process(f)
    again = _check(url, total, tmp, stores)
    # The floor: one `tracker sync` of as many records (the sixteen stores' runs, copied into one store).
    one = tmp / "one"
    for k in range(stores):
        for run_dir in (tmp / f"store{k:02d}" / "runs").iterdir():
            dest = one / "runs" / run_dir.name
            dest.mkdir(parents=True)
            for f in run_dir.glob("*.jsonl"):
                (dest / f.name).write_bytes(f.read_bytes())
    floor_url = _fresh_db(admin, "bench_sixteen_floor")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    s0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tracker", "--store", str(one), "sync", floor_url], env=clean,
                   check=True, capture_output=True)
    sync_s = time.perf_counter() - s0
    emit("stream", "sixteen followers started at once on sixteen stores, one database", unit="records/s",
         clock="wall", value=round(again["rows"] / again_s), floor=round(again["rows"] / sync_s),
         ratio=round(sync_s / again_s, 3), floor_name="one tracker sync of the same records",
         seconds=round(again_s, 2), sync_seconds=round(sync_s, 2), **again)


def _follower_proc(store: Path, url: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env.update(TRACKER_FOLLOWER_URL=url, TRACKER_FOLLOWER_LINGER="600")
    return subprocess.Popen([sys.executable, "-m", "tracker.team.follower", "--store", str(store)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _check(url: str, total: int, tmp: Path, stores: int) -> dict:
    """Rows, distinct keys (a duplicate would show), finished writers, and deadlocks the followers met."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows, distinct = conn.execute("SELECT count(*), count(DISTINCT (run_id, writer, seq)) "
                                      "FROM tracker_events").fetchone()
        finished = conn.execute("SELECT count(*) FROM tracker_writers WHERE status = 'finished'").fetchone()[0]
    logs = ""
    for k in range(stores):
        with contextlib.suppress(OSError):
            logs += (tmp / f"store{k:02d}" / "team" / "follower.log").read_text()
    return {"rows": rows, "expected": total, "duplicates": rows - distinct, "writers_finished": finished,
            "deadlocks": logs.lower().count("deadlock")}


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    server = None
    admin = args.url
    if admin is None:
        admin, server = _server()
    try:
        with scratch() as tmp:
            if args.only in (None, "cost"):
                bench_log_cost(admin, tmp, args)
            if args.only in (None, "latency"):
                bench_latency(admin, tmp, args)
            if args.only in (None, "sixteen"):
                bench_sixteen(admin, tmp, args)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0],
                                         url={"default": None, "help": "an admin URL of a PostgreSQL server"},
                                         only={"default": None, "choices": ["cost", "latency", "sixteen"]})))
