"""The Media panel (issue 46): a run with 1,000 steps of media opened in headless Chromium; a 1,000,000-point cloud.

Figures (wall clock, medians over rounds that alternate subject and floor):

- **The Media panel of a run with 1,000 steps of media, to first paint**: the
  run page opened at its panel (``/runs/ID#media``) to the first name's player
  shown (its clip's record fetched, the ``<audio>`` given its file), and to every
  row on screen loaded (the audio's metadata and waveform, the video's
  metadata, the 3D view drawn). The run holds an audio clip and a video at each
  of 1,000 steps and a point cloud and a page every 10 steps (2,200 records).
  Floor: the same page's header (``.run-head h1``), what any run page shows
  first. Target: within 1 s.
- **The API behind it**: ``GET /api/runs/ID/media`` (the index: every name's
  steps, from the records, no file opened) and ``?step=N`` (the records nearest
  a step), warm.
- **1,000,000 points drawn**: a run whose ``object3d`` record is a 1,000,000-point
  cloud with colours (16 MB), from the viewer's request for the file to the
  points drawn (fetch, parse, upload, draw), in the page. Floor: the same file
  fetched in the same page into an ArrayBuffer (``fetch().arrayBuffer()``).
  Target: drawn within 1 s.

Usage::

    python benchmarks/bench_media_ui.py [--quick]

The store is built once and kept under the system's temporary folder
(``tracker-bench-media-v1``); ``--quick`` uses 100 steps and 100,000 points.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from common import Served, browser, emit, main_guard, parse_args  # noqa: E402

import tracker  # noqa: E402
import tracker.ui  # noqa: E402


def build(root: Path, steps: int, points: int) -> dict[str, str]:
    """The store (cached): ``{"media": run id, "cloud": run id}``."""
    marker = root / "ids.json"
    if marker.exists():
        return json.loads(marker.read_text())
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    rate = 16000
    t = np.arange(rate // 2) / rate
    video = np.zeros((8, 3, 32, 32), np.uint8)
    with tracker.start_run(project="bench", name="media-1000", store=root, system_metrics=False) as run:
        for s in range(steps):
            d = {"loss": 1.0 / (s + 1),
                 "voice": tracker.Audio((0.5 * np.sin(2 * np.pi * (200 + s % 300) * t)).astype(np.float32),
                                        sample_rate=rate, caption=f"step {s}"),
                 "rollout": tracker.Video(np.roll(video, s % 32, axis=2) + np.uint8(s % 200), fps=8, format="mp4")}
            if s % 10 == 0:
                rng = np.random.default_rng(s)
                d["lidar"] = tracker.Object3D(rng.normal(size=(20_000, 3)))
                d["page"] = tracker.Html(f"<h1>step {s}</h1>")
            run.log(d, step=s)
        media = run.id
    rng = np.random.default_rng(1)
    cloud = np.concatenate([rng.normal(size=(points, 3)) * [10, 10, 1], rng.integers(0, 256, (points, 3))], axis=1)
    with tracker.start_run(project="bench", name="cloud", store=root, system_metrics=False) as run:
        run.log({"cloud": tracker.Object3D(cloud)}, step=0)
        big = run.id
    ids = {"media": media, "cloud": big}
    marker.write_text(json.dumps(ids))
    return ids


def until(driver, script: str, timeout: float = 60.0):  # noqa: ANN001, ANN201
    """Poll ``script`` every 5 ms until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = driver.execute_script(script)
        if got:
            return got
        time.sleep(0.005)
    raise RuntimeError(f"timed out: {script}")


FIRST = "return document.querySelector('.media-row[data-name=voice] .media-cell[data-state=shown] audio[src]')"
ALL = """
const a = document.querySelector('.media-audio');
const v = document.querySelector('.media-video');
const g = document.querySelector('.media-3d-wrap');
return a && a.dataset.duration && a.dataset.waveform === 'drawn' && v && v.dataset.duration
  && g && g.dataset.state === 'ready';
"""


def bench_panel(driver, url: str, rid: str, rounds: int) -> dict:  # noqa: ANN001
    first, every, head = [], [], []
    page = f"{url}/runs/{rid}"
    driver.get(page + "#media")  # a first load: the server's caches and the browser's module cache
    until(driver, ALL.strip().replace("\n", " "))
    for _ in range(rounds):
        driver.get("about:blank")
        start = time.monotonic()
        driver.get(page)
        until(driver, "return document.querySelector('.run-head h1')")
        head.append(time.monotonic() - start)
        driver.get("about:blank")
        start = time.monotonic()
        driver.get(page + "#media")
        until(driver, FIRST)
        first.append(time.monotonic() - start)
        until(driver, ALL)
        every.append(time.monotonic() - start)
    return {"first": statistics.median(first), "all": statistics.median(every), "head": statistics.median(head)}


