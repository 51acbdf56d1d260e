"""Streaming when the link drops: how soon the database is caught up once it is back, and what logging pays.

Figures, each next to a floor measured in the same script:

- the time from a link coming back to the database holding every record logged before it came back,
  while a run logs 10,000 records/s (median over 5 cuts). Each cut turns a TCP proxy between the
  follower and the server into a black hole (it forwards nothing and closes nothing, and the
  connections it held stay silent after) for three times ``[team] timeout``; the floor is one
  ``tracker sync`` of as many records over a working link;
- the time the follower takes to notice a cut (median), against ``[team] timeout``;
- ``run.log`` of 4 floats at 10,000 records/s (CPU time of the logging process) while the store's follower
  loses its link, reconnects and catches up in the background, against the same paced loop with no
  follower (alternating rounds; target 1.05x).

Needs psycopg and PostgreSQL: ``--url postgresql://...`` names a server (an admin URL) to use; without it
the script starts a throwaway server with ``initdb`` / ``pg_ctl`` as the tests do. The proxy runs in a
process of its own (``python -m tests.team.faults``), so its threads never count as the logging process's.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from bench_stream import _follower, _fresh_db, _server  # noqa: E402
from common import FOUR_FLOATS, emit, main_guard, parse_args, scratch, stop_process  # noqa: E402

import tracker  # noqa: E402

RATE = 10_000.0


class ProxyProcess:
    """``tests/team/faults.py``'s black-hole proxy in a process of its own, driven through its stdin."""

    def __init__(self, target_port: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.team.faults", str(target_port)], cwd=str(ROOT),
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())

    def url(self, direct: str) -> str:
        head, _, tail = direct.rpartition("@")
        host, _, rest = tail.partition("/")
        return f"{head}@{host.rsplit(':', 1)[0]}:{self.port}/{rest}"

    def _say(self, word: str) -> None:
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()
        if word != "quit":
            assert self.proc.stdout.readline().strip() == "ok"

    def freeze(self) -> None:
        self._say("freeze")

    def thaw(self) -> None:
        self._say("thaw")

    def close(self) -> None:
        self._say("quit")
        self.proc.wait(30)


