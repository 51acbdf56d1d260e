"""What the charts draw, colours, URL state, the parameters view, progressive pages and tracker.show,
in a real headless Chromium (the harness of test_browser.py)."""

# ruff: noqa: F811 - the harness' server fixture is imported from test_browser and used as an argument
from __future__ import annotations

import time

import pytest

import tracker
import tracker.ui

from ..sysdeps import chrome, require_chromium
from .support import NAN_FROM, NAN_TO, SPIKE_AT, Server
from .test_browser import COLORED_PIXELS, PIXELS_NEAR, css, server, wait  # noqa: F401 - the harness' server

# Saturated pixels of the plot area (uPlot's bbox, in device pixels) between fractions of its width and height.
PLOT_PIXELS = """
const [canvas, x0, x1, y0, y1] = arguments;
const u = canvas.closest('.uplot');
const over = u.querySelector('.u-over');
const dpr = canvas.width / canvas.getBoundingClientRect().width;
const left = over.offsetLeft * dpr, top = over.offsetTop * dpr;
const w = over.clientWidth * dpr, h = over.clientHeight * dpr;
const X0 = Math.floor(left + x0 * w), X1 = Math.ceil(left + x1 * w);
const Y0 = Math.floor(top + y0 * h), Y1 = Math.ceil(top + y1 * h);
const d = canvas.getContext('2d').getImageData(X0, Y0, Math.max(1, X1 - X0), Math.max(1, Y1 - Y0)).data;
let n = 0;
for (let i = 0; i < d.length; i += 4) {
  const mx = Math.max(d[i], d[i+1], d[i+2]), mn = Math.min(d[i], d[i+1], d[i+2]);
  if (d[i+3] > 0 && mx - mn > 40) n++;
}
return n;
"""

DOT_RGB = ("const c = getComputedStyle(arguments[0]).backgroundColor.match(/\\d+/g);"
           "return c.slice(0, 3).map(Number);")


def hex_rgb(text: str) -> list[int]:
    return [int(text[i:i + 2], 16) for i in (1, 3, 5)]


