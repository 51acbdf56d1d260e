"""Layout 5's sort values: migrated from layout 4 with runs in it, kept by PostgreSQL through every later write,
read by a first page as an index walk; and the status filter agrees with the status every reader derives."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import psycopg
import pytest

import tracker
from tracker.core.format import RECORD, RUN_FINISHED, RUN_STARTED, encode_line, event
from tracker.read.listing import page_entries, parse_sort

from ..query.support import run_tracker
from ..runsgen import write_store
from .support import to_layout_5
from .test_paging import SORTS, walk

STATUSES = [None, "finished", "failed", "crashed", "running"]


def synced(path: Path, url: str) -> None:
    from tracker.team.postgres import sync

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(tracker.open_store(path), url)


def same_pages(folder: Any, team: Any, sorts: list[str] = SORTS, **query: Any) -> None:
    for sort in sorts:
        assert walk(folder, 4, sort=sort, **query) == walk(team, 4, sort=sort, **query), (sort, query)


def to_layout_4(url: str) -> None:
    """The database as layout 4 left it: no sort values, their functions, triggers and indexes."""
    from tracker.team.sortvalues import TRIGGERS

    to_layout_5(url)
    with psycopg.connect(url, autocommit=True) as conn:
        for table, trigger, _, _ in TRIGGERS:
            conn.execute(f"DROP TRIGGER {trigger} ON {table}")
        conn.execute("DROP TABLE tracker_sort_values")
        for (fn,) in conn.execute("SELECT oid::regprocedure::text FROM pg_proc WHERE proname LIKE 'tracker%'"):
            conn.execute(f"DROP FUNCTION {fn}")
        for index in ("tracker_runs_project_c", "tracker_runs_group_c", "tracker_runs_job_type_c",
                      "tracker_writers_running_seen"):
            conn.execute(f"DROP INDEX {index}")
        conn.execute("DELETE FROM tracker_layout WHERE layout > 4")


def migrated(tmp_path: Path, url: str, seed: int, n: int, back: Any, layout: int) -> Path:
    """A random store of ``n`` runs synced into ``url``, the database put back to layout ``layout`` by ``back``
    (refused by readers then), and migrated by ``tracker sync`` (which has nothing new to copy)."""
    from tracker.team.postgres import LAYOUT, TeamStore

    path = write_store(tmp_path, seed=seed, n=n)
    synced(path, url)
    back(url)
    with pytest.raises(tracker.TrackerError, match=f"layout {layout}, older than layout {LAYOUT}"):
        TeamStore(url)
    res = run_tracker("--store", str(path), "sync", url)
    assert res.returncode == 0, res.stderr
    return path


def test_a_layout_4_database_with_runs_is_migrated_and_its_pages_are_the_folders(tmp_path: Path,
                                                                                  pg_url: str) -> None:
    from tracker.team.postgres import TeamStore

    path = migrated(tmp_path, pg_url, 5, 24, to_layout_4, 4)
    with psycopg.connect(pg_url) as conn:
        keys = dict(conn.execute("SELECT key, count(*) FROM tracker_sort_values GROUP BY key").fetchall())
    assert keys["status"] == keys["records"] == keys["ended_at"] == 24 and keys["metric.loss.min"] > 0
    assert keys["config.lr"] > 0 and keys["duration"] > 0
    folder, team = tracker.open_store(path), TeamStore(pg_url)
    try:
        same_pages(folder, team)
        for status in STATUSES[1:3]:
            same_pages(folder, team, ["-metric.loss.min", "config.lr"], status=status, project="p")
    finally:
        team.conn.close()


def test_a_layout_5_database_is_migrated_and_its_tag_text_and_time_pages_are_the_folders(tmp_path: Path,
                                                                                          pg_url: str) -> None:
    from tracker.team.postgres import TeamStore

    path = migrated(tmp_path, pg_url, 6, 22, to_layout_5, 5)
    with psycopg.connect(pg_url) as conn:
        keys = dict(conn.execute("SELECT key, count(*) FROM tracker_sort_values WHERE key IN ('ended_at', "
                                 "'duration') GROUP BY key").fetchall())
        tagged = conn.execute("SELECT count(*) FROM tracker_runs WHERE tags <> '{}'").fetchone()[0]
    assert keys == {"ended_at": 22, "duration": 22} and tagged > 0
    folder, team = tracker.open_store(path), TeamStore(pg_url)
    times = ["ended_at", "-ended_at", "duration", "-duration"]
    try:
        same_pages(folder, team, times)
        # (a text's % and _ are matched as themselves; the fields' separator is looked for field by field)
        for query in ({"tag": "t1"}, {"tag": ["t1", "t2"]}, {"q": "b"}, {"q": "T2"}, {"q": "t1", "project": "p"},
                      {"q": "n-1"}, {"q": "n_1"}, {"q": "%1"}, {"q": "\x01b"}, {"q": "1\x01"}):
            same_pages(folder, team, ["-created_at", "-duration", "config.lr", "name"], **query)
        # Tags edited after the fact move the column with them; so do a new run's.
        store = tracker.open_store(path)
        some = [i.id for i in store.runs()][:3]
        store.tag(some, add=["fresh"], remove=["t1"])
        synced(path, pg_url)
        folder = tracker.open_store(path)
        assert sorted(i.id for i in team.runs(tag="fresh")) == sorted(some)
        assert [i.id for i in team.runs(q="FRESH", sort="id")] == sorted(some)
        for query in ({"tag": "t1"}, {"tag": "fresh"}, {"q": "fre"}):
            same_pages(folder, team, ["-created_at", *times], **query)
    finally:
        team.conn.close()


def _segment(path: Path, writer: str, t0: float, losses: list[float], config: dict[str, Any] | None = None,
             status: str = "finished", lines_so_far: int | None = None) -> None:
    """A writer's segment as a writer writes it (a resumed one has no config of its own); ``lines_so_far``: only
    its first lines, as a sync sees a writer that is still writing."""
    start = {"host": "h", "pid": 1, "writer": writer, "name": "resumed", "project": "p", "config": config or {},
             "tags": [], "resumed": config is None}
    lines = [encode_line(event(RUN_STARTED, None, None, t0, writer, 1, start))]
    for i, loss in enumerate(losses):
        lines.append(encode_line(event(RECORD, "metrics", i, t0 + 1 + i, writer, i + 2, {"loss": loss, "acc": -loss})))
    lines.append(encode_line(event(RUN_FINISHED, None, None, t0 + 50, writer, len(losses) + 2,
                                   {"status": status, "error": None, "records": len(losses),
                                    "max_step": len(losses) - 1, "last": {"loss": losses[-1], "acc": -losses[-1]}})))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines[:lines_so_far]))


def test_sort_values_follow_new_writers_resumes_and_edits(tmp_path: Path, pg_url: str) -> None:
    from tracker.team.postgres import TeamStore

    path = write_store(tmp_path, seed=8, n=15)
    _segment(path / "runs" / "resumed" / "w1-000001.jsonl", "w1", 1.7e9 + 5, [0.7, 0.6], {"lr": 0.5})
    synced(path, pg_url)
    folder, team = tracker.open_store(path), TeamStore(pg_url)
    sorts = ["-metric.loss.min", "metric.loss.max", "metric.loss.last", "-metric.acc.last", "config.lr",
             "-config.opt.name", "records", "-last_step", "-ended_at", "duration"]
    try:
        same_pages(folder, team, sorts)
        # A resume: a second writer with the lowest loss of all and a later last; then a failed third.
        _segment(path / "runs" / "resumed" / "w2-000002.jsonl", "w2", 1.7e9 + 100, [0.01, 0.3, 0.2])
        synced(path, pg_url)
        assert [i.id for i in team.runs(sort="metric.loss.min", limit=1)] == ["resumed"]
        same_pages(folder, team, sorts)
        # A third writer synced while it writes (its figures grow in place), then failed.
        third = (path / "runs" / "resumed" / "w3-000003.jsonl", "w3", 1.7e9 + 200, [50.0, 3.0, -1.0])
        _segment(*third, status="failed", lines_so_far=2)
        synced(path, pg_url)
        assert [i.id for i in team.runs(sort="-metric.loss.last", limit=1)] == ["resumed"]  # its last: 50
        same_pages(folder, team, sorts)
        _segment(*third, status="failed")
        synced(path, pg_url)
        assert [i.id for i in team.runs(sort="metric.loss.last", limit=1)] == ["resumed"]  # its last: -1
        same_pages(folder, team, sorts)
        same_pages(folder, team, ["created_at"], status="failed")
        # Edited configs: a new top value, a key removed, a nested key added.
        store = tracker.open_store(path)
        some = [i.id for i in store.runs()][:3]
        store.update_config(some[0], {"lr": 1e9})
        store.update_config(some[1], {"opt": {"name": "zzz"}})
        store.update_config("resumed", {"lr": "text now"})
        synced(path, pg_url)
        folder = tracker.open_store(path)
        assert [i.id for i in team.runs(sort="-config.lr", limit=1)] == [some[0]]
        same_pages(folder, team, sorts)
    finally:
        team.conn.close()


class _Entry:
    """A run's info as :func:`tracker.read.listing.page_entries` sorts it (the folder store's order)."""

    metrics: dict[str, Any] = {}  # noqa: RUF012 - never written

    def __init__(self, info: Any) -> None:
        self.info = info


def test_status_filters_agree_with_the_status_readers_derive(tmp_path: Path, pg_url: str) -> None:
    """Writers changed by SQL alone (as any writer might): a running one, silent past the timeout, a resume."""
    from tracker.team.postgres import TeamStore

    path = write_store(tmp_path, seed=11, n=12)
    synced(path, pg_url)
    team = TeamStore(pg_url)
    ids = [i.id for i in team.runs(sort="id")]

    def check() -> None:
        every = team.runs(sort="id")
        # A status sort: the settled statuses walked, the runs with a writer running put right (pages too).
        by_status = [i.id for i in sorted(every, key=lambda i: (i.status, i.id))]
        assert [i.id for i in team.runs(sort="status")] == walk(team, 2, sort="status")[0] == by_status
        assert walk(team, 3, sort="-status")[0] == by_status[::-1]
        # End and duration: a run with a writer running has no duration (the kept one is put right at read time).
        for sort in ("duration", "-duration", "ended_at", "-ended_at"):
            want = [e.info.id for e in page_entries([_Entry(i) for i in every], parse_sort(sort))[0]]
            assert [i.id for i in team.runs(sort=sort)] == walk(team, 3, sort=sort)[0] == want, sort
        for status in STATUSES[1:]:
            want = [i.id for i in every if i.status == status]
            assert [i.id for i in team.runs(sort="id", status=status)] == want, status
            assert [i.id for i in team.runs(sort="-metric.loss.min", status=status)] == \
                [i.id for i in team.runs(sort="-metric.loss.min") if i.status == status], status

    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE tracker_writers SET status = 'running', ended_at = NULL WHERE run_id = %s", (ids[0],))
            conn.execute("UPDATE tracker_writers SET status = 'running', seen_at = now() - interval '1 hour' "
                         "WHERE run_id = %s", (ids[1],))
            # A resume of a failed run that finished, and one whose second writer failed.
            for rid, st in ((ids[2], "finished"), (ids[3], "failed")):
                conn.execute("INSERT INTO tracker_writers (run_id, writer, is_writer, host, started_at, ended_at, "
                             "status) SELECT run_id, 'zz-resume', true, host, ended_at + 5, ended_at + 9, %s FROM "
                             "tracker_writers WHERE run_id = %s", (st, rid))
            conn.execute("DELETE FROM tracker_writers WHERE run_id = %s", (ids[4],))  # no writer: crashed
        statuses = {i.id: i.status for i in team.runs()}
        assert statuses[ids[0]] == "running" and statuses[ids[1]] == "crashed" and statuses[ids[4]] == "crashed"
        assert statuses[ids[2]] == "finished"
        check()
        with psycopg.connect(pg_url, autocommit=True) as conn:  # the running writer goes silent: a heartbeat only
            conn.execute("UPDATE tracker_writers SET seen_at = now() - interval '1 hour' WHERE run_id = %s",
                         (ids[0],))
        assert team.run(ids[0]).info.status == "crashed"
        check()
    finally:
        team.conn.close()


def test_a_first_page_of_a_metric_or_config_sort_is_an_index_walk(tmp_path: Path, pg_url: str) -> None:
    """The plan of each query of a first page: the sort values' index walked in order (no sort of every run)."""
    from tracker.team.postgres import TeamStore

    path = write_store(tmp_path, seed=3, n=20)
    synced(path, pg_url)
    team = TeamStore(pg_url)
    seen: list[tuple[str, Any]] = []
    fetch = team._fetch

    def spy(sql: str, params: Any = ()) -> Any:
        seen.append((sql, params))
        return fetch(sql, params)

    team._fetch = spy  # type: ignore[method-assign]
    try:
        with team.conn.cursor() as cur:
            cur.execute("SET enable_seqscan = off")  # a small table: the planner would rather read it whole
            # A status of few runs is read first (one range of the index) and the page sorted from those.
            for sort, query, walked in (("-metric.loss.min", {}, True), ("config.lr", {}, True),
                                        ("metric.acc.last", {"project": "p"}, True), ("-ended_at", {}, True),
                                        ("duration", {"tag": "t1"}, True), ("-duration", {"q": "r"}, True),
                                        ("-config.opt.name", {"status": "failed"}, False)):
                seen.clear()
                team.runs(sort=sort, limit=3, **query)
                walks = [(s, p) for s, p in seen if "FROM tracker_sort_values s JOIN" in s]
                assert walks, sort
                for sql, params in walks:
                    cur.execute("EXPLAIN " + sql, params)
                    plan = "\n".join(r[0] for r in cur.fetchall())
                    assert "tracker_sort_values_walk" in plan and "Seq Scan" not in plan, plan
                    assert not walked or "Sort" not in plan.replace("Sort Key", ""), plan
    finally:
        team.conn.close()


