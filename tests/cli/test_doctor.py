"""`tracker doctor`: what is installed and working, from the real command."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker

from .support import run_tracker


def _doctor(*args: str, env: dict[str, str] | None = None) -> dict:
    proc = run_tracker("doctor", "--format", "json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_doctor_reports_versions_fast_paths_extras_plugins_and_the_store(tmp_store: Path) -> None:
    with tracker.start_run(project="p") as run:
        run.log({"loss": 1.0})
    facts = _doctor()
    assert facts["tracker"] == tracker.__version__
    assert facts["python"].count(".") == 2 and facts["platform"]
    paths = {f["module"]: f for f in facts["fast_paths"]}
    from tracker.write.fast import fastline

    assert paths["tracker.write._fastline"]["in_use"] is (fastline is not None)
    extras = {e["extra"]: e for e in facts["extras"]}
    assert extras["ui"]["installed"] is True and set(extras["ui"]["modules"]) == {"starlette", "uvicorn"}
    assert all(v != "missing" for v in extras["ui"]["modules"].values())
    plugins = {p["name"]: p for p in facts["plugins"]}
    assert plugins["metrics"]["status"] == "ok" and plugins["metrics"]["distribution"] == "tracker-core"
    store = facts["store"]
    assert store["location"] == str(tmp_store) and store["exists"] and store["runs"] == 1 and store["bytes"] > 0
    assert facts["team"]["url"] is None and facts["team"]["answers"] is None
    assert set(facts["dashboard_tests"]) == {"chromium", "chromedriver"}

    text = run_tracker("doctor").stdout
    for heading in ("fast paths", "extras", "plugins", "store", "team", "dashboard tests"):
        assert f"\n{heading}\n" in text
    assert f"tracker     {tracker.__version__}" in text and f"{tmp_store}: 1 runs" in text


def test_doctor_names_the_python_fallback_and_why(tmp_store: Path) -> None:
    facts = _doctor(env={"TRACKER_PURE_PYTHON": "1"})
    for path in facts["fast_paths"]:
        assert path["in_use"] is False and path["why"] == "TRACKER_PURE_PYTHON is set"
    assert facts["store"] == {"kind": "folder", "location": str(tmp_store), "exists": False}


def test_an_unreachable_team_database_is_a_line_with_its_password_masked(tmp_store: Path) -> None:
    proc = run_tracker("doctor", env={"TRACKER_TEAM_URL": "postgresql://ana:s3cret@127.0.0.1:9/lab"})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr + proc.stdout
    assert "s3cret" not in proc.stdout + proc.stderr
    assert "postgresql://ana:***@127.0.0.1:9/lab (TRACKER_TEAM_URL): does not answer" in proc.stdout
    for url, kind in (("postgresql://ana:s3cret@127.0.0.1:9/lab", "database"),
                      ("https://ana:s3cret@127.0.0.1:9", "server")):
        proc = run_tracker("--store", url, "doctor", "--format", "json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["store"] == {"kind": kind, "location": url.replace("s3cret", "***")}


class _Whoami(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        _Whoami.seen.append((self.path, self.headers.get("Authorization")))
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "unknown key"}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Whoami)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_team_server_that_answers_is_reported_so(tmp_store: Path, http_server: str) -> None:
    _Whoami.seen.clear()
    url = http_server.replace("http://", "http://ana:pw@")
    facts = _doctor(env={"TRACKER_URL": url, "TRACKER_API_KEY": "trk_abc_def"})
    team = facts["team"]
    assert team["url"] == http_server.replace("http://", "http://ana:***@") and team["source"] == "TRACKER_URL"
    assert team["answers"] is True and "HTTP 401" in team["detail"]
    assert _Whoami.seen == [("/api/v1/whoami", "Bearer trk_abc_def")]
