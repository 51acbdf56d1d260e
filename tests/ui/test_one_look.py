"""One look across pages, in a real headless Chromium: a run has the same colour on the runs page and the compare
page, nine runs shown together are told apart, group lines take the new grouping's colours when the menu
changes it (as a fresh load of the same URL draws them), and the hover readout says n once."""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import urlencode

import pytest

import tracker
import tracker.ui

from .support import Server
from .test_browser import PIXELS_NEAR, console_errors, css, wait

#: Colours closer than this in OKLab look alike side by side (about 0.02 is just noticeable).
TOLD_APART = 0.06


@pytest.fixture(scope="module")
def nine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Nine runs of project mlp: widths 4, 8, 16 (the group) by seeds 0, 1, 2."""
    store = tmp_path_factory.mktemp("one-look") / "store"
    ids = {}
    for h in (4, 8, 16):
        for seed in range(3):
            name = f"mlp h{h} s{seed}"
            with tracker.start_run(project="mlp", name=name, store=store, group=f"h{h}",
                                   config={"h": h, "seed": seed}) as run:
                for step in range(30):
                    run.log({"loss": 1 / (step + 1) + h / 40 + seed / 7}, step=step)
            ids[name] = run.id
    return store, ids


@pytest.fixture(scope="module")
def server(nine):
    with Server(tracker.ui.create_app(nine[0])) as s:
        yield s


def rgb(css_color: str) -> tuple[int, int, int]:
    r, g, b = (int(float(x)) for x in css_color[css_color.index("(") + 1:css_color.index(")")].split(",")[:3])
    return r, g, b


def oklab(c: tuple[int, int, int]) -> tuple[float, float, float]:
    lin = [x / 255 for x in c]
    lin = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in lin]
    r, g, b = lin
    lc = (0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b) ** (1 / 3)
    mc = (0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b) ** (1 / 3)
    sc = (0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b) ** (1 / 3)
    return (0.2104542553 * lc + 0.7936177850 * mc - 0.0040720468 * sc,
            1.9779984951 * lc - 2.4285922050 * mc + 0.4505937099 * sc,
            0.0259040371 * lc + 0.7827717662 * mc - 0.8086757660 * sc)


def distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    return math.dist(oklab(a), oklab(b))


def dot_colors(driver, rows_css: str, id_of) -> dict[str, tuple[int, int, int]]:
    return {id_of(r): rgb(r.find_element("css selector", ".dot").value_of_css_property("background-color"))
            for r in css(driver, rows_css)}


def test_a_run_has_one_colour_on_the_runs_and_compare_pages_and_nine_are_told_apart(driver, server, nine) -> None:
    _, ids = nine
    driver.get(server.url + "/?project=mlp")
    wait(driver, lambda d: len(css(d, "table.runs tbody tr[data-id]")) == 9, what="the nine runs")
    listed = dot_colors(driver, "table.runs tbody tr[data-id]", lambda r: r.get_attribute("data-id"))
    driver.get(server.url + "/compare?" + urlencode({"runs": ",".join(ids.values())}))
    wait(driver, lambda d: len(css(d, ".run-chip")) == 9, what="the compare page's runs")
    compared = dot_colors(driver, ".run-chip", lambda a: a.get_attribute("href").rsplit("/", 1)[-1])
    assert set(listed) == set(compared) == set(ids.values())
    names = {v: k for k, v in ids.items()}
    for rid in ids.values():
        assert listed[rid] == compared[rid], f"{names[rid]}: {listed[rid]} on the runs page, {compared[rid]} compared"
    # Told apart: every pair of the nine at least TOLD_APART in OKLab.
    pairs = sorted((distance(listed[a], listed[b]), names[a], names[b]) for i, a in enumerate(ids.values())
                   for b in list(ids.values())[i + 1:])
    assert pairs[0][0] > TOLD_APART, pairs[:3]
    # The same runs selected on the runs page show the colours the compare page gives them.
    driver.get(server.url + "/?" + urlencode({"project": "mlp", "sel": ",".join(ids.values())}))
    wait(driver, lambda d: len(css(d, "table.runs tbody tr.selected")) == 9, what="the nine runs selected")
    assert dot_colors(driver, "table.runs tbody tr[data-id]", lambda r: r.get_attribute("data-id")) == compared
    assert not console_errors(driver)


def _group_lines(driver) -> tuple[dict[str, tuple[int, int, int]], dict[str, int]]:
    """Each legend chip's colour, and how many pixels of the loss chart are drawn in it."""
    card = wait(driver, lambda d: css(d, ".group-box .chart[data-metric=loss]")[0], what="the loss chart")
    wait(driver, lambda d: card.find_element("css selector", ".chart-body").get_attribute("data-bands") == "3",
         what="three bands")
    chips = {c.get_attribute("data-group"): rgb(c.find_element("css selector", ".dot").value_of_css_property(
        "background-color")) for c in css(driver, ".group-legend .group-chip")}
    canvas = card.find_element("css selector", "canvas")
    drawn = {g: driver.execute_script(PIXELS_NEAR, canvas, list(c)) for g, c in chips.items()}
    return chips, drawn


def test_regrouping_from_the_menu_draws_the_new_groups_colours_as_a_fresh_load(driver, server, nine) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select

    driver.get(server.url + "/?project=mlp&groupby=group")
    chips, drawn = _group_lines(driver)
    assert sorted(chips) == ["h16", "h4", "h8"] and all(n > 20 for n in drawn.values()), drawn
    Select(css(driver, "select[data-group-by]")[0]).select_by_value("config.seed")
    wait(driver, lambda d: sorted(c.get_attribute("data-group") for c in css(d, ".group-legend .group-chip"))
         == ["0", "1", "2"], what="the seeds' legend")
    after, drawn = _group_lines(driver)
    assert all(n > 20 for n in drawn.values()), f"lines not drawn in the legend's colours: {drawn} {after}"
    url = driver.current_url
    driver.get(url)
    fresh, fresh_drawn = _group_lines(driver)
    assert fresh == after and all(n > 20 for n in fresh_drawn.values())
    # The hover readout says n once: "mean … ± … std · n 3", the series named without "(n=3)".
    card = css(driver, ".group-box .chart[data-metric=loss]")[0]
    over = card.find_element("css selector", ".u-over")
    ActionChains(driver).move_to_element_with_offset(over, -over.size["width"] // 2 + 5, 0).perform()
    text = wait(driver, lambda d: "std · n" in card.find_element("css selector", ".readout").text
                and card.find_element("css selector", ".readout").text, what="the readout")
    vals = [v.text for v in card.find_elements("css selector", ".readout .val")]
    assert len(vals) == 3 and all(v.count(" n ") == 1 and "(n=" not in v for v in vals), text
    assert not console_errors(driver)