def test_long_texts_are_sorted_exactly_from_the_json(tmp_path: Path, pg_url: str) -> None:
    """Config values longer than an index row holds, sharing their first characters: the order is still exact; and
    a NUL character in a config (which PostgreSQL's jsonb cannot hold) stops neither a sync nor a filter."""
    from tracker.team.postgres import TeamStore
    from tracker.team.sortvalues import TEXT_MAX

    store = tmp_path / "s"
    head = "x" * (TEXT_MAX + 10)
    for i, tail in enumerate(["b", "a", "c"]):
        with tracker.start_run("p", f"r{i}", store=store, run_id=f"r{i}", config={"note": head + tail, "k": i},
                               system_metrics=False) as run:
            run.log({"loss": float(i)}, step=0)
    synced(store, pg_url)
    team = TeamStore(pg_url)
    try:
        assert [i.id for i in team.runs(sort="config.note", limit=2)] == ["r1", "r0"]
        same_pages(tracker.open_store(store), team, ["config.note", "-config.note", "config.k"])
        with tracker.start_run("p", "nul", store=store, run_id="nul", config={"note": "a\x00b", "k": -1},
                               system_metrics=False) as run:
            run.log({"loss": -1.0}, step=0)
        synced(store, pg_url)  # the triggers take it (its config's sorts are read from the JSON)
        assert [i.id for i in team.runs(sort="metric.loss.min", limit=1)] == ["nul"]
        same_pages(tracker.open_store(store), team, ["metric.loss.min", "-metric.loss.last"])
        # Its end, duration, tags and text are read too (its info's NUL as U+FFFD): filters and sorts answer.
        assert [i.id for i in team.runs(q="NU", sort="-ended_at")] == ["nul"]
        same_pages(tracker.open_store(store), team, ["-ended_at", "duration"], q="r")
        same_pages(tracker.open_store(store), team, ["-ended_at", "duration"], tag="none-such")
    finally:
        team.conn.close()


