"""Edits after the fact reach the team database: on the next ``tracker sync`` and through the follower.

Tags, names, notes, config and summary changed after a run was synced are
edit events in the run's edit segments; the database's run info must then be
the folder's (the same answers through the real commands and the
dashboard's API), a second sync must add nothing, and a sync with nothing new
must read no edit segment again.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli
from tracker.core.urls import redact_url

from ..query.pg import PASSWORD
from .streaming import follower_pid, project, run_tracker, safe, stop_follower, train, wait
from .test_same_answers import scrub

#: The fields of RunInfo that a sync of the folder must give the database (``writers`` counts an edit segment in
#: neither).
FIELDS = [f.name for f in attrs.fields(tracker.RunInfo)]


@pytest.fixture(scope="module")
def host() -> Iterator[tracker.Host]:
    h = tracker.Host(tracker.get_plugin_manager(), tracker.Config())
    old = tracker.set_host(h)
    yield h
    tracker.set_host(old)


def quiet_sync(store: Path, url: str, **kw: Any) -> Any:
    from tracker.team.postgres import sync

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sync(tracker.open_store(store), url, **kw)


def infos(where: str) -> dict[str, dict[str, Any]]:
    """Every run's info as a dict, by id."""
    return {i.id: attrs.asdict(i) for i in tracker.open_store(where).runs()}


