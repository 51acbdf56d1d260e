"""The sweep page and the runs page's sweep filter: the JSON API, then the pages in a real headless Chromium."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tracker

from ..ui.support import Server
from ..ui.test_browser import COLORED_PIXELS, console_errors, css, wait

pytest.importorskip("starlette")


@pytest.fixture(scope="module")
def sweep_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A store with a finished bayes sweep of 12 trials, a grid sweep, and one run outside any sweep."""
    store = tmp_path_factory.mktemp("sweep-ui") / "store"

    def train() -> None:
        run = tracker.init()
        lr, layers = run.config["lr"], run.config["layers"]
        for step in range(3):
            tracker.log({"loss": (lr - 0.01) ** 2 * 1e4 + layers * 0.1 + 1.0 / (step + 1)})

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("TRACKER_RUN_ID", raising=False)
        sweep_id = tracker.sweep({"name": "lr search", "method": "bayes", "metric": {"name": "loss"},
                                  "parameters": {"lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-1},
                                                 "layers": {"values": [1, 2, 4]}}},
                                 project="sweepy", store=store, seed=1)
        tracker.agent(sweep_id, function=train, count=12, store=store)
        other = tracker.sweep({"method": "grid", "parameters": {"lr": {"values": [0.1]}, "layers": {"value": 1}}},
                              project="sweepy", store=store)
        tracker.agent(other, function=train, store=store)
        with tracker.start_run(project="sweepy", name="lonely", store=store) as r:
            r.log({"loss": 3.0})
    return store, sweep_id, other


@pytest.fixture
def client(sweep_store):
    from starlette.testclient import TestClient

    import tracker.ui

    with TestClient(tracker.ui.create_app(sweep_store[0])) as c:
        yield c


def test_sweeps_api(client, sweep_store) -> None:
    store, sweep_id, other = sweep_store
    listing = client.get("/api/sweeps").json()["sweeps"]
    assert {s["id"] for s in listing} == {sweep_id, other}
    doc = client.get(f"/api/sweeps/{sweep_id}").json()
    assert doc["sweep"]["name"] == "lr search" and doc["sweep"]["trials"] == 12 and doc["sweep"]["state"] == "running"
    assert len(doc["trials"]) == 12 and all(t["state"] == "finished" for t in doc["trials"])
    metrics = [t["metric"] for t in doc["trials"]]
    assert metrics == sorted(metrics)
    best = [p["best"] for p in doc["best_so_far"]]
    assert [p["number"] for p in doc["best_so_far"]] == list(range(12))
    assert all(b >= c for b, c in zip(best, best[1:], strict=False)) and best[-1] == metrics[0]
    assert set(doc["importances"]) == {"lr", "layers"} and abs(sum(doc["importances"].values()) - 1) < 1e-6
    assert client.get("/api/sweeps/nope").status_code == 404
    assert client.get("/api/sweeps/bad%20id").status_code == 400
    # reading wrote nothing in the sweeps' folder
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in (store / "sweeps").rglob("*")}
    client.get(f"/api/sweeps/{sweep_id}")
    client.get("/api/sweeps")
    assert {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in (store / "sweeps").rglob("*")} == before


@pytest.fixture(scope="module")
def server(sweep_store):
    import tracker.ui

    with Server(tracker.ui.create_app(sweep_store[0])) as s:
        yield s