def test_the_dashboard_pages_of_the_database_are_the_folders(tmp_path: Path, pg_url: str) -> None:
    """``GET /api/runs`` by cursor over both stores: sorts the database pages itself (sort values, statuses) and
    those it reads whole once (a tag or text filter, a sort on duration)."""
    from starlette.testclient import TestClient

    import tracker.ui

    path = write_store(tmp_path, seed=9, n=40)
    synced(path, pg_url)

    def walk_api(client: Any, query: str) -> tuple[list[str], set[int]]:
        ids: list[str] = []
        matched = set()
        cursor = ""
        while True:
            r = client.get(f"/api/runs?{query}&limit=6" + (f"&cursor={cursor}" if cursor else ""))
            assert r.status_code == 200, (query, r.text[:300])
            doc = r.json()
            ids += [row["id"] for row in doc["runs"]]
            matched.add(doc["matched"])
            if doc["next"] is None:
                return ids, matched
            cursor = doc["next"]

    with TestClient(tracker.ui.create_app(path)) as folder, TestClient(tracker.ui.create_app(pg_url)) as team:
        for query in ("sort=-metric.loss.min", "sort=config.lr&project=p", "sort=metric.acc.last&status=failed",
                      "project=q&status=finished", "sort=-config.opt.name&group=g1", "sort=records",
                      "sort=-project", "sort=config.lr&tag=t1", "q=b&sort=-metric.loss.max", "sort=-duration"):
            got, want = walk_api(team, query), walk_api(folder, query)
            assert got == want, query
            assert len(got[1]) == 1 and got[1] == {len(got[0])}, query


