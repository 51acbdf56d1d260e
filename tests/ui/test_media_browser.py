"""The Media panel in a real headless Chromium: players load and know their durations, the 3D view draws, the
HTML frame cannot touch the page, the slider moves every name, only rows on screen are fetched, the compare page
shows two runs side by side, and a report carries its media offline."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import tracker
import tracker.ui

from .media_support import AUDIO_SECONDS, VIDEO_FPS, VIDEO_FRAMES, media_store
from .support import Server
from .support import wait as wait_until


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    pytest.importorskip("av", reason="PyAV (the media extra) encodes the test videos")
    store = tmp_path_factory.mktemp("media-browser") / "store"
    return store, media_store(store)


@pytest.fixture(scope="module")
def server(media):
    store, _ = media
    with Server(tracker.ui.create_app(store)) as s:
        yield s


def wait(driver, predicate, timeout=20.0, what="condition"):
    """:func:`tests.ui.support.wait`, with this module's timeout."""
    return wait_until(driver, predicate, timeout, what)


def severe(driver) -> list:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]


def cells(driver) -> dict:
    """``{name: {kind, state, shownStep, exact, text}}`` of the panel's cells (the first column)."""
    return driver.execute_script("""
      const out = {};
      for (const row of document.querySelectorAll('.media-row[data-name]')) {
        const c = row.querySelector('.media-cell');
        out[row.dataset.name] = {kind: c.dataset.kind, state: c.dataset.state, step: c.dataset.shownStep,
          exact: c.dataset.exact, text: c.querySelector('.media-at').textContent};
      }
      return out;""")


def show_all(driver) -> None:
    """Scroll through the panel so every row has been on screen."""
    for row in driver.find_elements("css selector", ".media-row[data-name]"):
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
        time.sleep(0.15)


#: Pixels of the 3D canvas that differ from its background, read back from the WebGL drawing buffer.
DRAWN_PIXELS = """
const c = arguments[0];
const gl = c.getContext('webgl') || c.getContext('experimental-webgl');
const w = gl.drawingBufferWidth, h = gl.drawingBufferHeight;
const px = new Uint8Array(w * h * 4);
gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, px);
const bg = [px[0], px[1], px[2]];
let n = 0;
for (let i = 0; i < px.length; i += 4) {
  if (Math.abs(px[i] - bg[0]) + Math.abs(px[i + 1] - bg[1]) + Math.abs(px[i + 2] - bg[2]) > 60) n++;
}
return n;
"""