def test_sweep_page_draws_progress_importances_parameters_and_trials(driver, server, sweep_store, tmp_path) -> None:
    store, sweep_id, _ = sweep_store
    driver.get(f"{server.url}/sweeps/{sweep_id}")
    wait(driver, lambda d: css(d, ".sweep-page[data-ready]"), what="the sweep page")
    assert sweep_id in css(driver, ".sweep-title")[0].text and "lr search" in css(driver, ".sweep-title")[0].text
    rows = css(driver, "table.trials tbody tr")
    assert len(rows) == 12
    # best so far: a drawn uPlot chart; importances: coloured bars; the parameters view: its canvases
    assert css(driver, "[data-part=best] .uplot canvas")
    bars = css(driver, "[data-part=importances] canvas")
    assert bars and driver.execute_script(COLORED_PIXELS, bars[0]) > 100
    canvases = wait(driver, lambda d: css(d, ".params-body canvas"), what="the parameters view")
    assert driver.execute_script(COLORED_PIXELS, canvases[0]) > 100
    assert "The 12 runs of this sweep." in css(driver, ".params-body")[0].text
    if os.environ.get("TRACKER_SCREENSHOTS"):
        driver.save_screenshot(str(Path(os.environ["TRACKER_SCREENSHOTS"]) / "sweep-1440.png"))
    # a trial's run link opens the run page
    first = css(driver, "table.trials tbody tr td a")[0]
    run_id = first.get_attribute("href").rsplit("/", 1)[-1]
    first.click()
    wait(driver, lambda d: d.current_url.endswith(f"/runs/{run_id}"), what="the run page")
    assert console_errors(driver) == []


def test_runs_page_filters_by_sweep(driver, server, sweep_store) -> None:
    from selenium.webdriver.support.ui import Select

    store, sweep_id, other = sweep_store
    driver.get(server.url + "/")
    wait(driver, lambda d: len(css(d, "table.runs[data-ready] tbody tr[data-id]")) == 14, what="all runs")
    sel = Select(css(driver, "select[aria-label=sweep]")[0])
    assert sorted(o.text for o in sel.options) == sorted(["any sweep", sweep_id, other])
    sel.select_by_value(f"sweep:{sweep_id}")
    wait(driver, lambda d: len(css(d, "table.runs[data-ready] tbody tr[data-id]")) == 12, what="the sweep's runs")
    assert f"tag=sweep%3A{sweep_id}" in driver.current_url
    link = css(driver, "a.sweep-link")[0]
    assert link.is_displayed()
    link.click()
    wait(driver, lambda d: css(d, ".sweep-page[data-ready]") and d.current_url.endswith(f"/sweeps/{sweep_id}"),
         what="the sweep page")
    driver.get(server.url + "/sweeps")
    rows = wait(driver, lambda d: css(d, "table.sweeps tbody tr"), what="the sweeps list")
    assert {r.get_attribute("data-sweep") for r in rows} == {sweep_id, other}
    assert console_errors(driver) == []


def test_the_sweep_pages_report_names_the_best_trial_as_the_page_does(driver, server, sweep_store, tmp_path) -> None:
    import json
    import re
    import urllib.request
    from urllib.parse import quote

    _, sweep_id, _ = sweep_store
    with urllib.request.urlopen(f"{server.url}/api/sweeps/{sweep_id}") as resp:
        best = json.loads(resp.read())["trials"][0]  # best first, as the page lists them
    driver.get(f"{server.url}/sweeps/{sweep_id}")
    wait(driver, lambda d: css(d, ".sweep-page[data-ready]"), what="the sweep page")
    shown_best = re.search(r"· best (\S+)", css(driver, ".sweep-head p.muted")[0].text).group(1)
    # The page's Report button asks for the runs tagged sweep:ID, with the sweep's metric.
    with urllib.request.urlopen(f"{server.url}/api/report?tag={quote(f'sweep:{sweep_id}')}&metrics=loss") as resp:
        path = tmp_path / "sweep.html"
        path.write_bytes(resp.read())
    driver.get(path.as_uri())
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "1", what="the report drawn")
    line = css(driver, "[data-part=sweep-best]")[0].text
    assert line.startswith(f"best loss {shown_best} (minimize) · trial #{best['number']} · run "), line
    assert best["run_id"][:8] in line
    layers = best["params"]["layers"]
    assert f"layers={layers}" in line and "lr=" in line, line
    assert console_errors(driver) == []
