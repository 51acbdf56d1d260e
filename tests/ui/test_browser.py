"""The dashboard in a real headless Chromium, driven through Selenium.

Skipped only when Debian's chromium or chromium-driver is missing (tests/sysdeps.py
decides; .ci/run installs both and fails on such a skip).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

import tracker
import tracker.ui

from ..sysdeps import chromium_paths
from .support import XSS, Server

CHROMIUM, CHROMEDRIVER = chromium_paths()  # None when missing: the driver fixture skips, naming the package

# Colored pixels of a canvas: saturated ones (grid lines and text are grey).
COLORED_PIXELS = """
const canvas = arguments[0];
const ctx = canvas.getContext('2d');
const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
let n = 0;
for (let i = 0; i < d.length; i += 4) {
  const mx = Math.max(d[i], d[i+1], d[i+2]), mn = Math.min(d[i], d[i+1], d[i+2]);
  if (d[i+3] > 0 && mx - mn > 60) n++;
}
return n;
"""

PIXELS_NEAR = """
const [canvas, rgb] = arguments;
const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
let n = 0;
for (let i = 0; i < d.length; i += 4) {
  if (d[i+3] > 200 && Math.abs(d[i]-rgb[0]) + Math.abs(d[i+1]-rgb[1]) + Math.abs(d[i+2]-rgb[2]) < 40) n++;
}
return n;
"""


@pytest.fixture(scope="module")
def server(runs_store):
    store, _ = runs_store
    with Server(tracker.ui.create_app(store)) as s:
        yield s


def wait(driver, predicate, timeout=15.0, what="condition"):
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate(driver)
        except (StaleElementReferenceException, IndexError):
            last = None
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def console_errors(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def css(driver, selector):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def test_runs_page_lists_filters_and_keeps_state_in_the_url(driver, server, runs_store):
    from selenium.webdriver.common.keys import Keys

    _, ids = runs_store
    driver.get(server.url + "/")
    rows = wait(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="run rows")
    assert {r.get_attribute("data-id") for r in rows} == set(ids.values())
    assert f"{len(ids)} runs" in css(driver, ".count")[0].text
    # "/" focuses the filter; typing filters; the URL keeps it
    css(driver, "body")[0].send_keys("/")
    box = driver.switch_to.active_element
    assert box.get_attribute("data-filter") is not None
    box.send_keys("alph")
    wait(driver, lambda d: [r.get_attribute("data-id") for r in css(d, "table.runs[data-ready] tbody tr[data-id]")]
         == [ids["alpha"]], what="filtered rows")
    assert "q=alph" in driver.current_url
    box.send_keys(Keys.ESCAPE)
    wait(driver, lambda d: len(css(d, "table.runs[data-ready] tbody tr[data-id]")) == len(ids), what="filter cleared")
    # a project filter from the URL, and sorting by name
    driver.get(server.url + "/?project=vision&sort=name&desc=0")
    names = wait(driver, lambda d: [e.text for e in css(d, "table.runs[data-ready] td.name a")], what="vision rows")
    assert names == ["alpha", "beta"]
    assert console_errors(driver) == []


def test_the_start_columns_tooltip_is_the_clis_date(driver, server, runs_store):
    from tracker.core.text import when

    store, ids = runs_store
    created = tracker.open_store(store).run(ids["alpha"]).info.created_at
    driver.get(server.url + "/")
    cells = wait(driver, lambda d: css(d, f'table.runs[data-ready] tr[data-id="{ids["alpha"]}"] td'), what="row")
    titles = [c.get_attribute("title") for c in cells]
    # "2026-11-28 04:43:57", as `tracker runs` prints it, whatever the browser's locale
    assert when(created) in titles, titles
    assert console_errors(driver) == []


def test_xss_run_name_shows_as_text_and_nothing_runs(driver, server, runs_store):
    from selenium.common.exceptions import NoAlertPresentException

    _, ids = runs_store
    driver.get(server.url + "/?q=onerror")
    link = wait(driver, lambda d: css(d, "table.runs[data-ready] td.name a"), what="the xss row")[0]
    assert link.text == XSS
    driver.get(server.url + f"/runs/{ids['xss']}")
    name = wait(driver, lambda d: css(d, ".run-name"), what="run name")[0]
    assert name.text == XSS
    wait(driver, lambda d: css(d, ".tag"), what="tags")
    assert css(driver, ".tag")[0].text == XSS
    assert XSS in css(driver, "table.kv")[0].text  # the config key and value
    assert css(driver, "img") == []
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - raises when no alert ran
    assert console_errors(driver) == []


def test_run_page_draws_charts_and_shows_the_failure(driver, server, runs_store):
    _, ids = runs_store
    driver.get(server.url + f"/runs/{ids['beta']}")
    canvas = wait(driver, lambda d: css(d, '.chart[data-metric="loss"] canvas'), what="loss chart")[0]
    wait(driver, lambda d: d.execute_script(COLORED_PIXELS, canvas) > 200, what="drawn line pixels")
    assert "ValueError: loss diverged at step 30" in css(driver, '[data-section="error"]')[0].text
    assert "raise ValueError" in css(driver, '[data-section="error"] pre')[0].text
    assert "Metrics" in css(driver, '[data-section="summaries"]')[0].text
    # the log toggle redraws without errors
    css(driver, '.chart[data-metric="loss"] input[type=checkbox]')[0].click()
    time.sleep(0.3)
    assert driver.execute_script(COLORED_PIXELS, css(driver, '.chart[data-metric="loss"] canvas')[0]) > 200
    assert console_errors(driver) == []


def test_compare_overlays_two_runs(driver, server, runs_store):
    _, ids = runs_store
    driver.get(server.url + "/")
    wait(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="rows")
    for rid in (ids["alpha"], ids["beta"]):
        css(driver, f'tr[data-id="{rid}"] td.sel input')[0].click()
    button = css(driver, ".toolbar button.primary")[0]
    wait(driver, lambda d: button.is_enabled(), what="compare enabled")
    button.click()
    wait(driver, lambda d: "/compare?runs=" in d.current_url, what="compare page")
    canvas = wait(driver, lambda d: css(d, '.chart[data-metric="loss"] canvas'), what="overlaid chart")[0]
    chips = css(driver, ".runs-legend .run-chip")
    assert len(chips) == 2 and "alpha · " in chips[0].text
    colors = [driver.execute_script(
        "const c = getComputedStyle(arguments[0]).backgroundColor.match(/\\d+/g); return c.slice(0, 3).map(Number);",
        chip.find_element("css selector", ".dot")) for chip in chips]
    for rgb in colors:
        wait(driver, lambda d, rgb=rgb: d.execute_script(PIXELS_NEAR, canvas, rgb) > 30, what=f"pixels of {rgb}")
    diff = css(driver, "table.diff")[0].text
    assert "lr" in diff and "optim.name" not in diff
    assert "★" in css(driver, "table.side")[0].text or "★" in " ".join(t.text for t in css(driver, "table.side"))
    assert console_errors(driver) == []


def test_unknown_run_shows_an_error_not_a_blank_page(driver, server):
    driver.get(server.url + "/runs/zzzz9999")
    err = wait(driver, lambda d: css(d, ".error"), what="error box")[0]
    assert "no run 'zzzz9999'" in err.text
    driver.get(server.url + "/runs/bad.id")
    assert "invalid run id" in wait(driver, lambda d: css(d, ".error"), what="error box")[0].text
    # The browser logs the API's 404 and 400 answers as failed loads; nothing else may fail.
    errors = console_errors(driver)
    assert errors and all("the server responded with a status of 40" in e["message"] for e in errors), errors


def test_a_run_logging_in_another_process_updates_live(driver, tmp_path):
    store = tmp_path / "store"
    stop = tmp_path / "stop"
    child = textwrap.dedent(f"""
        import os, time, tracker
        run = tracker.start_run(project="live", name="live-run", store={str(store)!r}, run_id="liverun")
        step = 0
        while not os.path.exists({str(stop)!r}) and step < 600:
            run.log({{"loss": 1.0 / (step + 1)}}, step=step)
            step += 1
            time.sleep(0.1)
        run.finish()
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.time() + 30
        while not (store / "runs" / "liverun").is_dir():
            assert time.time() < deadline and proc.poll() is None, "the child did not start its run"
            time.sleep(0.1)
        with Server(tracker.ui.create_app(store)) as s:
            driver.get(s.url + "/runs/liverun")
            wait(driver, lambda d: "running" in css(d, ".run-head .status")[0].text, what="running status")

            def points(d):
                text = css(d, '.chart[data-metric="loss"] .readout')[0].text
                return int(text.split(" points")[0]) if " points" in text else 0

            first = wait(driver, points, what="first points")
            t0 = time.time()
            wait(driver, lambda d: points(d) >= first + 3, timeout=5, what="new points without reload")
            assert time.time() - t0 < 5
            stop.touch()
            wait(driver, lambda d: "finished" in css(d, ".run-head .status")[0].text, timeout=10,
                 what="finished status without reload")
            assert console_errors(driver) == []
    finally:
        stop.touch()
        proc.wait(20)


