"""Edits and the team database: what a ``tracker sync`` with nothing new costs, and an edit's way in.

Figures, each next to a floor measured in the same script:

- a ``tracker sync`` that finds nothing new (a fresh syncer, as each
  ``tracker sync`` command is) over a store of 1,000 finished runs, half of
  them with an edit segment of 200 edits (``run.summary[...]`` set once an
  epoch, a few tags and a note), already synced; floor: the same sync over
  the same runs without their edits (what the runs' segments alone cost);
- a ``tracker sync`` after one run of that store was tagged, against the same
  floor (one run's edit read, the others looked at by size);
- the time from ``store.tag(...)`` of a finished run to the tag in the
  database's run info, with the store's follower streaming and the editing
  process knowing the team URL (median); floor: one INSERT + COMMIT round
  trip; target: a few seconds.

Wall time (the database works in another process) and the syncing process's
CPU time. The database: ``TRACKER_BENCH_PG`` (a URL of an empty database),
else a PostgreSQL server started here the way the tests start one.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_team import database  # noqa: E402
from common import emit, main_guard, parse_args, scratch  # noqa: E402

import tracker  # noqa: E402

EDITS_PER_RUN = 200


def make_stores(root: Path, runs: int) -> tuple[Path, Path]:
    """Two stores of the same ``runs`` finished runs: ``plain`` without edits, ``edited`` with an edit segment in
    every other run (hard links of one real run's files, as bench_ui's list store)."""
    from tracker.write.edits import EditWriter

    with tracker.start_run(project="bench", name="edits", store=root / "tmpl", config={"lr": 0.01},
                           tags=["bench"]) as run:
        for i in range(100):
            run.log({"loss": 1.0 / (i + 1), "acc": i / 100}, step=i)
    (seg,) = Path(run.path).glob("*.jsonl")
    writer = EditWriter(Path(run.path))
    for epoch in range(EDITS_PER_RUN - 3):
        writer.append({"summary": {"best_acc": epoch / EDITS_PER_RUN, "epoch": epoch}})
    writer.append({"tags_add": ["tuned"]})
    writer.append({"tags_add": ["baseline"], "tags_remove": ["bench"]})
    writer.append({"notes": "the learning rate was too high after epoch 50"})
    writer.close()
    plain, edited = root / "plain", root / "edited"
    for i in range(runs):
        for store in (plain, edited):
            folder = store / "runs" / f"run{i:05d}"
            folder.mkdir(parents=True)
            os.link(seg, folder / seg.name)
        if i % 2 == 0:
            (edited / "runs" / f"run{i:05d}" / "edits").mkdir()
            os.link(writer.path, edited / "runs" / f"run{i:05d}" / "edits" / writer.path.name)
    return plain, edited


def fresh_db(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def timed_sync(store: Path, url: str) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of one ``tracker sync`` of ``store`` into ``url`` (a fresh syncer)."""
    from tracker.team.postgres import sync

    st = tracker.open_store(store)
    w0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(st, url)
    return time.perf_counter() - w0, time.process_time() - c0