def test_two_transactions_writing_one_run_derive_its_values_from_both(tmp_path: Path, pg_url: str) -> None:
    """Writers of one run written at once by two transactions (a run resumed on another machine while the first
    syncs): the second waits for the first and derives from both, without a conflict."""
    import threading

    import orjson

    path = write_store(tmp_path, seed=4, n=3)
    synced(path, pg_url)
    with psycopg.connect(pg_url) as conn:
        rid = conn.execute("SELECT run_id FROM tracker_runs ORDER BY run_id LIMIT 1").fetchone()[0]

    def figures(loss: float, key: float) -> str:
        return orjson.dumps({"loss": {"count": 1, "first": loss, "last": loss, "last_key": key, "min": loss,
                                      "max": loss}}).decode()

    insert = ("INSERT INTO tracker_writer_figures (run_id, writer, metrics, max_time, figures, schemas) "
              "VALUES (%s, %s, 1, %s, %s, '{}')")
    first, second = psycopg.connect(pg_url), psycopg.connect(pg_url)
    try:
        first.execute(insert, (rid, "zz-a", 2e9, figures(-7.0, 2e9)))
        failed: list[BaseException] = []

        def write_second() -> None:
            try:
                second.execute(insert, (rid, "zz-b", 2e9 + 1, figures(-3.0, 2e9 + 1)))
                second.commit()
            except BaseException as exc:  # noqa: BLE001 - reported below
                failed.append(exc)

        t = threading.Thread(target=write_second)
        t.start()
        t.join(0.5)
        assert t.is_alive()  # waits for the first transaction
        first.commit()
        t.join(30)
        assert not failed, failed
    finally:
        first.close()
        second.close()
    with psycopg.connect(pg_url) as conn:
        rows = dict(conn.execute("SELECT key, num FROM tracker_sort_values WHERE run_id = %s AND key LIKE "
                                 "'metric.loss.%%'", (rid,)).fetchall())
    assert rows["metric.loss.min"] == -7.0 and rows["metric.loss.last"] == -3.0
    assert rows["metric.loss.max"] >= -3.0


