"""Alerts on the dashboard: the run page's section and the runs list's badge, in a real headless Chromium;
and `tracker ui --watch`, which checks the rules while it serves."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tracker

from ..sysdeps import chrome, require_chromium
from ..ui.support import XSS, Server, free_port
from .test_alerts import Receiver, webhook_toml


@pytest.fixture
def alert_store(tmp_store: Path) -> dict[str, str]:
    with tracker.start_run(project="gpt", name="noisy") as noisy:
        noisy.log({"loss": 1.0})
        noisy.alert(XSS, "<b>not bold</b>", level="ERROR")
        noisy.alert("plateau", "loss flat for 1000 steps", level="WARN", wait_duration=60)
        noisy.alert("plateau", "again", level="WARN", wait_duration=60)
    with tracker.start_run(project="gpt", name="quiet") as quiet:
        quiet.log({"loss": 1.0})
    return {"noisy": noisy.id, "quiet": quiet.id}


def test_api_gives_counts_and_the_run_part(tmp_store: Path, alert_store: dict[str, str]) -> None:
    from starlette.testclient import TestClient

    import tracker.ui

    with TestClient(tracker.ui.create_app(tmp_store)) as c:
        rows = {r["name"]: r for r in c.get("/api/runs").json()["runs"]}
        assert rows["noisy"]["alerts"] == 3 and rows["quiet"]["alerts"] == 0
        part = c.get(f"/api/runs/{alert_store['noisy']}?parts=alerts").json()["alerts"]
        assert [(a["title"], a["level"], a["suppressed"]) for a in part] == [
            (XSS, "ERROR", False), ("plateau", "WARN", False), ("plateau", "WARN", True)]
        assert c.get(f"/api/runs/{alert_store['quiet']}?parts=alerts").json()["alerts"] == []


def test_badge_and_section_in_chromium(tmp_store: Path, alert_store: dict[str, str]) -> None:
    from selenium.webdriver.common.by import By

    import tracker.ui

    driver = chrome(*require_chromium(), size="1440,900", logs=True)
    try:
        with Server(tracker.ui.create_app(tmp_store)) as server:
            driver.get(server.url + "/")
            end = time.time() + 15
            badges = []
            while time.time() < end and not badges:
                badges = driver.find_elements(By.CSS_SELECTOR, "table.runs[data-ready] .alert-badge")
                time.sleep(0.1)
            assert [b.get_attribute("data-alerts") for b in badges] == ["3"]
            row = badges[0].find_element(By.XPATH, "./ancestor::tr")
            assert row.get_attribute("data-id") == alert_store["noisy"]
            driver.get(f"{server.url}/runs/{alert_store['noisy']}")
            end = time.time() + 15
            rows = []
            while time.time() < end and len(rows) < 3:
                rows = driver.find_elements(By.CSS_SELECTOR, "table.alerts tbody tr")
                time.sleep(0.1)
            cells = [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows]
            assert [c[1] for c in cells] == [XSS, "plateau", "plateau"]      # shown as text, never as HTML
            assert cells[0][2] == "<b>not bold</b>" and [c[3] for c in cells] == ["sent", "sent", "suppressed"]
            assert [c[0] for c in cells] == ["ERROR", "WARN", "WARN"]
            assert not driver.find_elements(By.CSS_SELECTOR, "table.alerts img, table.alerts b")
            driver.get(f"{server.url}/runs/{alert_store['quiet']}")
            time.sleep(1.0)
            assert not driver.find_elements(By.CSS_SELECTOR, "table.alerts")
            severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            assert severe == []
    finally:
        driver.quit()


def test_ui_watch_checks_the_rules_while_serving(tmp_store: Path, tmp_path: Path) -> None:
    receiver = Receiver()
    try:
        (Path.cwd() / "tracker.toml").write_text(webhook_toml(
            receiver.url, '[[alerts.rules]]\nwhen = "run crashed"\n', extra="interval = 0.2"))
        port = free_port()
        ui = subprocess.Popen([sys.executable, "-m", "tracker", "ui", "--watch", "--no-open", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert "serving" in (ui.stdout.readline() if ui.stdout else "")
            script = tmp_path / "die.py"
            script.write_text("import os, signal, tracker\nrun = tracker.start_run(name='doomed')\n"
                              "run.log({'loss': 1.0})\nos.kill(os.getpid(), signal.SIGKILL)\n")
            subprocess.run([sys.executable, str(script)], timeout=60, check=False)
            bodies = receiver.wait(1, timeout=20)
        finally:
            ui.send_signal(signal.SIGINT)
            ui.communicate(timeout=30)
        assert [b["alert"]["condition"] for b in bodies] == ["run crashed"]
        assert bodies[0]["alert"]["run_name"] == "doomed"
        doomed = next(i for i in tracker.open_store().runs() if i.name == "doomed")
        assert doomed.status == "crashed"
        res = subprocess.run([sys.executable, "-m", "tracker", "alerts", doomed.id, "--format", "json"],
                             capture_output=True, text=True, check=True)
        assert [a["condition"] for a in json.loads(res.stdout)["alerts"]] == ["run crashed"]
    finally:
        receiver.close()
