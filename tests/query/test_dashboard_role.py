"""The read-only role of docs/team.md, run as written there: the dashboard reads with it and cannot write."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest

import tracker
from tracker.team.postgres import open_team_store

from .support import run_tracker
from .test_team import quiet_sync

DOCS = Path(__file__).resolve().parents[2] / "docs" / "team.md"
ROLE_PASSWORD = "Dash-board-pw-3"


def role_sql(database: str) -> str:
    """The SQL block after ``<!-- dashboard-role-sql -->`` in docs/team.md, for ``database``."""
    text = DOCS.read_text()
    block = re.search(r"<!-- dashboard-role-sql -->\n```sql\n(.*?)```", text, re.S)
    assert block, "docs/team.md lost its dashboard-role-sql block"
    sql = block.group(1)
    assert "'choose-a-password'" in sql and " experiments " in sql
    return sql.replace("'choose-a-password'", f"'{ROLE_PASSWORD}'").replace(" experiments ", f" {database} ")


def test_the_documented_role_reads_and_cannot_write(pg_server, pg_url: str, rich_store: Path, tmp_path) -> None:
    database = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS tracker_dashboard")  # a role is the server's, not the database's
        conn.execute(role_sql(database))  # before the first sync: the default privileges cover its tables
    quiet_sync(rich_store, pg_url)
    ro_url = pg_url.replace(f"{pg_url.split('//', 1)[1].split('@', 1)[0]}@", f"tracker_dashboard:{ROLE_PASSWORD}@")
    assert ro_url.startswith("postgresql://tracker_dashboard:")

    want = sorted(r.id for r in tracker.open_store(rich_store).runs())
    team = open_team_store(ro_url)
    assert sorted(r.id for r in team.runs()) == want
    view = team.run(want[0])
    assert view.records() is not None and view.summarize() is not None
    from starlette.testclient import TestClient

    from tracker.ui import create_app

    with TestClient(create_app(team, auth="token")) as client:  # the dashboard, with that role only
        token = client.app.state.auth.token
        listing = client.get("/api/runs", headers={"authorization": f"Bearer {token}"})
        assert listing.status_code == 200, listing.text
        assert sorted(r["id"] for r in listing.json()["runs"]) == want
        assert ROLE_PASSWORD not in listing.text
    done = run_tracker("--store", ro_url, "runs", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert sorted(r["id"] for r in json.loads(done.stdout)) == want

    with psycopg.connect(ro_url, autocommit=True) as conn:
        for sql in ("DELETE FROM tracker_events", "UPDATE tracker_runs SET name = 'x'",
                    "CREATE TABLE mine (x int)", "DROP TABLE tracker_runs"):
            with pytest.raises(psycopg.Error):
                conn.execute(sql)
    refused = run_tracker("sync", ro_url, env={"TRACKER_STORE": str(rich_store)})
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "read-only transaction" in refused.stderr
    assert "postgresql://tracker_dashboard:***@" in refused.stderr
    assert ROLE_PASSWORD not in refused.stdout + refused.stderr
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM tracker_runs").fetchone()[0] == len(want)