def test_one_statement_writing_thousands_of_runs_is_derived(tmp_path: Path, pg_url: str) -> None:
    """A script of SQL copying runs in bulk: one statement of 5,000 runs' writers and figures (more than the
    server's lock table holds one lock each for) is derived in one pass."""
    path = write_store(tmp_path, seed=6, n=2)
    synced(path, pg_url)
    with psycopg.connect(pg_url) as conn:
        for table in ("tracker_runs", "tracker_writers", "tracker_writer_figures"):
            cols = [r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name "
                                               "= %s AND is_generated = 'NEVER' ORDER BY ordinal_position", (table,))]
            sel = ", ".join("run_id || '-' || g" if c == "run_id" else c for c in cols)
            conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {sel} FROM {table}, "  # noqa: S608
                         "generate_series(1, 2500) AS g")
        conn.commit()
        counts = dict(conn.execute("SELECT key, count(*) FROM tracker_sort_values WHERE key IN ('status', "
                                   "'records', 'ended_at', 'metric.loss.last') GROUP BY key").fetchall())
        status = dict(conn.execute("SELECT txt, count(*) FROM tracker_sort_values WHERE key = 'status' "
                                   "GROUP BY txt").fetchall())
    assert counts["status"] == counts["records"] == counts["ended_at"] == 5002
    from tracker.team.postgres import TeamStore

    team = TeamStore(pg_url)
    try:
        every = team.runs()
        assert len(every) == 5002 and status == {s: sum(1 for i in every if i.status == s) for s in status}
        for sort in ("-metric.loss.last", "duration", "-ended_at"):
            assert [i.id for i in team.runs(sort=sort, limit=5)] == [i.id for i in team.runs(sort=sort)][:5]
        assert len(team.runs(tag="t1")) == sum(1 for i in every if "t1" in i.tags) > 0
    finally:
        team.conn.close()