@pytest.fixture(scope="module")
def big_server(big_store):
    store, _ = big_store
    with Server(tracker.ui.create_app(store)) as s:
        yield s


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A store of twelve runs with three config keys and a loss; its server."""
    store = tmp_path_factory.mktemp("sweep") / "store"
    ids = []
    for i in range(12):
        with tracker.start_run(project="sweep", name=f"sweep-{i:02d}", store=store,
                               config={"lr": 10 ** -(1 + i / 4), "width": 32 * (1 + i % 3),
                                       "opt": ["adam", "sgd"][i % 2]}) as run:
            for s in range(40):
                run.log({"loss": (1 + i / 6) / (s + 1) + 0.01 * i}, step=s)
            ids.append(run.id)
    with Server(tracker.ui.create_app(store)) as s:
        yield s, store, ids


def new_driver():
    return chrome(*require_chromium(), size="1440,900")


def test_a_one_step_spike_in_a_million_steps_shows_and_nan_is_a_gap(driver, big_server, big_store):
    _, rid = big_store
    driver.get(big_server.url + f"/runs/{rid}")
    sel = '.chart[data-metric="loss"] .chart-body'
    wait(driver, lambda d: css(d, sel)[0].get_attribute("data-points") == "2000", timeout=90, what="the series")
    canvas = css(driver, f"{sel} canvas")[0]
    wait(driver, lambda d: d.execute_script(COLORED_PIXELS, canvas) > 200, what="drawn pixels")
    spike = SPIKE_AT / 1_000_000
    # The spike's bucket mean is 0.2% of the y range: only its min/max envelope reaches the upper half.
    near = driver.execute_script(PLOT_PIXELS, canvas, spike - 0.01, spike + 0.01, 0.05, 0.5)
    elsewhere = driver.execute_script(PLOT_PIXELS, canvas, 0.1, spike - 0.02, 0.05, 0.5)
    assert near >= 40 and elsewhere == 0, (near, elsewhere)
    # The NaN stretch is a gap: nothing at its middle, the line on both sides of it.
    mid = (NAN_FROM + NAN_TO) / 2 / 1_000_000
    assert driver.execute_script(PLOT_PIXELS, canvas, mid - 0.001, mid + 0.001, 0, 1) == 0
    assert driver.execute_script(PLOT_PIXELS, canvas, 0.3, 0.302, 0, 1) > 0
    # Smoothing is off, and a chart of buckets has no markers.
    assert css(driver, 'input[aria-label="smoothing on"]')[0].is_selected() is False
    assert css(driver, sel)[0].get_attribute("data-markers") in (None, "0")
    assert "smooth" not in driver.current_url


def test_markers_sit_on_logged_values_and_the_raw_line_stays_under_smoothing(driver, server, runs_store):
    _, ids = runs_store
    driver.get(server.url + f"/runs/{ids['alpha']}")
    sel = '.chart[data-metric="loss"] .chart-body'
    wait(driver, lambda d: css(d, sel)[0].get_attribute("data-markers") == "50", what="a marker per logged value")
    canvas = css(driver, f"{sel} canvas")[0]
    raw = driver.execute_script(COLORED_PIXELS, canvas)
    css(driver, 'input[aria-label="smoothing on"]')[0].click()
    wait(driver, lambda d: "smooth=0.6" in d.current_url, what="smoothing in the URL")
    # still 50 markers (on the raw values), and more ink: the raw line plus the smoothed one
    assert css(driver, sel)[0].get_attribute("data-markers") == "50"
    wait(driver, lambda d: d.execute_script(COLORED_PIXELS, css(d, f"{sel} canvas")[0]) > raw, what="two lines")


def test_a_runs_colour_is_the_same_under_its_full_id_and_a_prefix(driver, server, runs_store):
    _, ids = runs_store
    full = ids["alpha"]
    colours = []
    for ref in (full, full[:5]):
        driver.get(server.url + f"/runs/{ref}")
        dot = wait(driver, lambda d: css(d, ".run-head h1 .dot"), what="the run's dot")[0]
        colours.append(driver.execute_script(DOT_RGB, dot))
    # The same run by its full id and by a prefix. (Runs shown together may be moved apart from their ids'
    # colours, the same way on every page that shows them together: tests/ui/test_one_look.py.)
    assert colours[0] == colours[1]


def test_six_runs_in_a_compare_have_six_distinct_colours(driver, sweep):
    server, _, ids = sweep
    driver.get(server.url + "/compare?runs=" + ",".join(ids[:6]))
    canvas = wait(driver, lambda d: css(d, '.chart[data-metric="loss"] canvas'), what="overlaid chart")[0]
    dots = css(driver, ".runs-legend .run-chip .dot")
    assert len(dots) == 6
    rgbs = [driver.execute_script(DOT_RGB, d) for d in dots]
    for i in range(6):
        for j in range(i + 1, 6):
            assert sum(abs(a - b) for a, b in zip(rgbs[i], rgbs[j], strict=True)) > 60, (rgbs[i], rgbs[j])
    for rgb in rgbs:
        wait(driver, lambda d, rgb=rgb: d.execute_script(PIXELS_NEAR, canvas, rgb) > 20, what=f"pixels of {rgb}")
    # the footer counts per run
    assert "6 runs × 40 points" in css(driver, '.chart[data-metric="loss"] .readout')[0].text


def test_run_page_state_survives_a_copied_url_and_the_back_button(driver, server, runs_store):
    from selenium.webdriver.common.action_chains import ActionChains

    _, ids = runs_store
    driver.get(server.url + f"/runs/{ids['alpha'][:6]}")
    sel = '.chart[data-metric="loss"]'
    wait(driver, lambda d: css(d, f"{sel} canvas"), what="loss chart")
    css(driver, f"{sel} .chart-head input[type=checkbox]")[0].click()  # log
    css(driver, 'input[aria-label="smoothing on"]')[0].click()
    css(driver, 'input[aria-label="filter metrics"]')[0].send_keys("loss")
    over = css(driver, f"{sel} .u-over")[0]
    ActionChains(driver).move_to_element_with_offset(over, -40, 0).click_and_hold().move_by_offset(60, 0) \
        .release().perform()
    wait(driver, lambda d: "zoom=loss" in d.current_url, what="the zoom in the URL")
    url = driver.current_url
    assert "log=loss" in url and "smooth=" in url and "q=loss" in url
    fresh = new_driver()
    try:
        fresh.get(url)
        body = wait(fresh, lambda d: css(d, f'{sel} .chart-body[data-view="range"]'), what="the zoomed range")[0]
        lo, hi = float(body.get_attribute("data-x-min")), float(body.get_attribute("data-x-max"))
        assert 0 < lo < hi < 49
        assert css(fresh, f"{sel} .chart-head input[type=checkbox]")[0].is_selected()
        assert css(fresh, 'input[aria-label="smoothing on"]')[0].is_selected()
        assert css(fresh, 'input[aria-label="filter metrics"]')[0].get_attribute("value") == "loss"
        assert css(fresh, '.chart[data-metric="acc"]')[0].is_displayed() is False
    finally:
        fresh.quit()
    # the back button undoes the smoothing, then the log scale (steps of their own)
    driver.back()
    wait(driver, lambda d: "smooth" not in d.current_url and "log=loss" in d.current_url, what="back once")
    wait(driver, lambda d: not css(d, 'input[aria-label="smoothing on"]')[0].is_selected(), what="smoothing off")
    assert css(driver, f"{sel} .chart-head input[type=checkbox]")[0].is_selected()
    driver.back()
    wait(driver, lambda d: "log=loss" not in d.current_url, what="back twice")
    wait(driver, lambda d: not css(d, f"{sel} .chart-head input[type=checkbox]")[0].is_selected(), what="log off")


def test_runs_page_state_survives_a_copied_url(driver, sweep):
    server, _, ids = sweep
    driver.get(server.url + "/")
    wait(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="rows")
    css(driver, "th button.sort")[0].click()  # sort by name (ascending)
    for rid in ids[:2]:
        wait(driver, lambda d, rid=rid: css(d, f'tr[data-id="{rid}"] td.sel input'), what="row")[0].click()
    css(driver, 'input[aria-label="filter runs"]')[0].send_keys("sweep-0")
    wait(driver, lambda d: "q=sweep-0" in d.current_url and "sel=" in d.current_url, what="state in the URL")
    url = driver.current_url
    fresh = new_driver()
    try:
        fresh.get(url)
        names = wait(fresh, lambda d: [e.text for e in css(d, "table.runs[data-ready] td.name a")], what="rows")
        assert names == sorted(names) and all(n.startswith("sweep-0") for n in names) and len(names) == 10
        checked = [r.get_attribute("data-id") for r in css(fresh, "tr.selected")]
        assert set(checked) == set(ids[:2])
        heads = [e.text for e in css(fresh, "table.runs th button.sort")]
        assert "name ▴" in heads and "loss last" in heads and "loss min" in heads
    finally:
        fresh.quit()


def test_parameters_view_draws_one_line_per_run_and_a_click_opens_it(driver, sweep):
    from selenium.webdriver.common.action_chains import ActionChains

    server, _, ids = sweep
    driver.get(server.url + "/?view=params")
    chart = wait(driver, lambda d: css(d, '.params-chart[data-kind="parallel"][data-lines]'), what="parallel")[0]
    assert chart.get_attribute("data-lines") == "12"
    canvas = chart.find_element("css selector", "canvas")
    heads = driver.execute_script(
        "return [...document.querySelectorAll('.params-choices .chip')].map(e => e.textContent)")
    assert [h.split(" ")[0] for h in heads] == ["lr", "width", "opt"]
    # each run's line in its own colour (twelve colours moved apart), each drawn
    import json

    colours = json.loads(chart.get_attribute("data-colors"))
    assert len(set(colours)) == 12
    for c in colours:
        wait(driver, lambda d, c=c: d.execute_script(PIXELS_NEAR, canvas, hex_rgb(c)) > 10, what=f"the line in {c}")
    scatter = css(driver, '.params-chart[data-kind="scatter"]')[0]
    assert scatter.get_attribute("data-lines") == "12"
    sc = scatter.find_element("css selector", "canvas")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", sc)
    # the first saturated pixel of the scatter is some run's point
    xy = driver.execute_script("""
        const c = arguments[0]; const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const dpr = c.width / c.getBoundingClientRect().width;
        for (let i = 0; i < d.length; i += 4) {
          const mx = Math.max(d[i], d[i+1], d[i+2]), mn = Math.min(d[i], d[i+1], d[i+2]);
          if (d[i+3] > 200 && mx - mn > 80) {
            const p = i / 4;
            return [(p % c.width) / dpr, Math.floor(p / c.width) / dpr];
          }
        }
        return null;""", sc)
    assert xy is not None
    rect = driver.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.width, r.height];", sc)
    dx, dy = xy[0] - rect[0] / 2 + 1, xy[1] - rect[1] / 2 + 2
    ActionChains(driver).move_to_element_with_offset(sc, dx, dy).perform()
    tip = wait(driver, lambda d: [t for t in css(d, ".params-tip") if t.is_displayed()], what="the tooltip")[0]
    found = tip.text.split(" · ")[0]
    assert found.startswith("sweep-")
    ActionChains(driver).click().perform()
    wait(driver, lambda d: "/runs/" in d.current_url, what="the run's page")
    name = wait(driver, lambda d: css(d, ".run-name"), what="run name")[0]
    assert name.text == found


def test_a_slow_plugin_panel_does_not_delay_the_first_chart(driver, tmp_path, make_tracker_host):
    def slow(table, run):
        time.sleep(8)
        return [tracker.BarChart("slow", ["a"], {"x": [1.0]})]

    class SlowPanels:
        @tracker.hookimpl
        def tracker_panels(self):
            return [tracker.Panel("demo.slow", "metrics", slow, title="Slow panel")]

    make_tracker_host(SlowPanels(), names=["demo"])
    store = tmp_path / "store"
    with tracker.start_run(store=store, run_id="slowpanel") as run:
        for i in range(20):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
    with Server(tracker.ui.create_app(store)) as s:
        start = time.monotonic()
        driver.get(s.url + "/runs/slowpanel")
        canvas = wait(driver, lambda d: css(d, '.chart[data-metric="loss"] canvas'), what="the chart")[0]
        wait(driver, lambda d: d.execute_script(COLORED_PIXELS, canvas) > 100, what="drawn")
        drawn = time.monotonic() - start
        panel = css(driver, '[data-panel="demo.slow"]')[0]
        assert drawn < 5 and panel.get_attribute("data-state") == "loading", drawn
        assert "Drawing the panel" in panel.text
        # the summaries came on their own meanwhile
        wait(driver, lambda d: "Metrics" in css(d, '[data-section="summaries"]')[0].text, what="summaries")
        wait(driver, lambda d: css(d, '[data-panel="demo.slow"][data-state="done"] canvas'), timeout=20,
             what="the slow panel, later")
        driver.get("about:blank")


def test_tracker_show_serves_the_page_a_notebook_frames(driver, sweep):
    _, store, ids = sweep
    import html
    import re

    board = tracker.show(store)
    src = html.unescape(re.search(r'<iframe src="([^"]+)"', board._repr_html_()).group(1))
    assert src.startswith("http://127.0.0.1:")
    # what the notebook's browser does: load the iframe's URL (served by this process' background server)
    driver.get(src)
    rows = wait(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="rows")
    assert len(rows) == 12
    page = tracker.show(tracker.open_store(store).run(ids[3]), height=400)
    assert 'height="400"' in page._repr_html_() and page.url.startswith(board.url.rstrip("/"))
    driver.get(page.url)
    canvas = wait(driver, lambda d: css(d, '.chart[data-metric="loss"] canvas'), what="the run's chart")[0]
    wait(driver, lambda d: d.execute_script(COLORED_PIXELS, canvas) > 100, what="drawn")
