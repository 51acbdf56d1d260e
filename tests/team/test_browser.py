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
from ..sysdeps import chrome, require_chromium
from ..ui.support import Server
from ..ui.test_browser import COLORED_PIXELS, console_errors, css


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    drv = chrome(*require_chromium(), size="1440,900", logs=True)
    drv.set_page_load_timeout(30)
    yield drv
    drv.quit()


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
