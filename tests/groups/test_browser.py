"""Groups on the dashboard in a real headless Chromium: the runs page grouped (rows, counts, mean ± std, one
line and band per group), the group in the URL, the compare page grouped."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

import tracker
import tracker.ui
import tracker.ui.report
from tracker.cli.numbers import number

from ..ui.support import Server, wait


@pytest.fixture(scope="module")
def server(ablations):
    store, _ = ablations
    with Server(tracker.ui.create_app(store)) as s:
        yield s


def severe(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_runs_page_grouped_by_config_key(driver, server, ablations):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    store, ids = ablations
    driver.get(f"{server.url}/?groupby=config.lr")
    rows = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.group-row"), what="group rows")
    assert [(r.get_attribute("data-group"), r.get_attribute("data-n")) for r in rows] == \
        [("0.01", "3"), ("0.1", "3"), ("0.5", "1")]
    assert driver.find_element(By.CSS_SELECTOR, "table.runs").get_attribute("data-groups") == "3"
    assert "7 runs in 3 groups" in driver.find_element(By.CSS_SELECTOR, ".count").text
    # The default columns are the most common metric's last and min: each group row holds mean ± std of them.
    infos = {i.id: i for i in tracker.open_store(store).runs()}
    last = np.array([infos[r].last_metrics["loss"] for r in ids["b"]])
    head = [th.get_attribute("textContent").replace("✕", "").replace("▾", "").replace("▴", "").strip()
            for th in driver.find_elements(By.CSS_SELECTOR, "table.runs th")]
    assert "loss last" in head, head
    col = head.index("loss last")
    cells = rows[0].find_elements(By.TAG_NAME, "td")
    assert cells[col].text == f"{number(last.mean())} ± {number(last.std())}"
    assert driver.find_elements(By.CSS_SELECTOR, "tr.in-group") == []
    # Unfold the first group: its three runs, and the open group in the URL.
    rows[0].find_element(By.CSS_SELECTOR, "button.toggle").click()
    inner = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.in-group"), what="the group's runs")
    assert sorted(r.get_attribute("data-id") for r in inner) == sorted(ids["b"])
    query = parse_qs(urlparse(driver.current_url).query)
    assert query["groupby"] == ["config.lr"] and query["open"] == ["0.01"]
    # The charts: one line and one band per group, in the groups' colours; hovering says n and std.
    card = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".group-box .chart[data-metric=loss]"),
                what="the loss chart")
    body = card.find_element(By.CSS_SELECTOR, ".chart-body")
    wait(driver, lambda d: body.get_attribute("data-bands") == "3", what="three bands")
    assert card.get_attribute("data-groups") == "3"
    chips = driver.find_elements(By.CSS_SELECTOR, ".group-legend .group-chip")
    assert [c.get_attribute("data-group") for c in chips] == ["0.01", "0.1", "0.5"]
    canvas = card.find_element(By.TAG_NAME, "canvas")
    for chip in chips:
        rgb = chip.find_element(By.CSS_SELECTOR, ".dot").value_of_css_property("background-color")
        r, g, b = (int(x) for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
        drawn = driver.execute_script("""
const [canvas, rgb] = arguments;
const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
let n = 0;
for (let i = 0; i < d.length; i += 4) {
  if (d[i+3] > 200 && Math.abs(d[i]-rgb[0]) + Math.abs(d[i+1]-rgb[1]) + Math.abs(d[i+2]-rgb[2]) < 40) n++;
}
return n;""", canvas, [r, g, b])
        assert drawn > 20, f"group {chip.get_attribute('data-group')}: its colour is not drawn"
    over = card.find_element(By.CSS_SELECTOR, ".u-over")
    ActionChains(driver).move_to_element_with_offset(over, -over.size["width"] // 2 + 5, 0).perform()
    readout = wait(driver, lambda d: card.find_element(By.CSS_SELECTOR, ".readout").text, what="the readout")
    wait(driver, lambda d: "std · n 3" in card.find_element(By.CSS_SELECTOR, ".readout").text,
         what=f"mean ± std and n on hover (got {readout!r})")
    assert not severe(driver)


def test_group_by_menu_and_compare_page(driver, server, ablations):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _, ids = ablations
    driver.get(f"{server.url}/")
    menu = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "select[data-group-by]"), what="the menu")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "table.runs tbody tr[data-id]"), what="run rows")
    Select(menu).select_by_value("group")
    rows = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.group-row"), what="group rows")
    assert [(r.get_attribute("data-group"), r.get_attribute("data-n")) for r in rows] == \
        [("a", "3"), ("b", "3"), ("(none)", "1")]
    assert parse_qs(urlparse(driver.current_url).query)["groupby"] == ["group"]
    driver.back()
    wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, "tr.group-row"), what="ungrouped after back")
    runs = ",".join(ids["a"] + ids["b"])
    driver.get(f"{server.url}/compare?runs={runs}&groupby=group")
    card = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".group-box .chart[data-metric=acc]"),
                what="the compare page's group chart")
    wait(driver, lambda d: card.find_element(By.CSS_SELECTOR, ".chart-body").get_attribute("data-bands") == "2",
         what="two bands")
    assert not driver.find_element(By.CSS_SELECTOR, ".charts:not(.group-charts)").is_displayed()
    assert not severe(driver)


COLORED_PIXELS = """
const d = arguments[0].getContext('2d').getImageData(0, 0, arguments[0].width, arguments[0].height).data;
let n = 0;
for (let i = 0; i < d.length; i += 4) {
  const mx = Math.max(d[i], d[i+1], d[i+2]), mn = Math.min(d[i], d[i+1], d[i+2]);
  if (d[i+3] > 0 && mx - mn > 60) n++;
}
return n;
"""


def open_offline(driver, path):
    """Open a file with the browser's network cut off, and say whether anything tried to load."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                  "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        driver.get(path.as_uri())
        wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "1", what="the report drawn")
        return driver.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    finally:
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 0,
                                                                      "downloadThroughput": -1, "uploadThroughput": -1})