@pytest.fixture(scope="module")
def plugin_server(plugin_store):
    store, _ = plugin_store
    with Server(tracker.ui.create_app(store)) as s:
        yield s


@pytest.mark.parametrize("plugin", ["fft_study", "phase_trainer", "ptq", "quant_analysis"])
def test_each_bundled_plugin_panel_renders(driver, plugin_server, plugin_store, plugin):
    _, ids = plugin_store
    driver.get(plugin_server.url + f"/runs/{ids[plugin]}")
    figures = wait(driver, lambda d: css(d, '[data-section="panels"] figure.figure'), what="panel figures")
    wait(driver, lambda d: len(css(d, '[data-section="panels"] figure canvas, [data-section="panels"] figure table'))
         >= len(figures), what="every figure drawn")
    assert css(driver, '[data-section="panels"] .error') == []
    for fig in css(driver, '[data-section="panels"] figure.figure'):
        kind = fig.get_attribute("data-type")
        if kind == "table":
            assert fig.find_elements("css selector", "tbody tr")
            continue
        canvas = fig.find_element("css selector", "canvas")
        wait(driver, lambda d, canvas=canvas: d.execute_script(COLORED_PIXELS, canvas) > 100,
             what=f"coloured pixels in a {kind} figure")
    assert console_errors(driver) == []


