"""The dashboard over the team database (PostgreSQL): the runs list of 10,000 runs, a million-step run's page.

Requests go through Starlette's test client (the whole app), wall time (the
database works in another process).

- ``GET /api/runs`` (and with ``stats=loss``, what the runs page asks) over
  10,000 runs in the database, the first request of a fresh app and then
  repeated (the page refreshes every few seconds); the target is 1 s. Floor:
  the same request over a folder store of 10,000 runs.
- A 1,000,000-step run's page over the database: ``GET /api/runs/ID`` (the
  page's first request) and its first chart (``/metrics?names=loss``) on a
  fresh app; floor: the same for a 1,000-step run; the target is 3x.

The database: ``TRACKER_BENCH_PG`` (a URL of an empty database), else a
PostgreSQL server started here the way the tests start one. The big run is
written with the line encoder and copied in by ``tracker sync`` (COPY); the
10,000 runs are one synced run cloned by ``INSERT ... SELECT``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_ui import make_big_run, make_list_store, median  # noqa: E402
from common import emit, main_guard, parse_args, scratch  # noqa: E402

import tracker  # noqa: E402

CLONED = ["tracker_runs", "tracker_writers", "tracker_events", "tracker_writer_figures", "tracker_metric_chunks",
          "tracker_metric_values", "tracker_changes"]


def wall(fn) -> float:  # noqa: ANN001
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def database() -> tuple[str, object | None]:
    """A URL of an empty database, and the server to stop afterwards (``None`` when given)."""
    given = os.environ.get("TRACKER_BENCH_PG")
    if given:
        return given, None
    import psycopg

    from tests.query.pg import Server
    from tests.sysdeps import postgres_bindir

    bins = postgres_bindir()
    if bins is None:
        raise RuntimeError("needs PostgreSQL (Debian's postgresql) or TRACKER_BENCH_PG")
    server = Server(bins)
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE bench")
    return server.url("bench"), server


def quiet_sync(store: Path, url: str) -> None:
    from tracker.team.postgres import sync

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(tracker.open_store(store), url)


def clone_runs(url: str, template: str, n: int) -> None:
    """``n`` copies of run ``template`` (every table that holds it), ids ``run00000``..."""
    import psycopg

    with psycopg.connect(url) as conn:
        for table in CLONED:
            cols = [r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND is_generated = 'NEVER' "
                "ORDER BY ordinal_position",
                (table,)).fetchall()]
            sel = ", ".join("'run' || lpad(g::text, 5, '0')" if c == "run_id" else
                            ("nextval('tracker_change_seq')" if c == "stamp" else
                             ("created_at + g" if (table, c) == ("tracker_runs", "created_at") else c))
                            for c in cols)
            conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {sel} FROM {table}, "  # noqa: S608
                         f"generate_series(0, %s) AS g WHERE run_id = %s", (n - 1, template))
        for table in CLONED:
            conn.execute(f"DELETE FROM {table} WHERE run_id = %s", (template,))  # noqa: S608
        conn.commit()
        conn.execute("ANALYZE")


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

    import tracker.ui

    n_runs, n_big = (500, 50_000) if args.quick else (10_000, 1_000_000)
    rounds = max(1, min(args.repeat, 3)) if args.quick else args.repeat
    url, server = database()
    try:
        with scratch() as tmp:
            # --- the runs list -----------------------------------------------------------------------
            folder = make_list_store(tmp, n_runs)
            template = next((tmp / "tmpl" / "runs").iterdir()).name
            t0 = time.perf_counter()
            quiet_sync(tmp / "tmpl", url)
            clone_runs(url, template, n_runs)
            made = time.perf_counter() - t0
            # The first request of a fresh app (nothing kept yet), as after `tracker ui` starts.
            value, floor = [], []
            for _ in range(rounds):
                with TestClient(tracker.ui.create_app(folder)) as local:
                    floor.append(wall(lambda: local.get("/api/runs?stats=loss").raise_for_status()))  # noqa: B023
                with TestClient(tracker.ui.create_app(url)) as team:
                    value.append(wall(lambda: team.get("/api/runs?stats=loss").raise_for_status()))  # noqa: B023
            v = median(value)
            emit("team", f"GET /api/runs?stats=loss over the database, {n_runs:,} runs, first request of a fresh app",
                 unit="s", clock="wall", floor_name=f"the same over a folder store of {n_runs:,} runs",
                 value=round(v, 4), floor=round(median(floor), 4),
                 ratio=round(median([a / b for a, b in zip(value, floor, strict=True)]), 3), rounds=rounds,
                 target="<= 1 s", met=v <= 1.0, setup_s=round(made, 1))
            for query in ("", "?stats=loss"):
                value, floor = [], []
                with TestClient(tracker.ui.create_app(url)) as team, \
                        TestClient(tracker.ui.create_app(folder)) as local:
                    assert len(team.get("/api/runs" + query).json()["runs"]) == n_runs
                    local.get("/api/runs" + query).raise_for_status()
                    for _ in range(rounds):
                        floor.append(wall(lambda: local.get("/api/runs" + query).raise_for_status()))  # noqa: B023
                        value.append(wall(lambda: team.get("/api/runs" + query).raise_for_status()))  # noqa: B023
                v = median(value)
                emit("team", f"GET /api/runs{query} over the database, {n_runs:,} runs, repeated (the page's refresh)",
                     unit="s", clock="wall",
                     floor_name=f"the same over a folder store of {n_runs:,} runs", value=round(v, 4),
                     floor=round(median(floor), 4),
                     ratio=round(median([a / b for a, b in zip(value, floor, strict=True)]), 3), rounds=rounds,
                     target="<= 1 s", met=v <= 1.0, setup_s=round(made, 1))

            # --- a million-step run's page against a thousand-step one's ------------------------------
            big, big_id, *_ = make_big_run(tmp / "b", n_big)
            small, small_id, *_ = make_big_run(tmp / "s", 1000)
            t0 = time.perf_counter()
            quiet_sync(big, url)
            synced = time.perf_counter() - t0
            quiet_sync(small, url)

            def page(rid: str, client: object) -> float:
                def both() -> None:
                    client.get(f"/api/runs/{rid}?parts=info,schemas,metric_names,panels").raise_for_status()
                    res = client.get(f"/api/runs/{rid}/metrics?names=loss&max_points=2000")
                    assert len(res.json()["series"]["loss"]["x"]) <= 2000

                return wall(both)

            def fresh(rid: str) -> float:
                with TestClient(tracker.ui.create_app(url)) as client:
                    return page(rid, client)

            def again(rid: str) -> float:
                # A second look (another member of the lab opens the same run): the drawn series are kept
                # while the run's change stamp holds.
                with TestClient(tracker.ui.create_app(url)) as client:
                    page(rid, client)
                    return page(rid, client)

            for how, fn in (("fresh app: the first look", fresh), ("the same app, a second look", again)):
                value, floor = [], []
                fn(small_id)
                for _ in range(rounds):
                    floor.append(fn(small_id))
                    value.append(fn(big_id))
                ratios = [a / b for a, b in zip(value, floor, strict=True)]
                ratio = median(ratios)
                emit("team", f"a {n_big:,}-step run's page over the database (GET /api/runs/ID, then its first "
                     f"chart), {how}", unit="s", clock="wall", floor_name="the same for a 1,000-step run",
                     value=round(median(value), 4), floor=round(median(floor), 4), ratio=round(ratio, 3),
                     ratio_min=round(min(ratios), 3), ratio_max=round(max(ratios), 3), rounds=rounds,
                     target="<= 3x", met=ratio <= 3.0, sync_s=round(synced, 1), records=n_big)
    finally:
        if server is not None:
            server.stop()  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
