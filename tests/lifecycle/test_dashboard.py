"""The dashboard shows a run's latest name, tags and notes, and the summary values set with run.summary."""

from __future__ import annotations

import time
from pathlib import Path

import tracker

from ..sysdeps import chrome, require_chromium


def _edited_run(store: Path) -> str:
    with tracker.init(project="p", name="before", config={"lr": 0.1}, dir=store) as run:
        run.log({"loss": 0.5})
        run.summary["best_acc"] = 0.93
    s = tracker.open_store(store)
    s.rename(run.id, "after")
    s.tag(run.id, add=["kept"])
    s.note(run.id, "looked fine")
    return run.id


def test_the_api_serves_edits_and_summary_values(store: Path) -> None:
    from starlette.testclient import TestClient

    import tracker.ui

    rid = _edited_run(store)
    client = TestClient(tracker.ui.create_app(store))
    info = client.get(f"/api/runs/{rid}").json()["info"]
    assert (info["name"], info["tags"], info["notes"]) == ("after", ["kept"], "looked fine")
    assert info["summary"] == {"best_acc": 0.93}
    runs = client.get("/api/runs", params={"q": "looked fine"}).json()["runs"]
    assert [r["id"] for r in runs] == [rid]


def test_the_run_page_shows_notes_tags_and_summary_values(store: Path) -> None:
    from selenium.webdriver.common.by import By

    import tracker.ui

    from ..ui.support import Server

    browser, chromedriver = require_chromium()
    rid = _edited_run(store)
    driver = chrome(browser, chromedriver)
    try:
        with Server(tracker.ui.create_app(store)) as server:
            driver.get(server.url + f"/runs/{rid}")
            deadline = time.time() + 30
            wanted = '[data-section="summary-values"]'
            while time.time() < deadline and not driver.find_elements(By.CSS_SELECTOR, wanted):
                time.sleep(0.1)
            sections = driver.find_elements(By.CSS_SELECTOR, wanted)
            assert sections, (driver.find_element(By.TAG_NAME, "body").text, driver.get_log("browser"))
            section = sections[0]
            assert "best_acc" in section.text and "0.93" in section.text
            head = driver.find_element(By.CSS_SELECTOR, ".run-head").text
            assert "after" in head and "kept" in head and "looked fine" in head
    finally:
        driver.quit()
