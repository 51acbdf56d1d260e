"""The capture sections of the run page in a real headless Chromium (the dashboard tests' harness).

Artifacts with a download, an image gallery with its step slider, a histogram
heatmap (a panel), the system section; and the blob endpoint's rules.
"""

from __future__ import annotations

import hashlib
import math
import os
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import tracker
import tracker.ui

from ..ui.support import Server, snapshot
from ..ui.test_browser import css, wait

pytest.importorskip("PIL", reason="the media extra (Pillow) is part of the test extra")


def _captured_run(store: Path, tmp: Path) -> tuple[str, dict]:
    facts: dict = {}
    weights = tmp / "weights.bin"
    weights.write_bytes(os.urandom(50_000))
    facts["weights"] = hashlib.sha256(weights.read_bytes()).hexdigest()
    (tmp / "preds" / "a").mkdir(parents=True)
    (tmp / "preds" / "a" / "p.json").write_text("[1, 0]")
    with tracker.start_run(project="capture", name="captured", store=store, system_metrics=False) as run:
        for step in range(3):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
            img = np.zeros((8, 12, 3), np.uint8)
            img[:, :, step] = 255  # red, green, blue at steps 0, 1, 2
            run.log_image("sample", img, caption=f"epoch {step}")
            run.log_histogram("weights", np.random.default_rng(step).normal(step, 1.0, 1000))
            run.log_record("system", cpu_percent=20.0 + step, memory_used_bytes=(2 + step) << 30,
                           process_rss_bytes=(1 + step) << 28)
        run.log_artifact(weights, kind="model")
        run.log_artifact(tmp / "preds")
    return run.id, facts


@pytest.fixture(scope="module")
def capture_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("capture-ui")
    store = tmp / "store"
    rid, facts = _captured_run(store, tmp)
    with Server(tracker.ui.create_app(store)) as s:
        yield s, store, rid, facts


def test_blob_endpoint_serves_only_the_runs_whole_blobs(capture_server) -> None:
    server, store, rid, facts = capture_server
    before = snapshot(store)
    with urllib.request.urlopen(f"{server.url}/api/runs/{rid}/blobs/{facts['weights']}?download=1") as r:
        body = r.read()
        assert hashlib.sha256(body).hexdigest() == facts["weights"]
        assert "attachment" in r.headers["Content-Disposition"] and "weights.bin" in r.headers["Content-Disposition"]
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
    for bad, code in (("0" * 64, 404), ("..%2F..%2Fetc%2Fpasswd", 404), ("abc", 400)):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{server.url}/api/runs/{rid}/blobs/{bad}")
        assert err.value.code == code
    # A damaged blob is refused, naming it; nothing in the store changes.
    path = store / "blobs" / "sha256" / facts["weights"][:2] / facts["weights"][2:]
    os.chmod(path, 0o644)
    data = path.read_bytes()
    path.write_bytes(bytes([data[0] ^ 0xFF]) + data[1:])  # a changed first byte (random data may begin with any)
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{server.url}/api/runs/{rid}/blobs/{facts['weights']}")
        assert err.value.code == 500 and b"damaged" in err.value.read()
    finally:
        path.write_bytes(data)
    after = snapshot(store)
    # Derived data under index/ is the only thing the app may create (DESIGN, "Dashboard").
    assert {p for p in after if not p.startswith("index")} == {p for p in before if not p.startswith("index")}


def test_run_page_shows_artifacts_gallery_heatmap_and_system(driver, capture_server) -> None:  # noqa: F811
    server, store, rid, facts = capture_server
    driver.get(f"{server.url}/runs/{rid}")
    # Artifacts: name, kind, size, hash prefix, step, and a download link to the blob endpoint.
    rows = wait(driver, lambda d: css(d, "[data-section=artifacts] tr[data-artifact]"), what="artifact rows")
    texts = [r.text for r in rows]
    assert any("weights.bin" in t and "model" in t and facts["weights"][:12] in t for t in texts)
    assert any("preds" in t and "folder" in t for t in texts)
    link = css(driver, "[data-section=artifacts] tr[data-artifact='weights.bin'] a.download")[0]
    href = link.get_attribute("href")
    with urllib.request.urlopen(href) as r:
        assert hashlib.sha256(r.read()).hexdigest() == facts["weights"]
    # The gallery: the last step's image first; the slider goes back to step 0 (red).
    gallery = wait(driver, lambda d: css(d, "[data-section=images] figure[data-image=sample]"), what="gallery")[0]
    label = css(driver, "[data-image=sample] .gallery-label")[0]
    assert "step 2" in label.text and "epoch 2" in label.text
    slider = css(driver, "[data-image=sample] input[type=range]")[0]
    driver.execute_script("arguments[0].value = 0; arguments[0].dispatchEvent(new Event('input'));", slider)
    wait(driver, lambda d: "step 0" in label.text, what="slider to step 0")
    img = css(driver, "[data-image=sample] img")[0]
    wait(driver, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) == 12,
         what="image loaded")
    red = driver.execute_script("""
        const img = arguments[0]; const c = document.createElement('canvas'); c.width = 12; c.height = 8;
        const g = c.getContext('2d'); g.drawImage(img, 0, 0); return Array.from(g.getImageData(5, 4, 1, 1).data);
    """, img)
    assert red[:3] == [255, 0, 0]
    assert gallery.is_displayed()
    # The histogram heatmap, drawn through the panel vocabulary.
    panel = wait(driver, lambda d: css(d, "[data-panel='histogram.heatmaps'] figure[data-type=heatmap]"),
                 timeout=30, what="histogram heatmap")
    assert "weights" in panel[0].text
    # The system section: charts of CPU and memory.
    figs = wait(driver, lambda d: css(d, "[data-section=system] figure[data-type=line]"), what="system charts")
    titles = " ".join(f.text for f in figs)
    assert "CPU" in titles and "Memory" in titles
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def test_heatmap_rebins_histograms_of_different_ranges() -> None:
    from tracker.builtin.media import _rebin

    counts = np.array([2.0, 4.0])
    got = _rebin(np.array([0.0, 1.0, 2.0]), counts, np.linspace(-1.0, 3.0, 9))
    assert got.sum() == pytest.approx(6.0) and got[:2].sum() == 0 and got[-2:].sum() == 0
    assert math.isclose(got[2] + got[3], 2.0) and math.isclose(got[4] + got[5], 4.0)