def test_report_opens_offline_from_disk_and_runs_no_script_of_its_data(driver, ablations, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    from tests.ui.support import XSS

    store, ids = ablations
    notes = tmp_path / "notes.md"
    notes.write_text("# Seeds\n\nFive **seeds** each.\n\n<script>window.__pwned = 1; alert(3)</script>\n\n"
                     "<img src=x onerror=\"window.__pwned = 2\">\n", encoding="utf-8")
    out = tmp_path / "report.html"
    from click.testing import CliRunner

    from tracker.cli import make_cli

    res = CliRunner().invoke(make_cli(), ["--store", str(store), "report", "-m", "loss", "-m", "acc", "--notes",
                                          str(notes), "--title", "<b>Ablations</b>", "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    requests = open_offline(driver, out)
    assert requests == []  # nothing was even asked for
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - raises when no alert is open
    assert driver.execute_script("return window.__pwned") is None
    assert driver.find_element(By.ID, "title").text == "<b>Ablations</b>"
    notes_node = driver.find_element(By.ID, "notes")
    assert notes_node.find_element(By.TAG_NAME, "h1").text == "Seeds"
    assert notes_node.find_element(By.TAG_NAME, "strong").text == "seeds"
    assert "<script>window.__pwned = 1; alert(3)</script>" in notes_node.text
    assert notes_node.find_elements(By.TAG_NAME, "img") == [] and notes_node.find_elements(By.TAG_NAME, "script") == []
    # The runs table: seven runs, the hostile name shown as text, no element made of it.
    rows = driver.find_elements(By.CSS_SELECTOR, "table.report-runs tbody tr")
    assert sorted(r.get_attribute("data-id") for r in rows) == sorted(ids["a"] + ids["b"] + ids["none"])
    hostile = next(r for r in rows if r.get_attribute("data-id") == ids["none"][0])
    assert hostile.find_element(By.CSS_SELECTOR, ".run-name").text == XSS
    assert driver.find_elements(By.CSS_SELECTOR, "main img") == []
    # Charts: one per metric, every run drawn, zoomable.
    for metric in ("loss", "acc"):
        card = driver.find_element(By.CSS_SELECTOR, f".chart[data-metric={metric}]")
        assert driver.execute_script(COLORED_PIXELS, card.find_element(By.TAG_NAME, "canvas")) > 200
    body = driver.find_element(By.CSS_SELECTOR, ".chart[data-metric=loss] .chart-body")
    assert body.get_attribute("data-view") == "full"
    over = body.find_element(By.CSS_SELECTOR, ".u-over")
    from selenium.webdriver.common.action_chains import ActionChains

    w = over.size["width"]
    ActionChains(driver).move_to_element_with_offset(over, -w // 4, 0).click_and_hold() \
        .move_by_offset(w // 4, 0).release().perform()
    wait(driver, lambda d: body.get_attribute("data-view") == "zoomed", what="the chart zoomed")
    assert "config that differs" in driver.find_element(By.TAG_NAME, "main").text.lower()
    # The plugins' panels: the histogram heatmap of the run that logged histograms, drawn by panels.js.
    panel = driver.find_element(By.CSS_SELECTOR, f".report-panels[data-run='{ids['a'][0]}'] figure[data-type=heatmap]")
    wait(driver, lambda d: panel.find_elements(By.TAG_NAME, "canvas"), what="the heatmap drawn")
    assert [e for e in severe(driver) if "favicon" not in e["message"]] == []


def test_report_grouped_opens_offline(driver, ablations, tmp_path):
    from selenium.webdriver.common.by import By

    store, _ = ablations
    out = tmp_path / "groups.html"
    text = tracker.ui.report.build(tracker.open_store(store), tracker.open_store(store).runs(), by="group",
                                   metrics=["loss"])
    out.write_text(text, encoding="utf-8")
    assert open_offline(driver, out) == []
    rows = driver.find_elements(By.CSS_SELECTOR, "table.report-groups tbody tr")
    assert [r.get_attribute("data-id") for r in rows] == ["group:a", "group:b", "group:(none)"]
    body = driver.find_element(By.CSS_SELECTOR, ".group-box .chart[data-metric=loss] .chart-body")
    assert body.get_attribute("data-bands") == "3"
    assert not severe(driver)


def test_report_button_downloads_the_file_of_what_is_on_screen(driver, server, ablations, tmp_path):
    from selenium.webdriver.common.by import By

    _, ids = ablations
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.get(f"{server.url}/?groupby=group&project=abl")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.group-row"), what="group rows")
    driver.find_element(By.CSS_SELECTOR, "button.report-button").click()
    files = wait(driver, lambda d: [p for p in downloads.iterdir() if p.suffix == ".html"], timeout=30,
                 what=f"the downloaded report ({driver.find_element(By.CSS_SELECTOR, '.report-note').text})")
    assert files[0].name == "abl-by-group.html"
    doc = json.loads(re.search(r'id="report-data">(.*?)</script>', files[0].read_text(), re.S).group(1))
    assert doc["by"] == "group" and [g["key"] for g in doc["groups"]] == ["a", "b", None]
    assert doc["metrics"] == ["loss"]  # the metric columns on screen
    assert "saved abl-by-group.html" in driver.find_element(By.CSS_SELECTOR, ".report-note").text
    # The compare page's button: the compared runs.
    for p in downloads.iterdir():
        p.unlink()
    runs = ",".join(ids["a"])
    driver.get(f"{server.url}/compare?runs={runs}")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".chart[data-metric=loss] canvas"), what="compare charts")
    driver.find_element(By.CSS_SELECTOR, "button.report-button").click()
    files = wait(driver, lambda d: [p for p in downloads.iterdir() if p.suffix == ".html"], timeout=30,
                 what="the compare page's report")
    doc = json.loads(re.search(r'id="report-data">(.*?)</script>', files[0].read_text(), re.S).group(1))
    assert [r["id"] for r in doc["runs"]] == ids["a"] and doc["title"] == "compare 3 runs"
    # What the app sends is an attachment that could run nothing were it shown.
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/api/report?runs={runs}") as resp:
        assert resp.headers["content-disposition"] == 'attachment; filename="report.html"'
        assert resp.headers["content-security-policy"] == "default-src 'none'; sandbox"


def test_sweep_page_report_button(driver, tmp_path):
    from selenium.webdriver.common.by import By

    pytest.importorskip("optuna")
    store = tmp_path / "store"

    def train() -> None:
        run = tracker.init()
        for step in range(3):
            tracker.log({"loss": run.config["lr"] * 10 + 1.0 / (step + 1)})

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("TRACKER_RUN_ID", raising=False)
        sweep_id = tracker.sweep({"name": "lr", "method": "random", "metric": {"name": "loss"},
                                  "parameters": {"lr": {"values": [0.1, 0.01, 0.001]}}},
                                 project="sw", store=store, seed=1)
        tracker.agent(sweep_id, function=train, count=3, store=store)
        with tracker.start_run(project="sw", name="outside", store=store) as r:
            r.log({"loss": 9.0})
    trials = sorted(i.id for i in tracker.open_store(store).runs() if f"sweep:{sweep_id}" in i.tags)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    with Server(tracker.ui.create_app(store)) as srv:
        driver.get(f"{srv.url}/sweeps/{sweep_id}")
        button = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".sweep-title button.report-button"),
                      what="the sweep page's report button")
        button.click()
        files = wait(driver, lambda d: [p for p in downloads.iterdir() if p.suffix == ".html"], timeout=30,
                     what="the sweep's report")
    doc = json.loads(re.search(r'id="report-data">(.*?)</script>', files[0].read_text(), re.S).group(1))
    assert sorted(r["id"] for r in doc["runs"]) == trials and len(trials) == 3
    assert doc["title"] == f"sweep {sweep_id} lr" and doc["metrics"] == ["loss"]