def test_an_empty_store_says_how_to_log_a_first_run_and_shows_runs_as_they_appear(driver, tmp_path):
    store = tmp_path / "not-yet"
    with Server(tracker.ui.create_app(store)) as s:
        driver.get(s.url + "/")
        empty = wait(driver, lambda d: css(d, ".empty"), what="the empty-store message")[0]
        assert "No runs yet" in empty.text and "tracker.start_run" in empty.text
        with tracker.start_run(project="first", name="first-run", store=store) as run:
            run.log({"loss": 1.0})
        wait(driver, lambda d: [e.text for e in css(d, "table.runs[data-ready] td.name a")] == ["first-run"],
             timeout=15,
             what="the new run listed without a reload")
        assert console_errors(driver) == []
        driver.get("about:blank")  # the page polls: leave it before its server stops


@pytest.fixture(scope="module")
def big_server(big_store):
    store, _ = big_store
    with Server(tracker.ui.create_app(store)) as s:
        yield s


def test_zoom_fetches_the_range_at_full_resolution(driver, big_server, big_store):
    import json
    import math
    import urllib.request

    from selenium.webdriver.common.action_chains import ActionChains

    _, rid = big_store
    driver.get(big_server.url + f"/runs/{rid}")
    sel = '.chart[data-metric="loss"] .chart-body'

    def attrs(d):
        node = css(d, sel)[0]
        return {k: node.get_attribute(f"data-{k}") for k in ("view", "points", "x-min", "x-max")}

    wait(driver, lambda d: attrs(d)["view"] == "full" and attrs(d)["points"] == "2000", timeout=90,
         what="the whole series, downsampled to 2000 points")
    canvas = css(driver, f"{sel} canvas")[0]
    wait(driver, lambda d: d.execute_script(COLORED_PIXELS, canvas) > 200, what="drawn line pixels")
    # drag over a few pixels in the middle of the plot (about step 500,000)
    over = css(driver, f"{sel} .u-over")[0]
    ActionChains(driver).move_to_element(over).pause(0.1).click_and_hold().pause(0.1) \
        .move_by_offset(2, 0).pause(0.1).move_by_offset(2, 0).pause(0.1).release().perform()
    got = wait(driver, lambda d: attrs(d)["view"] == "range" and attrs(d), timeout=30, what="the range drawn")
    lo, hi = float(got["x-min"]), float(got["x-max"])
    assert 300_000 < lo < hi < 700_000
    # what the whole-series view had in that range, and what the range holds
    with urllib.request.urlopen(big_server.url + f"/api/runs/{rid}/metrics?names=loss&max_points=2000") as r:
        whole = json.load(r)["series"]["loss"]["x"]
    before = sum(lo <= x <= hi for x in whole)
    raw = math.floor(hi) - math.ceil(lo) + 1
    assert raw > before
    assert int(got["points"]) == min(2000, raw) > before
    wait(driver, lambda d: d.execute_script(COLORED_PIXELS, canvas) > 200, what="the range's line pixels")
    # the readout says how many points are in view once the mouse leaves the chart
    ActionChains(driver).move_to_element(css(driver, ".run-head h1")[0]).perform()
    readout = css(driver, '.chart[data-metric="loss"] .readout')[0]
    wait(driver, lambda d: f"{got['points']} points in view" in readout.text, what="the zoomed readout")
    # double-click: the whole series again
    ActionChains(driver).double_click(css(driver, f"{sel} .u-over")[0]).perform()
    wait(driver, lambda d: attrs(d)["view"] == "full" and attrs(d)["points"] == "2000" and attrs(d)["x-min"] is None,
         what="the whole series after a double-click")
    assert console_errors(driver) == []