def test_run_page_players_3d_and_a_sandboxed_page(driver, server, media) -> None:
    from selenium.webdriver.common.by import By

    _, ids = media
    driver.get(f"{server.url}/runs/{ids['a']}")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "[data-section=media] .media-panel[data-state=ready]"),
         what="the media panel")
    show_all(driver)
    got = wait(driver, lambda d: (lambda c: c if all(v["state"] == "shown" for v in c.values()) else None)(cells(d)),
               what="every name shown")
    # The slider starts at the last step; each name says which of its steps it shows.
    assert {n: (c["kind"], c["step"], c["exact"]) for n, c in got.items()} == {
        "voice": ("audio", "4", "1"), "rollout": ("video", "4", "1"), "lidar": ("object3d", "4", "1"),
        "page": ("html", "1", "0")}
    assert got["page"]["text"] == "step 1 (nearest to 4)"
    # Audio and video load and report their durations; the waveform is drawn from the decoded samples.
    audio = wait(driver, lambda d: d.execute_script(
        "const a = document.querySelector('.media-audio audio'); return a.readyState >= 1 && a.duration"), what="audio")
    assert audio == pytest.approx(AUDIO_SECONDS, abs=0.05)
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-audio[data-waveform=drawn]"), what="the waveform")
    video = wait(driver, lambda d: d.execute_script(
        "const v = document.querySelector('.media-video video'); return v.readyState >= 1 && v.duration"), what="video")
    assert video == pytest.approx(VIDEO_FRAMES / VIDEO_FPS, abs=0.2)
    # The video seeks (the server answers the player's Range requests).
    driver.execute_script("const v = document.querySelector('.media-video video'); v.currentTime = 0.6;")
    wait(driver, lambda d: d.execute_script(
        "const v = document.querySelector('.media-video video'); return !v.seeking && v.currentTime > 0.5"),
        what="seek")
    # The 3D view draws its points and its box.
    wrap = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-3d-wrap[data-state=ready]"), what="3D view")
    assert wrap.get_attribute("data-points") == "400"
    canvas = wrap.find_element(By.CSS_SELECTOR, "canvas")
    assert driver.execute_script(DRAWN_PIXELS, canvas) > 200
    assert "boxes: 1 (car 1)" in wrap.text
    # Orbit by dragging: the view changes.
    from selenium.webdriver.common.action_chains import ActionChains

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", canvas)
    before = driver.execute_script("return arguments[0].toDataURL()", canvas)
    ActionChains(driver).move_to_element(canvas).click_and_hold().move_by_offset(80, 20).release().perform()
    wait(driver, lambda d: d.execute_script("return arguments[0].toDataURL()", canvas) != before, what="orbit")
    # The HTML frame: sandboxed without same-origin; its script ran but could not reach the page.
    frame = driver.find_element(By.CSS_SELECTOR, "iframe.media-html")
    assert frame.get_attribute("sandbox") == "allow-scripts"
    driver.switch_to.frame(frame)
    try:
        out = wait(driver, lambda d: (lambda t: t if t != "script did not run" else None)(
            d.find_element(By.ID, "out").text), what="the frame's script")
    finally:
        driver.switch_to.default_content()
    assert "parent: SecurityError" in out and "top: SecurityError" in out
    assert "cookie: SecurityError" in out and "storage: SecurityError" in out
    assert driver.execute_script("return document.body.dataset.pwned") is None
    assert driver.title != "pwned"
    # A logged table's media cells: a player of the cell's clip (loading nothing until played), the page as
    # a link that opens it sandboxed.
    table = driver.find_element(By.CSS_SELECTOR, "[data-table=clips]")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", table)
    cell_audio = table.find_element(By.CSS_SELECTOR, "audio.cell-audio")
    assert "/media/" in cell_audio.get_attribute("src") and cell_audio.get_attribute("preload") == "none"
    driver.execute_script("arguments[0].play().catch(() => {})", cell_audio)
    assert wait(driver, lambda d: d.execute_script("return arguments[0].duration", cell_audio), what="cell clip") == \
        pytest.approx(AUDIO_SECONDS, abs=0.05)
    link = table.find_element(By.LINK_TEXT, "page ↗")
    assert "/media/" in link.get_attribute("href") and link.get_attribute("target") == "_blank"
    assert not severe(driver)