def db_rows(url: str, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def cli(host: tracker.Host, where: str, *args: str) -> Any:
    res = CliRunner().invoke(make_cli(host), ["--store", where, *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert PASSWORD not in res.output
    return res


def assert_same_answers(host: tracker.Host, store: Path, url: str, run_ids: list[str]) -> None:
    """The folder and the database give the same run infos, ``tracker runs`` / ``show`` and ``/api/runs``."""
    from starlette.testclient import TestClient

    import tracker.ui

    folder, team = infos(str(store)), infos(url)
    assert set(team) == set(folder)
    for rid in folder:
        assert {k: team[rid][k] for k in FIELDS} == {k: folder[rid][k] for k in FIELDS}, rid
    names = {"folder": (str(store),), "team": (redact_url(url), url)}
    where = {"folder": str(store), "team": url}
    for args in [("runs", "--all", "--format", "json"), ("runs", "--all"),
                 *[("show", rid, "--format", "json") for rid in run_ids]]:
        out = {k: scrub(cli(host, where[k], *args).stdout, names[k]) for k in where}
        assert out["team"] == out["folder"], args
    with TestClient(tracker.ui.create_app(str(store))) as f, TestClient(tracker.ui.create_app(url)) as t:
        for path in ["/api/runs", *[f"/api/runs/{rid}?parts=info" for rid in run_ids]]:
            got = {k: (c.get(path).status_code, scrub(c.get(path).json(), names[k]))
                   for k, c in (("folder", f), ("team", t))}
            for _, doc in got.values():
                doc.pop("now", None)
            assert got["team"] == got["folder"], path
            assert got["folder"][0] == 200


def make_store(store: Path) -> dict[str, Any]:
    """Three finished runs (one failed) and the ``Run`` objects of two, kept to set summary and config later."""
    runs = {}
    with tracker.start_run(project="vision", name="alpha", store=store, run_id="alpha", tags=["baseline", "gpu"],
                           config={"lr": 0.01, "seed": 1}, group="sweep-a", job_type="train") as run:
        for i in range(20):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
    runs["alpha"] = run
    try:
        with tracker.start_run(project="vision", name="beta", store=store, run_id="beta", tags=["gpu"],
                               config={"lr": 0.1}) as run:
            run.log({"loss": 2.0}, step=0)
            raise ValueError("diverged")
    except ValueError:
        pass
    runs["beta"] = run
    with tracker.start_run(project="nlp", name="gamma", store=store, run_id="gamma") as run:
        run.log({"loss": 0.3}, step=0)
    runs["gamma"] = run
    return runs


def test_every_edit_reaches_the_database_on_the_next_sync(host, tmp_path: Path, pg_url: str) -> None:
    store = tmp_path / "store"
    runs = make_store(store)
    first = quiet_sync(store, pg_url)
    assert first.events_new > 0
    folder = str(store)
    # Edits after the sync, each the way a user makes it: the real commands, the store's API, and a run's
    # summary and config set on its object after it finished.
    cli(host, folder, "tag", "alpha", "beta", "--add", "reviewed", "--remove", "gpu")
    cli(host, folder, "rename", "alpha", "alpha (lr 0.01, final)")
    cli(host, folder, "note", "beta", "diverged at step 0: lr too high")
    cli(host, folder, "note", "beta", "--append", "rerun as gamma")
    st = tracker.open_store(store)
    st.update_config("gamma", {"lr": 0.003, "schedule": {"kind": "cosine", "warmup": 100}})
    st.update_summary("gamma", {"best_loss": 0.25, "diverged": False, "nan": float("nan")})
    runs["alpha"].summary["best_acc"] = 0.93
    runs["alpha"].config.update({"batch_size": 64})
    # A run without a group gets one from a `group:<g>` tag (as a run of 0.4 kept it): the group follows.
    st.tag("gamma", add=["group:ablation"])
    before = infos(pg_url)
    assert before["alpha"]["name"] == "alpha" and "reviewed" not in before["alpha"]["tags"]  # not synced yet

    second = quiet_sync(store, pg_url)
    assert (second.events_new, second.runs) == (10, 3)  # the ten edits, each once, in three runs
    team = infos(pg_url)
    assert team["alpha"]["name"] == "alpha (lr 0.01, final)"
    assert team["alpha"]["tags"] == ["baseline", "reviewed"] and team["beta"]["tags"] == ["reviewed"]
    assert team["beta"]["notes"] == "diverged at step 0: lr too high\nrerun as gamma"
    assert team["alpha"]["summary"] == {"best_acc": 0.93} and team["alpha"]["config"]["batch_size"] == 64
    assert team["gamma"]["config"] == {"lr": 0.003, "schedule": {"kind": "cosine", "warmup": 100}}
    assert team["gamma"]["summary"]["best_loss"] == 0.25 and team["gamma"]["summary"]["nan"] != \
        team["gamma"]["summary"]["nan"]  # NaN comes back as NaN
    assert (team["gamma"]["group"], team["alpha"]["group"], team["alpha"]["job_type"]) == \
        ("ablation", "sweep-a", "train")
    assert (team["beta"]["status"], team["alpha"]["status"]) == ("failed", "finished")
    # The database's SQL columns follow the info: `tracker query` and SQL users filter by group.
    assert db_rows(pg_url, "SELECT run_id, name, run_group FROM tracker_runs ORDER BY run_id") == [
        ("alpha", "alpha (lr 0.01, final)", "sweep-a"), ("beta", "beta", None), ("gamma", "gamma", "ablation")]
    assert_same_answers(host, store, pg_url, ["alpha", "beta", "gamma"])

    # Idempotent: another sync (a fresh `tracker sync`, then the real command) adds nothing and doubles nothing.
    edits = db_rows(pg_url, "SELECT run_id, writer, seq, data::text FROM tracker_edits ORDER BY 1, 2, 3")
    assert len(edits) == 10
    synced_at = db_rows(pg_url, "SELECT run_id, synced_at FROM tracker_runs ORDER BY run_id")
    third = quiet_sync(store, pg_url)
    assert (third.events_read, third.events_new, third.segments, third.runs) == (0, 0, 0, 0)
    res = run_tracker(tmp_path, "--store", folder, "sync", pg_url)
    assert res.returncode == 0 and PASSWORD not in res.stdout + res.stderr, res.stderr
    assert db_rows(pg_url, "SELECT run_id, writer, seq, data::text FROM tracker_edits ORDER BY 1, 2, 3") == edits
    assert db_rows(pg_url, "SELECT run_id, synced_at FROM tracker_runs ORDER BY run_id") == synced_at  # untouched
    assert infos(pg_url) == team
    # Edit segments are progress rows of tracker_writers, never writers: the status and writer counts hold.
    assert db_rows(pg_url, "SELECT count(*) FROM tracker_writers WHERE NOT is_writer AND status = 'edits'") == [(3,)]
    assert db_rows(pg_url, "SELECT count(*) FROM tracker_events WHERE kind = 'edit'") == [(0,)]
    # The database itself takes no edit: one line saying where edits are made, nothing changed.
    for args in (("tag", "alpha", "--add", "x"), ("rename", "alpha", "x"), ("note", "alpha", "x")):
        res = CliRunner().invoke(make_cli(host), ["--store", pg_url, *args])
        assert res.exit_code == 1 and res.stdout == "" and res.stderr.count("\n") == 1, res.output
        assert "team database" in res.stderr and "folder store" in res.stderr and PASSWORD not in res.stderr
    assert infos(pg_url) == team


def test_a_sync_with_nothing_new_reads_no_edit_segment(tmp_path: Path, pg_url: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A store whose runs were synced with their edits: a new `tracker sync` only looks at sizes; after one more
    edit, it reads that one segment from the offset it had reached, and only that run's info again."""
    import tracker.read.edits
    import tracker.team.sync as pg  # the syncer's module: where it reads segments

    store = tmp_path / "store"
    st = None
    for i in range(6):
        with tracker.start_run(project="p", name=f"r{i}", store=store, run_id=f"r{i}") as run:
            run.log({"loss": 1.0}, step=0)
        st = st or tracker.open_store(store)
        for k in range(30):  # a summary set once an epoch: a long edit segment
            st.update_summary(f"r{i}", {"epoch": k})
    quiet_sync(store, pg_url)
    synced: list[tuple[str, int]] = []  # what the syncer reads of segments (edit segments included)
    applied: list[str] = []  # edit segments read in full to make a run's info
    infos_read: list[str] = []

    def counting(real: Any, into: list, full: bool) -> Any:
        def chunks(path: Any, offset: int = 0, *a: Any, **kw: Any) -> Any:
            into.append(str(path) if full else (str(path), offset))
            return real(path, offset, *a, **kw)
        return chunks

    monkeypatch.setattr(pg, "LineChunks", counting(pg.LineChunks, synced, False))
    monkeypatch.setattr(tracker.read.edits, "LineChunks", counting(tracker.read.edits.LineChunks, applied, True))
    real_info = pg.Syncer._sync_info
    monkeypatch.setattr(pg.Syncer, "_sync_info", lambda self, rid: (infos_read.append(rid), real_info(self, rid)))
    again = quiet_sync(store, pg_url)
    assert (again.events_read, again.segments) == (0, 0)
    assert synced == [] and applied == [] and infos_read == []
    # One more edit of one run: its segment is read from where the database was, and that run's info made again.
    (seg,) = (store / "runs" / "r3" / "edits").glob("edits-*.jsonl")
    size = seg.stat().st_size
    st.tag("r3", add=["best"])
    applied.clear()
    once = quiet_sync(store, pg_url)
    assert once.events_new == 1 and infos_read == ["r3"]
    assert synced == [(str(seg), size)] and applied == [str(seg)]
    assert "best" in tracker.open_store(pg_url).run("r3").info.tags


def test_an_alias_edit_after_a_sync_reaches_the_registry_once(tmp_path: Path, pg_url: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Alias edits travel with the other edits: in the registry after the next sync, once after two."""
    from ..artifacts.conftest import make_chain

    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    make_chain(store, tmp_path / "src")
    quiet_sync(store, pg_url)
    before = db_rows(pg_url, "SELECT count(*) FROM tracker_alias_edits")[0][0]
    for where in (str(store), str(store)):  # the second is a no-op edit: the alias is there already
        res = CliRunner().invoke(make_cli(), ["--store", where, "artifact", "alias", "mnist-cnn:v0", "kept"])
        assert res.exit_code == 0, res.output
    quiet_sync(store, pg_url)
    quiet_sync(store, pg_url)
    assert db_rows(pg_url, "SELECT count(*) FROM tracker_alias_edits")[0][0] == before + 1
    show = [CliRunner().invoke(make_cli(), ["--store", w, "artifact", "show", "mnist-cnn", "--format", "json"])
            for w in (str(store), pg_url)]
    assert show[0].exit_code == 0 and orjson.loads(show[1].stdout) == orjson.loads(show[0].stdout)
    assert "kept" in tracker.open_store(pg_url).artifact("mnist-cnn:v0").aliases


# --- the follower -------------------------------------------------------------------------------------

@pytest.fixture
def proj(tmp_path: Path, pg_url: str):
    folder, store = project(tmp_path, pg_url)
    yield folder, store, pg_url
    stop_follower(store)


def team_info(url: str, rid: str) -> Any:
    """The run's info in the database, or ``None`` while it is not there (yet)."""
    try:
        return safe(lambda: tracker.open_store(url).run(rid).info)
    except tracker.RunNotFound:
        return None


def test_the_follower_takes_an_edit_to_a_finished_run(proj) -> None:
    folder, store, url = proj
    child = train(folder, """
        import tracker
        with tracker.start_run("team", "done", run_id="done") as run:
            for i in range(10):
                run.log({"loss": 1.0 / (i + 1)}, step=i)
    """, env={"TRACKER_FOLLOWER_LINGER": "60"})
    assert child.wait(60) == 0, child.stderr.read()
    wait(lambda: getattr(team_info(url, "done"), "status", None) == "finished", timeout=30)
    pid = follower_pid(store)
    assert pid is not None  # still lingering: the edit goes to the running follower
    # The real command, in the project folder (its tracker.toml names the store and the database).
    res = run_tracker(folder, "tag", "done", "--add", "reviewed")
    assert res.returncode == 0, res.stderr
    wait(lambda: "reviewed" in getattr(team_info(url, "done"), "tags", []), timeout=10)
    res = run_tracker(folder, "rename", "done", "done, reviewed")
    assert res.returncode == 0, res.stderr
    wait(lambda: getattr(team_info(url, "done"), "name", None) == "done, reviewed", timeout=10)
    assert follower_pid(store) == pid
    # No follower running: the edit starts one, which copies it (and then ends by itself).
    stop_follower(store)
    assert follower_pid(store) is None
    res = run_tracker(folder, "note", "done", "kept for the paper", env={"TRACKER_FOLLOWER_LINGER": "2"})
    assert res.returncode == 0, res.stderr
    wait(lambda: getattr(team_info(url, "done"), "notes", None) == "kept for the paper", timeout=20)
    local = tracker.open_store(store).run("done").info
    assert attrs.asdict(team_info(url, "done")) == attrs.asdict(local)
    assert db_rows(url, "SELECT count(*) FROM tracker_edits") == [(3,)]


def test_the_follower_takes_edits_of_a_live_run(proj) -> None:
    folder, store, url = proj
    more, edited, go_on = folder / "more", folder / "edited", folder / "go-on"
    child = train(folder, f"""
        import os, time, tracker

        def wait_for(path):
            while not os.path.exists(path):  # live, logging nothing
                time.sleep(0.05)

        with tracker.start_run("team", "live", run_id="live", config={{"lr": 0.1}}) as run:
            run.log({{"loss": 1.0}}, step=0)
            run.config.update({{"lr": 0.05, "warmup": 10}})
            run.summary["best_loss"] = 0.5
            wait_for({str(more)!r})
            run.summary["best_loss"] = 0.25
            open({str(edited)!r}, "w").close()
            wait_for({str(go_on)!r})
    """)
    statuses: list[str] = []

    def live() -> Any:
        """The run's info now, its status kept: from the moment it is listed, it reads running."""
        info = team_info(url, "live")
        if info is not None:
            statuses.append(info.status)
        return info

    try:
        wait(lambda: getattr(live(), "summary", None) == {"best_loss": 0.5}, timeout=30)
        assert set(statuses) == {"running"}, statuses  # never crashed while its writer rows were on their way
        assert team_info(url, "live").config == {"lr": 0.05, "warmup": 10}
        # While it runs and logs nothing (its segment does not grow), an edit of its own and one from outside.
        more.touch()
        wait(edited.exists, timeout=10)
        res = run_tracker(folder, "tag", "live", "--add", "watched")
        assert res.returncode == 0, res.stderr
        wait(lambda: getattr(live(), "summary", None) == {"best_loss": 0.25}
             and "watched" in team_info(url, "live").tags, timeout=10)
        assert set(statuses) == {"running"}, statuses
    finally:
        go_on.touch()
        more.touch()
    assert child.wait(60) == 0, child.stderr.read()
    wait(lambda: getattr(team_info(url, "live"), "status", None) == "finished", timeout=30)
    local = attrs.asdict(tracker.open_store(store).run("live").info)
    assert attrs.asdict(team_info(url, "live")) == local
    keys = db_rows(url, "SELECT run_id, writer, seq FROM tracker_edits")
    assert len(keys) == len(set(keys)) == 4  # config, summary twice (the run's own segment), tag (the command's)
    doc = orjson.loads(db_rows(url, "SELECT info::text FROM tracker_runs")[0][0])
    assert doc["tags"] == ["watched"] and doc["summary"] == {"best_loss": 0.25}
