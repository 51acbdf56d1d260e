"""W&B-style values on the run page, in a real headless Chromium: strings logged beside the metrics,
a ``wandb.Table`` of ``wandb.Image`` cells as thumbnails, and ``define_metric(..., step_metric=...)`` as
the x-axis of the charts. The run is logged as a W&B script logs it (``import tracker as wandb``).
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import numpy as np
import orjson
import pytest

import tracker
import tracker as wandb
import tracker.ui

from .support import Server
from .test_browser import console_errors, css, wait

pytest.importorskip("PIL", reason="the media extra (Pillow) is part of the test extra")

SHOTS = os.environ.get("TRACKER_TEST_SCREENSHOTS")  # a folder: the pages are saved there to be looked at


def _wandb_run(store: Path) -> str:
    run = wandb.init(project="clients", name="wandb-style", dir=store, config={"epochs": 3})
    wandb.define_metric("epoch")
    wandb.define_metric("val/*", step_metric="epoch")
    for epoch in range(3):
        for batch in range(4):
            wandb.log({"train/loss": 1.0 / (1 + epoch * 4 + batch), "phase": "warmup" if epoch == 0 else "main"})
        wandb.log({"epoch": epoch * 10, "val/acc": 0.5 + 0.1 * epoch, "note": f"epoch {epoch} <b>done</b>"})
    table = wandb.Table(columns=["id", "image", "label"])
    for i, rgb in enumerate(([255, 0, 0], [0, 255, 0], [0, 0, 255])):
        table.add_data(i, wandb.Image(np.full((6, 10, 3), rgb, np.uint8), caption=f"class {i}"), f"c{i}")
    wandb.log({"predictions": table})
    wandb.finish()
    return run.id


@pytest.fixture(scope="module")
def logged_server(tmp_path_factory):
    store = tmp_path_factory.mktemp("logged-ui") / "store"
    rid = _wandb_run(store)
    with Server(tracker.ui.create_app(store)) as s:
        yield s, store, rid


def _get(url: str) -> dict:
    with urllib.request.urlopen(url) as r:
        return orjson.loads(r.read())


def test_metrics_endpoint_draws_defined_metrics_against_their_axis(logged_server) -> None:
    server, _, rid = logged_server
    body = _get(f"{server.url}/api/runs/{rid}/metrics?x=defined")
    assert body["axes"] == {"val/acc": "epoch"}
    assert body["series"]["val/acc"]["x"] == [0, 10, 20]  # epoch, not the step
    assert body["series"]["train/loss"]["x"] == [0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13]  # by step
    by_step = _get(f"{server.url}/api/runs/{rid}/metrics?x=step&names=val/acc")
    assert by_step["series"]["val/acc"]["x"] == [4, 9, 14] and by_step["axes"] == {}
    zoomed = _get(f"{server.url}/api/runs/{rid}/metrics?x=defined&names=val/acc&x_min=5&x_max=25")
    assert zoomed["series"]["val/acc"]["x"] == [10, 20]
    detail = _get(f"{server.url}/api/runs/{rid}?parts=texts,tables,axes")
    assert detail["axes"] == {"val/acc": "epoch"}
    assert [t["value"] for t in detail["texts"]["phase"]][:5] == ["warmup"] * 4 + ["main"]
    [table] = detail["tables"]["predictions"]
    assert table["columns"] == ["id", "image", "label"] and table["total"] == 3
    assert table["rows"][0][1]["_type"] == "image-file"


def test_run_page_shows_text_values_table_thumbnails_and_the_defined_axis(driver, logged_server) -> None:  # noqa: F811
    server, store, rid = logged_server
    driver.get(f"{server.url}/runs/{rid}")
    # Text values: per key, the steps and values, latest first; markup shows as text.
    rows = wait(driver, lambda d: css(d, "[data-section=texts] [data-text=note] tbody tr"), what="text rows")
    assert [r.text for r in rows] == ["14 epoch 2 <b>done</b>", "9 epoch 1 <b>done</b>", "4 epoch 0 <b>done</b>"]
    assert css(driver, "[data-section=texts] b") == []
    assert len(css(driver, "[data-section=texts] [data-text=phase] tbody tr")) == 12
    # The table: one row per add_data, each image cell a thumbnail served from the store.
    thumbs = wait(driver, lambda d: css(d, "[data-section=tables] [data-table=predictions] img.thumb"),
                  what="thumbnails")
    assert len(thumbs) == 3
    wait(driver, lambda d: all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", t) == 10
                               for t in thumbs), what="thumbnails loaded")
    colours = [driver.execute_script("""
        const img = arguments[0]; const c = document.createElement('canvas'); c.width = 10; c.height = 6;
        const g = c.getContext('2d'); g.drawImage(img, 0, 0); return Array.from(g.getImageData(5, 3, 1, 1).data);
    """, t)[:3] for t in thumbs]
    assert colours == [[255, 0, 0], [0, 255, 0], [0, 0, 255]]
    assert [t.get_attribute("alt") for t in thumbs] == ["class 0", "class 1", "class 2"]
    assert thumbs[0].size["width"] == 64  # a 10x6 image drawn as a 64-pixel thumbnail
    cells = css(driver, "[data-table=predictions] tbody tr")[1].text
    assert "1" in cells and "c1" in cells
    # The charts: val/acc against epoch by default (the x menu says so), train/loss by step.
    head = wait(driver, lambda d: css(d, ".chart[data-metric='val/acc'] .axis-of"), what="val/acc chart")[0]
    wait(driver, lambda d: head.text == "vs epoch", what="the axis label")
    x_menu = css(driver, "[data-section=charts] select[aria-label='x axis']")[0]
    assert x_menu.get_attribute("value") == "defined" and "epoch" in x_menu.text
    assert css(driver, ".chart[data-metric='train/loss'] .axis-of")[0].text == ""
    if SHOTS:
        driver.save_screenshot(os.path.join(SHOTS, "run-wandb-style.png"))
        driver.execute_script("document.querySelector('[data-section=texts]').scrollIntoView()")
        driver.save_screenshot(os.path.join(SHOTS, "run-wandb-style-values.png"))
    # Choosing x: step draws val/acc by step again, and the URL keeps the choice.
    driver.execute_script("arguments[0].value = 'step'; arguments[0].dispatchEvent(new Event('change'));", x_menu)
    wait(driver, lambda d: head.text == "", what="the axis label to go")
    assert "x=step" in driver.current_url
    driver.get(driver.current_url)
    menu = wait(driver, lambda d: css(d, "[data-section=charts] select[aria-label='x axis']"), what="x menu")[0]
    assert menu.get_attribute("value") == "step"
    assert console_errors(driver) == []