def test_the_slider_moves_every_name_to_its_nearest_step(driver, server, media) -> None:
    from selenium.webdriver.common.by import By

    _, ids = media
    driver.get(f"{server.url}/runs/{ids['a']}")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-panel[data-state=ready]"), what="the media panel")
    show_all(driver)
    wait(driver, lambda d: all(c["step"] == "4" for n, c in cells(d).items() if n != "page"), what="step 4")
    # Arrow keys on the slider (what a user does), then its buttons.
    rng = driver.find_element(By.CSS_SELECTOR, ".media-range")
    voice = driver.find_element(By.CSS_SELECTOR, ".media-row[data-name=voice]")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", voice)  # the slider sticks above it
    driver.execute_script("arguments[0].value = 1; arguments[0].dispatchEvent(new Event('input'))", rng)
    wait(driver, lambda d: cells(d)["voice"]["step"] == "1", what="step 1 on screen")
    show_all(driver)  # the rows below follow as they come into view
    got = wait(driver, lambda d: (lambda c: c if all(v["state"] == "shown" and v["text"] for v in c.values())
                                  and c["rollout"]["step"] == "0" else None)(cells(d)), what="step 1")
    assert (got["rollout"]["step"], got["rollout"]["exact"]) == ("0", "0")  # 0 and 2 as near: the earlier
    assert got["rollout"]["text"] == "step 0 (nearest to 1)"
    assert (got["page"]["step"], got["page"]["exact"], got["lidar"]["step"]) == ("1", "1", "4")
    assert driver.find_element(By.CSS_SELECTOR, ".media-step").text.replace("\u2009", "") == "1 / 4"
    assert "mstep=1" in driver.current_url  # a copied URL opens the same step
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", voice)
    driver.find_element(By.CSS_SELECTOR, ".media-next").click()
    wait(driver, lambda d: cells(d)["rollout"]["step"] == "2" and cells(d)["voice"]["step"] == "2", what="step 2")
    # The audio player now holds step 2's clip: its caption says so.
    assert "tone 2" in driver.find_element(By.CSS_SELECTOR, ".media-row[data-name=voice]").text
    driver.get(f"{server.url}/runs/{ids['a']}?mstep=3")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-slider").get_attribute("data-step") == "3",
         what="the step from the URL")
    assert not severe(driver)


def test_only_rows_on_screen_are_fetched(driver, server, media) -> None:
    from selenium.webdriver.common.by import By

    _, ids = media
    driver.set_window_size(390, 844)  # a phone: the rows below the first few are off screen
    try:
        driver.get(f"{server.url}/runs/{ids['a']}")
        panel = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-panel[data-state=ready]"),
                     what="the media panel")
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", panel)
        wait(driver, lambda d: cells(d)["voice"]["state"] == "shown", what="the first row")
        time.sleep(0.5)
        urls = driver.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
        blobs = {u for u in urls if "/api/runs/" in u and "/media/" in u}
        state = cells(driver)
        assert state["page"]["state"] == "empty"
        # The page below was not asked for: only what was on screen (the last step's records came with the
        # index; a record is no file).
        assert any(u.endswith(f"/api/runs/{ids['a']}/media") for u in urls)
        assert all("page" not in u for u in urls if "/media?" in u)
        # Files: at most one per row shown (the waveform's fetch and the player read the same file).
        assert 1 <= len(blobs) <= sum(1 for c in state.values() if c["state"] == "shown"), blobs
        show_all(driver)
        wait(driver, lambda d: cells(d)["page"]["state"] == "shown", what="the page once scrolled to")
        # A phone lays each row out in one column.
        row = driver.find_element(By.CSS_SELECTOR, ".media-row[data-name=voice]")
        name, cell = row.find_element(By.CSS_SELECTOR, ".media-name"), row.find_element(By.CSS_SELECTOR, ".media-cell")
        assert cell.location["y"] > name.location["y"] + 10
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        driver.set_window_size(1440, 900)