def tags_in_db(url: str, run_id: str) -> list[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT info::text FROM tracker_runs WHERE run_id = %s", (run_id,)).fetchone()
    return json.loads(row[0]).get("tags") or [] if row else []


def row(name: str, values: list[float], floors: list[float], unit: str, floor_is: str, **more: object) -> None:
    ratios = [v / f for v, f in zip(values, floors, strict=True)]
    emit("sync_edits", name, value=round(statistics.median(values), 4), floor=round(statistics.median(floors), 4),
         ratio=round(statistics.median(ratios), 3), ratio_min=round(min(ratios), 3), ratio_max=round(max(ratios), 3),
         unit=unit, rounds=len(values), floor_is=floor_is, clock="wall", **more)


def bench_no_change(admin: str, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    runs = 100 if args.quick else 1000
    plain, edited = make_stores(tmp, runs)
    url_plain, url_edited = fresh_db(admin, "bench_edits_plain"), fresh_db(admin, "bench_edits_edited")
    timed_sync(plain, url_plain)
    timed_sync(edited, url_edited)
    walls: dict[str, list[float]] = {"plain": [], "edited": [], "one": []}
    cpus: dict[str, list[float]] = {"plain": [], "edited": [], "one": []}
    store = tracker.open_store(edited)
    for k in range(args.repeat):
        for key, path, url in (("plain", plain, url_plain), ("edited", edited, url_edited)):
            w, c = timed_sync(path, url)
            walls[key].append(w)
            cpus[key].append(c)
        # One run of the edited store is tagged (a segment of its own, read in full by the next sync).
        rid = f"run{(2 * k + 1) % runs:05d}"
        store.tag(rid, add=[f"look{k}"])
        w, c = timed_sync(edited, url_edited)
        walls["one"].append(w)
        cpus["one"].append(c)
        arrived = f"look{k}" in tags_in_db(url_edited, rid)
    floor_is = f"the same sync over the same {runs} runs without their edits"
    row(f"tracker sync with nothing new, {runs} runs, half with {EDITS_PER_RUN} edits", walls["edited"],
        walls["plain"], "s", floor_is, cpu_s=round(statistics.median(cpus["edited"]), 4),
        cpu_floor_s=round(statistics.median(cpus["plain"]), 4))
    row(f"tracker sync after one run of {runs} was tagged", walls["one"], walls["plain"], "s", floor_is,
        cpu_s=round(statistics.median(cpus["one"]), 4), tag_in_database=arrived)


def bench_follower(admin: str, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    import psycopg

    url = fresh_db(admin, "bench_edits_follow")
    store_dir = tmp / "follow"
    for i in range(3):
        with tracker.start_run(project="bench", name=f"r{i}", store=store_dir) as run:
            run.log({"loss": 1.0})
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env.update(TRACKER_FOLLOWER_URL=url, TRACKER_FOLLOWER_LINGER="600")
    proc = subprocess.Popen([sys.executable, "-m", "tracker.team.follower", "--store", str(store_dir)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and len(tags_in_db_all(url)) < 3:
            time.sleep(0.05)
        # The editing process knows the team database (as a machine whose tracker.toml has [team] url does).
        os.environ["TRACKER_TEAM_URL"] = url
        store = tracker.open_store(store_dir)
        rid = store.runs()[0].id
        lat: list[float] = []
        floors: list[float] = []
        with psycopg.connect(url) as conn:
            conn.execute("CREATE TEMP TABLE t (x int)")
            for k in range(args.repeat):
                t0 = time.perf_counter()
                conn.execute("INSERT INTO t VALUES (1)")
                conn.commit()
                floors.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                store.tag(rid, add=[f"seen{k}"])
                limit = time.monotonic() + 30
                while f"seen{k}" not in tags_in_db(url, rid):
                    if time.monotonic() > limit:
                        raise RuntimeError(f"the tag seen{k} did not reach the database within 30 s")
                    time.sleep(0.01)
                lat.append(time.perf_counter() - t0)
        row("store.tag of a finished run to the tag in the database, the follower streaming", lat, floors, "s",
            "one INSERT + COMMIT round trip", target="a few seconds", p_max=round(max(lat), 4))
    finally:
        os.environ.pop("TRACKER_TEAM_URL", None)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(store_dir / "team", ignore_errors=True)


def tags_in_db_all(url: str) -> list[str]:
    import psycopg

    try:
        with psycopg.connect(url) as conn:
            return [r[0] for r in conn.execute("SELECT run_id FROM tracker_runs").fetchall()]
    except psycopg.Error:
        return []


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    url, server = database()
    admin = url
    try:
        with scratch() as tmp:
            if args.only in (None, "sync"):
                bench_no_change(admin, tmp, args)
            if args.only in (None, "follower"):
                bench_follower(admin, tmp, args)
    finally:
        if server is not None:
            server.stop()  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0],
                                         only={"default": None, "choices": ["sync", "follower"]})))