def _toml(folder: Path, url: str | None, timeout: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tracker.toml"
    path.write_text('[store]\npath = "store"\n\n[team]\n' + (f'url = "{url}"\n' if url else "")
                    + f"timeout = {timeout}\n")
    return path


def _last_seq(segment: Path) -> int:
    """The sequence number of the segment's last complete line (what was logged up to now)."""
    with open(segment, "rb") as f:
        f.seek(max(0, os.path.getsize(segment) - 65536))
        lines = f.read().split(b"\n")[:-1]
    return int(json.loads(lines[-1])["seq"])


def _state(store: Path) -> dict:
    try:
        return json.loads((store / "team" / "follower.json").read_text())
    except (OSError, ValueError):
        return {}


LOGGER = """
import os, sys, time, tracker
rate, stop = float(sys.argv[1]), sys.argv[2]
with tracker.start_run("bench", "cut", run_id="cut", system_metrics=False) as run:
    t0 = time.perf_counter()
    i = 0
    while not os.path.exists(stop):
        run.log({"loss": 0.41, "acc": 0.93, "lr": 0.001, "grad_norm": 1.37}, step=i)
        i += 1
        if i % 10 == 0:
            d = t0 + i / rate - time.perf_counter()
            if d > 0:
                time.sleep(d)
print(i / (time.perf_counter() - t0), flush=True)
"""


def bench_catch_up(admin: str, server_port: int, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """A run logs 10,000 records/s with streaming on; the link to the database is cut five times."""
    import psycopg

    direct = _fresh_db(admin, "bench_faults_catch_up")
    proxy = ProxyProcess(server_port)
    timeout = min(args.timeout, 2.0) if args.quick else args.timeout
    cuts = 1 if args.quick else 5
    folder = tmp / "catch"
    toml = _toml(folder, proxy.url(direct), timeout)
    store = folder / "store"
    stop = folder / "stop"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env["TRACKER_CONFIG"] = str(toml)
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(LOGGER), str(RATE), str(stop)], cwd=str(folder),
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    catch, notice, backlog = [], [], []
    try:
        with psycopg.connect(direct, autocommit=True) as db:
            def synced() -> int:
                try:
                    return int(db.execute("SELECT coalesce(max(seq), 0) FROM tracker_events").fetchone()[0])
                except psycopg.Error:
                    return 0

            deadline = time.monotonic() + 60
            while synced() == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            segment = next((store / "runs" / "cut").glob("*.jsonl"))
            for _ in range(cuts):
                # Streaming in its steady state first: the database within a second (10,000 records) of the run.
                steady = time.monotonic()
                while synced() < _last_seq(segment) - RATE and time.monotonic() - steady < 120:
                    time.sleep(0.05)
                time.sleep(1.0)
                proxy.freeze()
                t_cut = time.monotonic()
                at_cut = synced()
                while _state(store).get("connected", True) and time.monotonic() - t_cut < 10 * timeout:
                    time.sleep(0.02)
                notice.append(time.monotonic() - t_cut)
                time.sleep(max(0.0, t_cut + 3 * timeout - time.monotonic()))
                proxy.thaw()
                t_back = time.monotonic()
                target = _last_seq(segment)
                while synced() < target and time.monotonic() - t_back < 300:
                    time.sleep(0.02)
                catch.append(time.monotonic() - t_back)
                backlog.append(target - at_cut)
        stop.touch()
        out, err = child.communicate(timeout=60)
        achieved = float(out.strip() or 0)
        deadline = time.monotonic() + 120
        total = _last_seq(segment)
        while time.monotonic() < deadline:
            with psycopg.connect(direct) as db:
                rows, distinct, top = db.execute("SELECT count(*), count(DISTINCT (run_id, writer, seq)), "
                                                 "coalesce(max(seq), 0) FROM tracker_events").fetchone()
            if rows >= total:
                break
            time.sleep(0.2)
    finally:
        if child.poll() is None:
            child.kill()
        proxy.close()
        _stop_store_follower(store)
    # The floor: one `tracker sync` (in this process) of a run of as many records, over a working link.
    n = int(statistics.median(backlog))
    floor_store = tmp / "floor-store"
    with tracker.start_run("bench", "floor", store=floor_store, run_id="floor", system_metrics=False) as run:
        for i in range(n):
            run.log(FOUR_FLOATS, step=i)
    floors = []
    for k in range(3):
        url = _fresh_db(admin, f"bench_faults_floor{k}")
        t0 = time.perf_counter()
        from tracker.team.postgres import sync

        sync(tracker.open_store(floor_store), url)
        floors.append(time.perf_counter() - t0)
    floor = statistics.median(floors)
    emit("faults", "from a link coming back to the database caught up, 10,000 records/s (median over cuts)",
         unit="s", clock="wall", value=round(statistics.median(catch), 3), floor=round(floor, 3),
         ratio=round(statistics.median(catch) / floor, 2), floor_name="one tracker sync of as many records",
         cuts=len(catch), each=[round(x, 2) for x in catch], backlog_records=n, cut_seconds=3 * timeout,
         timeout=timeout, achieved_rate=round(achieved), rows=rows, duplicates=rows - distinct,
         expected=total, missing=total - top)
    emit("faults", "from a cut to the follower noticing it (median)", unit="s", clock="wall",
         value=round(statistics.median(notice), 3), floor=timeout, ratio=round(statistics.median(notice) / timeout, 2),
         floor_name="[team] timeout", each=[round(x, 2) for x in notice], target_seconds=60)


def _stop_store_follower(store: Path) -> None:
    import signal

    pid = _state(store).get("pid")
    if pid:
        try:
            os.kill(int(pid), signal.SIGTERM)
        except OSError:
            pass


def bench_log_cost(admin: str, server_port: int, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """Alternating paced rounds: no follower, then a follower whose link is cut at the start and back midway."""
    direct = _fresh_db(admin, "bench_faults_log_cost")
    proxy = ProxyProcess(server_port)
    timeout = 2.0
    seconds = 3 * timeout
    folder = tmp / "cost"
    toml = _toml(folder, None, timeout)
    store = folder / "store"
    old = os.environ.get("TRACKER_CONFIG")
    cpu: dict[str, list[float]] = {"with": [], "without": []}
    try:
        with tracker.start_run("bench", "log-cost", store=store, system_metrics=False) as run:
            run.log(FOUR_FLOATS)
            os.environ["TRACKER_CONFIG"] = str(toml)  # the followers started below read [team] timeout there
            for _ in range(1 if args.quick else args.repeat):
                for mode in ("without", "with"):
                    follower = _follower(store, proxy.url(direct)) if mode == "with" else None
                    try:
                        if follower is not None:
                            proxy.freeze()
                        thawed = follower is None
                        calls = 0
                        c0, t0 = time.process_time(), time.perf_counter()
                        while (now := time.perf_counter()) - t0 < seconds:
                            run.log(FOUR_FLOATS)
                            calls += 1
                            if calls % 10 == 0:
                                d = t0 + calls / RATE - time.perf_counter()
                                if d > 0:
                                    time.sleep(d)
                            if not thawed and now - t0 >= seconds / 2:
                                proxy.thaw()
                                thawed = True
                        cpu[mode].append((time.process_time() - c0) / calls)
                    finally:
                        if follower is not None:
                            stop_process(follower)
    finally:
        if old is None:
            os.environ.pop("TRACKER_CONFIG", None)
        else:
            os.environ["TRACKER_CONFIG"] = old
        proxy.close()
    ratios = [w / o for w, o in zip(cpu["with"], cpu["without"], strict=True)]
    emit("faults", "run.log, 4 floats at 10,000/s, the follower losing its link and reconnecting (cpu time)",
         unit="us/call", clock="cpu", value=round(statistics.median(cpu["with"]) * 1e6, 3),
         floor=round(statistics.median(cpu["without"]) * 1e6, 3), ratio=round(statistics.median(ratios), 3),
         ratio_min=round(min(ratios), 3), ratio_max=round(max(ratios), 3), rounds=len(ratios),
         floor_name="the same paced loop, no follower", target=1.05, seconds_per_round=seconds, timeout=timeout)


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    server = None
    admin = args.url
    if admin is None:
        admin, server = _server()
    port = int(admin.rsplit(":", 1)[1].split("/", 1)[0])
    try:
        with scratch() as tmp:
            if args.only in (None, "catch-up"):
                bench_catch_up(admin, port, tmp, args)
            if args.only in (None, "cost"):
                bench_log_cost(admin, port, tmp, args)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0],
                                         url={"default": None, "help": "an admin URL of a PostgreSQL server"},
                                         timeout={"default": 5.0, "type": float,
                                                  "help": "[team] timeout of the cuts (seconds)"},
                                         only={"default": None, "choices": ["catch-up", "cost"]})))