def test_compare_page_lays_two_runs_media_side_by_side(driver, server, media) -> None:
    from selenium.webdriver.common.by import By

    _, ids = media
    driver.get(f"{server.url}/compare?runs={ids['a']},{ids['b']}&mstep=2")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-panel[data-state=ready] .media-compare"),
         what="the compare page's media")
    heads = driver.find_elements(By.CSS_SELECTOR, ".media-head .media-col-head")
    assert [h.get_attribute("data-run") for h in heads] == [ids["a"], ids["b"]]
    show_all(driver)
    row = driver.find_element(By.CSS_SELECTOR, ".media-row[data-name=voice]")
    wait(driver, lambda d: [c.get_attribute("data-shown-step") for c in row.find_elements(
        By.CSS_SELECTOR, ".media-cell")] == ["2", "2"], what="both runs at step 2")
    texts = [c.text for c in row.find_elements(By.CSS_SELECTOR, ".media-cell")]
    assert all("tone 2" in t for t in texts)
    # Two players side by side, each with its own run's clip.
    srcs = driver.execute_script(
        "return [...document.querySelectorAll('.media-row[data-name=voice] audio')].map((a) => a.src)")
    assert len(srcs) == 2 and ids["a"] in srcs[0] and ids["b"] in srcs[1]
    left, right = row.find_elements(By.CSS_SELECTOR, ".media-cell")
    assert right.location["x"] > left.location["x"] + 100
    # A compare of runs without media has no Media box.
    driver.get(f"{server.url}/compare?runs={ids['plain']},{ids['a']}")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-panel[data-state=ready]"), what="media")
    driver.get(f"{server.url}/compare?runs={ids['plain']},{ids['plain']}")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-panel[data-state=empty]"), what="no media")
    assert not driver.find_element(By.CSS_SELECTOR, ".media-panel").is_displayed()
    assert not severe(driver)


