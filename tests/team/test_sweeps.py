"""Sweeps whose study is in the team database: `tracker sweep list|show` and the dashboard read them there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from tracker.cli import make_cli

from ..query.pg import PASSWORD

pytest.importorskip("optuna")


def tracker_cmd(*args: str, cwd: Path) -> Any:
    """The real ``tracker`` group, run in-process in folder ``cwd`` (its tracker.toml applies)."""
    with pytest.MonkeyPatch.context() as mp:
        for k in ("TRACKER_STORE", "TRACKER_CONFIG", "TRACKER_TEAM_URL"):
            mp.delenv(k, raising=False)
        mp.chdir(cwd)
        res = CliRunner().invoke(make_cli(), list(args), catch_exceptions=False)
    res.returncode = res.exit_code
    return res


def test_sweep_list_and_show_read_the_database(team_sweep, tmp_path: Path) -> None:
    store, url, sweep_id = team_sweep
    res = tracker_cmd("--store", url, "sweep", "list", "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    listed = {s["id"]: s for s in json.loads(res.stdout)["sweeps"]}[sweep_id]
    assert (listed["id"], listed["name"], listed["project"], listed["method"], listed["metric"]) == \
        (sweep_id, "lr search", "sweepy", "bayes", "loss")
    assert listed["storage"].startswith("postgresql://tracker:***@")
    res = tracker_cmd("--store", url, "sweep", "show", sweep_id, "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["sweep"]["trials"] == 6 and len(doc["trials"]) == 6
    assert {t["run_id"] for t in doc["trials"]} == {p.name for p in (store / "runs").iterdir()}
    res = tracker_cmd("--store", url, "sweep", "show", sweep_id, cwd=tmp_path)
    assert res.returncode == 0 and "6 trials" in res.stdout
    res = tracker_cmd("--store", url, "sweep", "show", "nosuch", cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "no sweep nosuch" in res.stderr
    assert PASSWORD not in res.stdout + res.stderr


def test_with_team_url_a_machine_without_the_sweep_json_lists_and_shows_it(team_sweep, tmp_path: Path) -> None:
    _, url, sweep_id = team_sweep
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "tracker.toml").write_text(f'[store]\npath = "store"\n\n[team]\nurl = "{url}"\n')
    res = tracker_cmd("sweep", "list", "--format", "json", cwd=folder)
    assert res.returncode == 0, res.stderr
    assert sweep_id in [s["id"] for s in json.loads(res.stdout)["sweeps"]]
    res = tracker_cmd("sweep", "show", sweep_id, "--format", "json", cwd=folder)
    assert res.returncode == 0 and json.loads(res.stdout)["sweep"]["trials"] == 6, res.stderr
    # And a sweep created there goes to the team database by default: listed from any folder.
    (folder / "grid.yaml").write_text("method: grid\nparameters:\n  a: {values: [1, 2]}\n")
    res = tracker_cmd("sweep", "create", "grid.yaml", cwd=folder)
    assert res.returncode == 0 and "storage postgresql://tracker:***@" in res.stderr, res.stderr
    new = res.stdout.strip()
    res = tracker_cmd("--store", url, "sweep", "list", "--format", "json", cwd=tmp_path)
    assert {sweep_id, new} <= {s["id"] for s in json.loads(res.stdout)["sweeps"]}
    assert not (folder / "store" / "sweeps" / new / "journal.log").exists()
    assert PASSWORD not in res.stdout + res.stderr


def test_the_team_dashboard_serves_the_database_sweeps(team_sweep, pg_url: str) -> None:
    from starlette.testclient import TestClient

    import tracker.ui

    _, url, sweep_id = team_sweep
    with TestClient(tracker.ui.create_app(url)) as client:
        listing = {s["id"]: s for s in client.get("/api/sweeps").json()["sweeps"]}
        assert listing[sweep_id]["trials"] == 6 and listing[sweep_id]["name"] == "lr search"
        doc = client.get(f"/api/sweeps/{sweep_id}").json()
        assert doc["sweep"]["name"] == "lr search" and len(doc["trials"]) == 6 and len(doc["best_so_far"]) == 6
        assert client.get("/api/sweeps/nosuch").status_code == 404
        assert client.get("/api/sweeps/bad%20id").status_code == 400
        assert PASSWORD not in client.get("/api/sweeps").text
    # A database no sweep ever used: no sweeps, and no table of Optuna's made in it by looking.
    with TestClient(tracker.ui.create_app(pg_url)) as client:
        assert client.get("/api/sweeps").json() == {"sweeps": []}
        assert client.get("/api/sweeps/abc").status_code == 404
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('studies')").fetchone()[0] is None


def test_the_sweep_pages_answer_503_within_the_timeout_over_a_link_that_hangs(
        team_sweep, pg_server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # noqa: F811
    import time

    from starlette.testclient import TestClient

    import tracker.ui

    from .faults import Proxy

    _, url, sweep_id = team_sweep
    (tmp_path / "tracker.toml").write_text("[team]\ntimeout = 2\n")
    monkeypatch.setenv("TRACKER_CONFIG", str(tmp_path / "tracker.toml"))
    monkeypatch.setattr(tracker.host.host, "_host", None, raising=False)
    proxy = Proxy(pg_server.port)
    try:
        with TestClient(tracker.ui.create_app(proxy.url(pg_server, url.rsplit("/", 1)[1]))) as client:
            assert client.get(f"/api/sweeps/{sweep_id}").status_code == 200
            proxy.freeze()
            for path in (f"/api/sweeps/{sweep_id}", "/api/sweeps"):  # a pooled connection, then a new one
                t0 = time.monotonic()
                res = client.get(path)
                assert res.status_code == 503 and time.monotonic() - t0 < 2 + 1.5, (path, res.status_code, res.text)
                assert "cannot be reached" in res.json()["error"] and PASSWORD not in res.text
            proxy.thaw()
            assert client.get(f"/api/sweeps/{sweep_id}").status_code == 200
    finally:
        proxy.close()