def bench_api(url: str, rid: str, rounds: int) -> tuple[float, float, int]:
    def get(path: str) -> tuple[float, bytes]:
        start = time.perf_counter()
        with urllib.request.urlopen(url + path) as r:
            body = r.read()
        return time.perf_counter() - start, body

    get(f"/api/runs/{rid}/media")
    index = [get(f"/api/runs/{rid}/media") for _ in range(rounds)]
    at = [get(f"/api/runs/{rid}/media?step={s}") for s in range(3, 3 + rounds)]
    return statistics.median(t for t, _ in index), statistics.median(t for t, _ in at), len(index[0][1])


def bench_cloud(driver, url: str, rid: str, rounds: int) -> dict:  # noqa: ANN001
    draw, fetch, nav = [], [], []
    sha = json.loads(urllib.request.urlopen(f"{url}/api/runs/{rid}/media?step=0").read())["media"]["cloud"][
        "records"][0]["sha256"]
    blob = f"/api/runs/{rid}/media/{sha}"
    for _ in range(rounds):
        driver.get("about:blank")
        start = time.monotonic()
        driver.get(f"{url}/runs/{rid}#media")
        ms = until(driver, "const g = document.querySelector('.media-3d-wrap[data-state=ready]');"
                           " return g && g.dataset.ms")
        nav.append(time.monotonic() - start)
        draw.append(float(ms) / 1000)
        fetch.append(driver.execute_async_script("""
          const done = arguments[arguments.length - 1];
          const t0 = performance.now();
          fetch(arguments[0], {cache: 'no-store'}).then((r) => r.arrayBuffer())
            .then((b) => done((performance.now() - t0) / 1000));
        """, blob))
    n = int(driver.execute_script("return document.querySelector('.media-3d-wrap').dataset.points"))
    return {"draw": statistics.median(draw), "fetch": statistics.median(fetch), "nav": statistics.median(nav), "n": n}


def main(args) -> None:  # noqa: ANN001
    steps, points = (100, 100_000) if args.quick else (1000, 1_000_000)
    root = Path(tempfile.gettempdir()) / f"tracker-bench-media-v1-{steps}-{points}"
    t0 = time.monotonic()
    ids = build(root, steps, points)
    built = time.monotonic() - t0
    driver = browser()
    with Served(tracker.ui.create_app(root)) as srv:
        index_s, at_s, index_bytes = bench_api(srv.url, ids["media"], args.repeat)
        emit("media_ui", f"GET /api/runs/ID/media (the index of {steps:,} steps of media), warm",
             value=round(index_s, 4), unit="s", bytes=index_bytes)
        emit("media_ui", "GET /api/runs/ID/media?step=N (every name's records nearest a step), warm",
             value=round(at_s, 4), unit="s")
        if driver is None:
            emit("media_ui", "the Media panel: skipped (no chromium or chromedriver)", value=0, unit="s", floor=None)
            return
        try:
            p = bench_panel(driver, srv.url, ids["media"], args.repeat)
            emit("media_ui", f"the Media panel of a run with {steps:,} steps of media, to the first player shown",
                 value=round(p["first"], 4), floor=round(p["head"], 4), ratio=round(p["first"] / p["head"], 2),
                 unit="s", floor_is="the same run page's header", target="<= 1 s", met=p["first"] <= 1.0)
            emit("media_ui", "... to every row on screen loaded (audio metadata, waveform, video metadata, 3D drawn)",
                 value=round(p["all"], 4), floor=round(p["head"], 4), ratio=round(p["all"] / p["head"], 2), unit="s")
            c = bench_cloud(driver, srv.url, ids["cloud"], args.repeat)
            emit("media_ui", f"{c['n']:,} points with colours: the viewer's fetch, parse, upload and draw",
                 value=round(c["draw"], 4), floor=round(c["fetch"], 4), ratio=round(c["draw"] / c["fetch"], 2),
                 unit="s", floor_is="fetch().arrayBuffer() of the same file in the page", target="<= 1 s",
                 met=c["draw"] <= 1.0, navigation_to_drawn_s=round(c["nav"], 4))
        finally:
            driver.quit()
    emit("media_ui", "building the store (once; cached)", value=round(built, 2), unit="s")


if __name__ == "__main__":
    sys.exit(main_guard(main, parse_args(__doc__.splitlines()[0])))