def open_offline(driver, path: Path) -> list[str]:
    """Open a file with the browser's network cut off; every resource it tried to load."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                  "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        driver.get(path.as_uri())
        wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "1", what="the report drawn")
        show_all(driver)
        time.sleep(0.5)
        return driver.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    finally:
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 0,
                                                                      "downloadThroughput": -1, "uploadThroughput": -1})


def test_a_report_carries_its_media_offline(driver, media, tmp_path) -> None:
    from click.testing import CliRunner
    from selenium.webdriver.common.by import By

    from tracker.cli import make_cli

    store, ids = media
    out = tmp_path / "media.html"
    res = CliRunner().invoke(make_cli(), ["--store", str(store), "report", ids["a"], ids["b"], "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    assert open_offline(driver, out) == []  # nothing was even asked for
    got = wait(driver, lambda d: (lambda c: c if all(v["state"] == "shown" for v in c.values()) else None)(cells(d)),
               what="every name shown")
    assert set(got) == {"voice", "rollout", "lidar", "page"}
    duration = wait(driver, lambda d: d.execute_script(
        "const a = document.querySelector('.report-media audio'); return a && a.readyState >= 1 && a.duration"),
        what="the report's audio")
    assert duration == pytest.approx(AUDIO_SECONDS, abs=0.05)
    assert wait(driver, lambda d: d.execute_script(
        "const v = document.querySelector('.report-media video'); return v && v.readyState >= 1 && v.duration"),
        what="the report's video") == pytest.approx(VIDEO_FRAMES / VIDEO_FPS, abs=0.2)
    canvas = wait(driver, lambda d: d.find_element(
        By.CSS_SELECTOR, ".report-media .media-3d-wrap[data-state=ready] canvas"), what="the report's 3D view")
    assert driver.execute_script(DRAWN_PIXELS, canvas) > 200
    # The logged page is shown sandboxed, under the report's policy: its script does not even run.
    frame = driver.find_element(By.CSS_SELECTOR, ".report-media iframe.media-html")
    assert frame.get_attribute("sandbox") == "allow-scripts"
    driver.switch_to.frame(frame)
    try:
        assert wait(driver, lambda d: d.find_element(By.ID, "h").text) == "logged page"
        assert driver.find_element(By.ID, "out").text == "script did not run"
    finally:
        driver.switch_to.default_content()
    assert driver.execute_script("return document.body.dataset.pwned") is None
    assert [e for e in severe(driver) if "Content Security Policy" not in e["message"]] == []


def test_a_report_beyond_its_media_budget_keeps_a_poster_and_a_note(driver, media, tmp_path) -> None:
    from selenium.webdriver.common.by import By

    from tracker.ui.report import build

    store, ids = media
    s = tracker.open_store(store)
    out = tmp_path / "small.html"
    out.write_text(build(s, [s.run(ids["a"]).info], max_media_bytes=0), encoding="utf-8")
    assert open_offline(driver, out) == []
    show_all(driver)
    notes = driver.find_elements(By.CSS_SELECTOR, ".report-media [data-left-out]")
    assert len(notes) == 4 and all("--max-media-bytes" in n.text for n in notes)
    poster = driver.find_element(By.CSS_SELECTOR, ".report-media img.media-poster")
    assert poster.get_attribute("src").startswith("data:image/png;base64,")
    assert driver.execute_script("return arguments[0].naturalWidth", poster) == 32
    assert driver.find_elements(By.CSS_SELECTOR, ".report-media audio[src]") == []
    note = driver.find_element(By.CSS_SELECTOR, ".report-media .media-note").text
    assert "left out: beyond --max-media-bytes" in note


def test_a_running_runs_panel_follows_new_steps(driver, tmp_path) -> None:
    from selenium.webdriver.common.by import By

    from .media_support import AUDIO_RATE, clip

    store = tmp_path / "store"
    with tracker.start_run(project="media", name="live", store=store) as run:
        run.log({"voice": tracker.Audio(clip(300), sample_rate=AUDIO_RATE, caption="first")}, step=0)
        with Server(tracker.ui.create_app(store)) as srv:
            driver.get(f"{srv.url}/runs/{run.id}#media")
            wait(driver, lambda d: cells(d).get("voice", {}).get("step") == "0", what="step 0")
            run.log({"voice": tracker.Audio(clip(500), sample_rate=AUDIO_RATE, caption="second")}, step=10)
            # The slider stood at the last step: it follows the new one, and the row shows it.
            wait(driver, lambda d: cells(d)["voice"]["step"] == "10", timeout=30, what="the new step shown")
            assert "second" in driver.find_element(By.CSS_SELECTOR, ".media-row[data-name=voice]").text
            assert driver.find_element(By.CSS_SELECTOR, ".media-step").text.replace("\u2009", "") == "10 / 10"
            # Back at step 0, more steps arrive: the slider grows and stays where the user put it, and the
            # rows are kept (a clip being listened to is not cut off).
            driver.execute_script("document.querySelector('.media-row[data-name=voice] audio').__kept = 1")
            rng = driver.find_element(By.CSS_SELECTOR, ".media-range")
            driver.execute_script("arguments[0].value = 0; arguments[0].dispatchEvent(new Event('input'))", rng)
            wait(driver, lambda d: cells(d)["voice"]["step"] == "0", what="back at step 0")
            run.log({"voice": tracker.Audio(clip(600), sample_rate=AUDIO_RATE, caption="third")}, step=20)
            wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".media-step").text.replace("\u2009", "")
                 == "0 / 20", timeout=30, what="the slider grown, still at 0")
            assert cells(driver)["voice"]["step"] == "0"
            assert driver.execute_script("return document.querySelector('.media-row[data-name=voice] audio').__kept")
            assert "3 logged" in driver.find_element(By.CSS_SELECTOR, ".media-row[data-name=voice]").text
            driver.get("about:blank")


def test_a_damaged_file_says_why_it_does_not_play(driver, server, media) -> None:
    import os

    from selenium.webdriver.common.by import By

    store, ids = media
    view = tracker.open_store(store).run(ids["b"])
    sha = next(r.data["sha256"] for r in view.records("audio") if r.step == 0)
    path = Path(store) / "blobs" / "sha256" / sha[:2] / sha[2:]
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[60] ^= 0xFF
    path.write_bytes(bytes(data))
    driver.get(f"{server.url}/runs/{ids['b']}?mstep=0#media")
    problem = wait(driver, lambda d: d.find_element(
        By.CSS_SELECTOR, ".media-row[data-name=voice] .media-audio p.error"), what="the error under the player")
    wait(driver, lambda d: problem.is_displayed() and "damaged" in problem.text, what="the server's reason shown")
    assert sha in problem.text
