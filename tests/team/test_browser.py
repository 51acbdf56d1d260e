"""The run page in a real headless Chromium over a folder and over the database it was synced to: the same page.

Skipped only when Debian's chromium or chromium-driver is missing (tests/sysdeps.py decides).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

import tracker.ui

from ..query.pg import PASSWORD
from ..ui.support import Server
from ..ui.test_browser import COLORED_PIXELS, console_errors, css, wait


@pytest.fixture(scope="module")
def servers(pair) -> Iterator[dict[str, Server]]:
    store, url, _ = pair
    with Server(tracker.ui.create_app(store)) as folder, Server(tracker.ui.create_app(url)) as team:
        yield {"folder": folder, "team": team}


def page(driver: Any, url: str) -> dict[str, Any]:
    """What the run page shows once every section and chart is drawn: section texts, charts, drawn pixels."""
    driver.get(url)
    deadline = time.time() + 30
    ready = 0
    while time.time() < deadline:
        loading = css(driver, '[data-state="loading"], .loading')
        charts = css(driver, ".chart[data-metric] canvas")
        sections = css(driver, "[data-section]")
        done = sections and not loading and all(driver.execute_script(COLORED_PIXELS, c) > 50 for c in charts)
        ready = ready + 1 if done else 0
        if ready >= 3:  # three looks in a row: nothing more is coming
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the run page {url} did not finish drawing")
    texts = {s.get_attribute("data-section"): s.text for s in css(driver, "[data-section]")}
    heads = css(driver, "header, .run-header")
    return {"title": driver.title, "header": heads[0].text if heads else "", "sections": texts,
            "charts": [c.get_attribute("data-metric") for c in css(driver, ".chart[data-metric]")],
            "source": driver.page_source}


@pytest.mark.parametrize("label", ["alpha", "beta", "multi", "fft_study", "capture"])
def test_run_page_is_the_same_over_both(driver, servers, pair, label) -> None:
    _, _, ids = pair
    got = {kind: page(driver, f"{s.url}/runs/{ids[label]}") for kind, s in servers.items()}
    assert console_errors(driver) == [] or label == "capture"  # images: no bytes in the database (a bucket's)
    for kind in got:
        assert PASSWORD not in got[kind].pop("source")
    folder, team = got["folder"], got["team"]
    if label == "capture":
        # A folder's file list comes from its manifest blob; over the database the section names the blob.
        folder["sections"].pop("artifacts", None)
        team["sections"].pop("artifacts", None)
    assert team == folder
    assert folder["sections"] and (folder["charts"] or label == "fft_study")


def test_the_team_dashboard_shows_a_sweep_stored_in_the_database(driver, team_sweep) -> None:
    _, url, sweep_id = team_sweep
    with Server(tracker.ui.create_app(url)) as team:
        driver.get(team.url + "/sweeps")
        rows = wait(driver, lambda d: css(d, "table.sweeps tbody tr"), what="the sweeps list")
        assert sweep_id in {r.get_attribute("data-sweep") for r in rows}
        driver.get(f"{team.url}/sweeps/{sweep_id}")
        wait(driver, lambda d: css(d, ".sweep-page[data-ready]"), what="the sweep page")
        assert sweep_id in css(driver, ".sweep-title")[0].text and "lr search" in css(driver, ".sweep-title")[0].text
        assert len(css(driver, "table.trials tbody tr")) == 6
        assert css(driver, "[data-part=best] .uplot canvas")
        canvases = wait(driver, lambda d: css(d, ".params-body canvas"), what="the parameters view")
        assert driver.execute_script(COLORED_PIXELS, canvases[0]) > 100
        assert PASSWORD not in driver.page_source
        # A trial's run link opens its run page, read from the database too.
        first = css(driver, "table.trials tbody tr td a")[0]
        run_id = first.get_attribute("href").rsplit("/", 1)[-1]
        first.click()
        wait(driver, lambda d: d.current_url.endswith(f"/runs/{run_id}") and css(d, ".chart[data-metric] canvas"),
             what="the trial's run page")
        assert console_errors(driver) == []
        driver.get("about:blank")


def test_an_empty_team_database_says_how_runs_get_there_then_shows_them(driver, pg_url, tmp_path) -> None:
    import warnings

    from tracker.team.postgres import sync

    with Server(tracker.ui.create_app(pg_url)) as team:
        driver.get(team.url + "/")
        empty = wait(driver, lambda d: css(d, ".empty"), what="the empty-database message")[0]
        assert "This team database" in empty.text and "tracker sync" in empty.text and "[team]" in empty.text
        assert PASSWORD not in driver.page_source
        store = tmp_path / "store"
        with tracker.start_run(project="lab", name="first-run", store=store, system_metrics=False) as run:
            run.log({"loss": 1.0})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sync(tracker.open_store(store), pg_url)
        wait(driver, lambda d: [e.text for e in css(d, "table.runs[data-ready] td.name a")] == ["first-run"],
             timeout=20, what="the synced run listed without a reload")
        assert console_errors(driver) == []
        driver.get("about:blank")  # the page polls: leave it before its server stops
