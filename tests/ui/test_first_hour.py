"""What a user notices in the first hour (issue 35), in a real headless Chromium.

An idle runs page answered 304 with the same ETag; the default metric as
`tracker runs` picks it; numbers written as the CLI writes them; a crashed
run's page; names wrapping at underscores; panels without a stray "null";
phase bands of one step; the compare page's alignment and colours; a store
never read (the header first, with a progress line).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import tracker
import tracker.ui
from tracker.core.format import encode_line

from ..sysdeps import chrome, require_chromium
from .support import Server
from .test_browser import console_errors, css, wait

LONG_NAME = "scale_sensitivity_of_the_int8_weights_and_activations"


class Counting:
    """ASGI middleware counting, per request to ``/api/runs``, its status and the body bytes sent."""

    def __init__(self, app) -> None:  # noqa: ANN001
        self.app = app
        self.lock = threading.Lock()
        self.runs: list[list[int]] = []  # [status, bytes]

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http" or scope["path"] != "/api/runs":
            await self.app(scope, receive, send)
            return
        entry = [0, 0]
        with self.lock:
            self.runs.append(entry)

        async def counted(message: dict) -> None:
            if message["type"] == "http.response.start":
                entry[0] = message["status"]
            elif message["type"] == "http.response.body":
                entry[1] += len(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, counted)


def _crashed_run(store: Path) -> str:
    """A run whose process dies (os._exit) after logging 20 steps: it reads as crashed."""
    code = textwrap.dedent(f"""
        import os, tracker
        run = tracker.start_run(project="basic", name="dies", store={str(store)!r}, system_metrics=False)
        for i in range(20):
            run.log({{"loss": 1.0 / (i + 1)}}, step=i)
        print(run.id, flush=True)
        os._exit(3)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return out.stdout.strip()


def _make_store(store: Path) -> dict[str, str]:
    ids: dict[str, str] = {}
    # Two runs logging loss and acc: the default metric is loss (as `tracker runs` picks), not acc.
    for name, lr in (("first", 0.1), ("second", 3e-4)):
        with tracker.start_run(project="basic", name=name, store=store, config={"lr": lr, "depth": 2},
                               system_metrics=False) as run:
            for i in range(30):
                run.log({"loss": (1.0 + lr) / (i + 1), "acc": i / 30 * (1 - lr)}, step=i)
        ids[name] = run.id
    ids["crashed"] = _crashed_run(store)
    with tracker.start_run(project="cards", name="single values", store=store, system_metrics=False) as run:
        run.log({LONG_NAME: 0.25, "compression_ratio": 4.0}, step=0)
        run.log_record("system", cpu_percent=12.0, memory_used_bytes=1_592_320_000, process_rss_bytes=250_000_000)
        run.log_image("sample", np.zeros((8, 8, 3), np.uint8), step=5, caption="step 5")
        ids["cards"] = run.id
    with tracker.start_run(project="phase", name="one-step corrections", store=store, system_metrics=False) as run:
        step = 0
        for cycle in range(3):
            for phase, n in (("FULL", 40), ("PREDICT", 30), ("CORRECT", 1)):
                for k in range(n):
                    run.log_record("phase.step", step=step, phase=phase, phase_step=k, cycle=cycle,
                                   loss=1.0 / (step + 1), phase_changed=k == 0)
                    step += 1
        ids["phase"] = run.id
    with tracker.start_run(project="ptq", name="bars", store=store, system_metrics=False) as run:
        for name, (out, inp) in (("fc1", (64, 32)), ("fc2", (32, 64))):
            scale = 0.01 * (out / 32)
            run.log_record("ptq.layer", name=name, shape=[out, inp], scale=scale, w_min=-1.0, w_max=1.0,
                           max_abs_err=scale / 2 * 0.9, mse=scale**2 / 12, bytes_fp32=4 * out * inp + 4 * out,
                           bytes_int8=out * inp + 8 * out)
        xs, ys = np.linspace(-1, 1, 9), np.linspace(-1, 1, 5)
        z = (xs[None, :] - 0.25) ** 2 + (ys[:, None] + 0.5) ** 2 + 0.1
        run.log_record("fft.landscape", step=1, model_id="gated", x_label="angle", y_label="bias",
                       x=xs.tolist(), y=ys.tolist(), z=z.tolist())
        ids["ptq"] = run.id
    return ids


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    store = tmp_path_factory.mktemp("first-hour") / "store"
    ids = _make_store(store)
    app = Counting(tracker.ui.create_app(store))
    with Server(app) as server:
        yield server, store, ids, app


def js(driver, module: str, body: str):  # noqa: ANN201
    """Run ``body`` (an async function body with the module as ``m``) in the page; returns its value."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"import('/static/{module}').then(async (m) => {{ {body} }})"
        ".then(done, (e) => done({error: String(e && e.stack || e)}));")


# --- the runs page: one load, then 304s -----------------------------------------------------------

def test_runs_listing_has_an_etag_and_answers_304_until_something_changes(tmp_path) -> None:
    from starlette.testclient import TestClient

    store = tmp_path / "store"
    with tracker.start_run(project="p", name="a", store=store, system_metrics=False) as run:
        run.log({"loss": 1.0}, step=0)
    with TestClient(tracker.ui.create_app(store)) as c:
        first = c.get("/api/runs", params={"default": "1"})
        tag = first.headers["etag"]
        assert first.status_code == 200 and tag.startswith('W/"')
        # the default metric's statistics come with the listing: one load, not two
        assert first.json()["default_metric"] == "loss" and "stats" in first.json()["runs"][0]
        again = c.get("/api/runs", params={"default": "1"}, headers={"if-none-match": tag})
        assert again.status_code == 304 and again.content == b""
        strong = tag.removeprefix("W/")  # the same tag without W/ matches too (weak comparison)
        assert c.get("/api/runs", params={"default": "1"}, headers={"if-none-match": strong}).status_code == 304
        with tracker.start_run(project="p", name="b", store=store, system_metrics=False) as run:
            run.log({"loss": 0.5}, step=0)
        changed = c.get("/api/runs", params={"default": "1"}, headers={"if-none-match": tag})
        assert changed.status_code == 200 and changed.headers["etag"] != tag and len(changed.json()["runs"]) == 2


def test_an_idle_runs_page_loads_the_list_once_then_polls_with_304s(driver, world) -> None:
    server, _, ids, app = world
    driver.get(server.url + "/")
    wait(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="run rows")
    start = len(app.runs)
    time.sleep(9)  # two polls at least (every 4 s)
    later = app.runs[start:]
    assert len(later) >= 2, app.runs
    assert all(status == 304 and n == 0 for status, n in later), later
    first_loads = [e for e in app.runs[:start] if e[0] == 200]
    assert len(first_loads) == 1, app.runs  # statistics included: no second download


def test_default_metric_is_the_one_tracker_runs_shows_and_sorts_best_first(driver, world) -> None:
    from click.testing import CliRunner

    from tracker.cli import make_cli

    server, store, ids, _ = world
    cli = CliRunner().invoke(make_cli(), ["--store", str(store), "runs", "--project", "basic"])
    metric_cols = cli.output.splitlines()[0].split()[8:]
    driver.get(server.url + "/?project=basic")
    wait(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="rows")
    heads = [h.text.replace("✕", "").strip() for h in css(driver, "table.runs thead th")]
    assert "loss last" in heads and "acc last" not in heads
    assert metric_cols[0] == "loss"
    # the column's decimal points line up (figure spaces after the shorter ones)
    col = heads.index("loss last")
    cells = [r.find_elements("css selector", "td")[col].get_attribute("textContent")
             for r in css(driver, "table.runs tbody tr[data-id]")]
    ends = {len(t) - t.index(".") for t in cells if "." in t}
    assert len(ends) == 1, cells
    # a loss sorts lowest first on the first click, an accuracy highest first
    for label, want_desc in (("loss min", "0"), ("acc max", None)):
        if want_desc is None:
            driver.get(server.url + "/?project=basic&cols=metric:acc:max")
            wait(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="rows")
        button = next(b for b in css(driver, "table.runs thead th button.sort") if b.text.startswith(label))
        button.click()
        wait(driver, lambda d: "sort=metric" in d.current_url, what="sorted")

        def column(d: object, label: str = label, want_desc: str | None = want_desc) -> list[str] | None:
            """The column's cells once they come sorted, read in one go (the rows are redrawn meanwhile)."""
            heads, rows = d.execute_script(  # type: ignore[attr-defined]
                "const t = document.querySelector('table.runs[data-ready]');"
                "if (!t) return [[], []];"
                "return [[...t.querySelectorAll('thead th')].map(h => h.innerText.replace('✕', '').trim()),"
                "        [...t.querySelectorAll('tbody tr[data-id]')].map("
                "            r => [...r.querySelectorAll('td')].map(c => c.innerText.trim()))];")
            col = next((i for i, h in enumerate(heads) if h.startswith(label)), None)
            if col is None or not rows:
                return None
            texts = [r[col] for r in rows]
            values = [float(t) for t in texts if t != "–"]
            numbers_first = all(t != "–" for t in texts[:len(values)])  # missing values last
            return texts if values and numbers_first and values == sorted(values, reverse=want_desc is None) else None

        # Fails (timed out, naming the last rows read) unless the rows come sorted with missing values last.
        texts = wait(driver, column, what=f"the rows sorted by {label}")
        assert sum(t != "–" for t in texts) >= 2, texts
        assert ("desc=0" in driver.current_url) == (want_desc == "0")


# --- numbers ----------------------------------------------------------------------------------

def test_page_numbers_are_the_clis_numbers(driver, world) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tracker.cli.numbers import number

    server, _, _, _ = world
    driver.get(server.url + "/static/index.html")
    values = st.one_of(st.floats(allow_nan=False, allow_infinity=True, width=64),
                       st.floats(min_value=-1e5, max_value=1e5), st.integers(-10**12, 10**12),
                       st.sampled_from([0.002945, 2.467e-9, 3e-4, 0.0701, 1.0625, -0.001, 9999.7, 22528.4]))

    @settings(max_examples=25, deadline=None)
    @given(st.lists(values, min_size=1, max_size=40))
    def check(xs):  # noqa: ANN001
        page = js(driver, "util.js", f"return {json.dumps(xs)}.map((v) => m.fmtNum(v));")
        assert page == [number(x) for x in xs]

    check()
    assert js(driver, "util.js", "return [m.fmtTick(0.0003, 0.0001), m.fmtNum(3e-4)];") == ["3e-4", "3e-4"]


def test_time_axis_labels_are_the_clis_times_on_two_lines(driver, world) -> None:
    from tracker.core.text import when

    server, _, _, _ = world
    driver.get(server.url + "/static/index.html")
    t0 = 1741944413.0  # 2025-03-14 09:26:53 UTC
    ticks = f"[{t0}, {t0 + 30}, {t0 + 86400}]"
    got = js(driver, "chart.js", f"return [m.timeTicks(null, {ticks}, 0, 80, 30), m.TIME_AXIS_SIZE];")
    labels, size = got
    assert labels[0] == f"{when(t0)[11:]}\n{when(t0)[:10]}" and labels[1] == when(t0 + 30)[11:]
    assert labels[2].endswith(when(t0 + 86400)[:10])  # a new day: its date again
    assert size >= 40  # room for both lines
    short = js(driver, "chart.js", f"return m.timeTicks(null, [{t0 + 0.25}, {t0 + 0.5}], 0, 80, 0.25);")
    assert short[1] == when(t0)[11:] + ".50"  # ticks under a second apart differ in their text


# --- the run page ---------------------------------------------------------------------------------

def test_a_crashed_run_says_when_and_where_it_was_last_seen(driver, world) -> None:
    server, _, ids, _ = world
    driver.get(f"{server.url}/runs/{ids['crashed']}")
    wait(driver, lambda d: css(d, '[data-section="charts"] .chart'), what="the charts (the page's last render)")
    note = wait(driver, lambda d: css(d, ".crash-note")[0].text, what="the crash note")
    assert "last record logged" in note.lower() and re.search(r"process \d+ on \S+", note)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", note) and "20 records" in note and "last step 19" in note
    facts = wait(driver, lambda d: css(d, ".run-head .facts")[0].text, what="the facts")
    assert "last seen" in facts


def test_single_values_wrap_at_underscores_and_no_chart_toolbar(driver, world) -> None:
    server, _, ids, _ = world
    driver.get(f"{server.url}/runs/{ids['cards']}")
    h3 = wait(driver, lambda d: css(d, f'.stat-card[data-metric="{LONG_NAME}"] h3'), what="the card")[0]
    # each part between underscores stays on one line (no "sensi|tivity")
    broken = driver.execute_script("""
        const h = arguments[0]; let bad = [];
        for (const n of h.childNodes) if (n.nodeType === 3) {
          const r = document.createRange(); r.selectNodeContents(n);
          const lines = new Set([...r.getClientRects()].map((x) => Math.round(x.top)));
          if (lines.size > 1) bad.push(n.textContent);
        }
        return [bad, h.querySelectorAll('wbr').length, h.getClientRects().length && h.offsetHeight];""", h3)
    assert broken[0] == [] and broken[1] >= 5 and broken[2] > 0
    toolbar = css(driver, ".chart-toolbar")[0]
    assert not toolbar.is_displayed()  # no chart: no x axis, smoothing or filter


def test_system_bytes_image_caption_and_no_stray_null(driver, world) -> None:
    server, _, ids, _ = world
    driver.get(f"{server.url}/runs/{ids['cards']}")
    summaries = wait(driver, lambda d: [s for s in css(d, '[data-section="summaries"]') if "System" in s.text],
                     what="summaries")[0].text
    assert "1.48 GiB" in summaries and "1592320000" not in summaries.replace("\u2009", "")
    label = wait(driver, lambda d: css(d, ".gallery-label"), what="image label")[0].text
    assert label.count("step 5") == 1
    driver.get(f"{server.url}/runs/{ids['ptq']}")
    bars = wait(driver, lambda d: (lambda f: f if len(f) >= 2 else None)(css(d, "figure.fig-bar canvas")), what="bars")
    figs = css(driver, "figure.fig-bar")
    assert all("null" not in f.text for f in figs) and len(bars) >= 2


def test_landscape_cells_are_not_squashed(driver, world) -> None:
    server, _, ids, _ = world
    driver.get(f"{server.url}/runs/{ids['ptq']}")
    canvas = wait(driver, lambda d: css(d, '[data-panel="fft.landscape"] canvas.heatmap'), what="landscape")[0]
    w, h = driver.execute_script("return [arguments[0].clientWidth, arguments[0].clientHeight]", canvas)
    assert w / h < 3.0, (w, h)  # 9 x 5 cells at most 1.25:1 each, plus the axes and the colour scale


def test_one_step_correct_bands_are_visible(driver, world) -> None:
    server, _, ids, _ = world
    driver.get(f"{server.url}/runs/{ids['phase']}")
    canvas = wait(driver, lambda d: css(d, ".fig-line canvas"), what="phase chart")[0]
    time.sleep(0.5)
    # columns of the plot tinted with CORRECT's green (#10b981, 16, 185, 129), strong enough to be seen
    # (alpha 40% on the chart's transparent canvas; a hairline at 16% is what it was)
    cols = driver.execute_script("""
        const c = arguments[0], d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const hit = new Set();
        for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) {
          const i = (y * c.width + x) * 4;
          const green = Math.abs(d[i] - 16) < 30 && Math.abs(d[i+1] - 185) < 30 && Math.abs(d[i+2] - 129) < 30;
          if (green && d[i+3] > 80) hit.add(x);
        }
        return hit.size / (window.devicePixelRatio || 1);""", canvas)
    assert cols >= 3 * 4, cols  # three one-step bands, each at least 4 CSS pixels wide


# --- compare ---------------------------------------------------------------------------------------

def test_compare_aligns_values_under_their_run_and_keeps_colours(driver, world) -> None:
    server, _, ids, _ = world
    pair = [ids["first"], ids["second"]]
    driver.get(f"{server.url}/?project=basic&sel={','.join(pair)}")
    wait(driver, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="rows")
    runs_page = {r.get_attribute("data-id"): driver.execute_script(
        "return getComputedStyle(arguments[0]).backgroundColor", r.find_elements("css selector", ".dot")[0])
        for r in css(driver, "table.runs tbody tr[data-id]") if r.get_attribute("data-id") in pair}
    driver.get(f"{server.url}/compare?runs={','.join(pair)}")
    table = wait(driver, lambda d: css(d, "table.diff"), what="config diff")[0]
    aligns = driver.execute_script("""
        const t = arguments[0];
        return [...t.querySelectorAll('thead th')].slice(1).map((th) => getComputedStyle(th).textAlign)
          .concat([...t.querySelectorAll('tbody td')].map((td) => getComputedStyle(td).textAlign));""", table)
    assert set(aligns) == {"right"}, aligns
    chips = css(driver, ".runs-legend .run-chip")
    dot_colour = "return getComputedStyle(arguments[0]).backgroundColor"
    compare_page = {c.get_attribute("href").rsplit("/", 1)[-1]: driver.execute_script(
        dot_colour, c.find_elements("css selector", ".dot")[0]) for c in chips}
    assert compare_page == runs_page
    assert console_errors(driver) == []


# --- parameters view and a phone ----------------------------------------------------------------

def test_parameters_view_scales_and_defaults(driver, world) -> None:
    server, _, _, _ = world
    driver.get(server.url + "/static/index.html")
    got = js(driver, "params.js", """
        const uniform = Array.from({length: 400}, (_, i) => 1e-4 + (i / 399) * 0.5);
        const loguni = Array.from({length: 400}, (_, i) => 10 ** (-5 + 4 * i / 399));
        const data = {config_keys: ["lr", "depth", "width"], runs: []};
        const rows = [...Array.from({length: 5}, () => ({project: "a", config_flat: {lr: 1, depth: 2}})),
                      ...Array.from({length: 2}, () => ({project: "b", config_flat: {width: 3}}))];
        const d = m.paramsDefaults({pc: [], pm: "", sx: "", sy: ""}, data, "loss", rows);
        return [m.wantsLog(uniform), m.wantsLog(loguni), d.pc, d.keysFrom];""")
    assert got[0] is False and got[1] is True
    assert got[2] == ["lr", "depth"] and got[3] == {"project": "a", "projects": 2}


def test_a_phone_sees_that_the_runs_table_scrolls(world) -> None:
    server, _, _, _ = world
    phone = chrome(*require_chromium(), size="390,844")
    try:
        phone.get(server.url + "/")
        wait(phone, lambda d: css(d, "table.runs[data-ready] tbody tr[data-id]"), what="rows")
        cue = wait(phone, lambda d: [c for c in css(d, ".scroll-cue") if c.is_displayed()], what="the cue")[0]
        assert "scroll" in cue.text
    finally:
        phone.quit()


# --- a store never read -------------------------------------------------------------------------

def _cold_run(store: Path, n: int) -> str:
    with tracker.start_run(project="big", name="cold", store=store, system_metrics=False) as run:
        pass
    seg = next(Path(run.path).glob("*.jsonl"))
    first, finish = seg.read_bytes().splitlines()[:2]
    start_ev, fin_ev = json.loads(first), json.loads(finish)
    w, t0 = start_ev["w"], start_ev["time"]
    with open(seg, "wb") as f:
        f.write(first + b"\n")
        f.write(b"".join(encode_line({"v": 1, "kind": "record", "schema": "metrics", "step": i, "time": t0 + i * 1e-3,
                                      "w": w, "seq": i + 2, "data": {"loss": 1.0 / (i + 1), "acc": math.sin(i)}})
                         for i in range(n)))
        fin_ev.pop("crc")
        fin_ev.update(seq=n + 2, time=t0 + n * 1e-3)
        fin_ev["data"].update(records=n, max_step=n - 1, last={"loss": 1.0 / n, "acc": math.sin(n - 1)})
        f.write(encode_line(fin_ev))
    return run.id


class SlowColumns:
    """ASGI middleware holding back the run page's second request (the one that builds the columns) by
    ``delay`` seconds: the test makes its own cut, so it sees the page while the build is under way
    whatever the machine's speed."""

    def __init__(self, app, delay: float) -> None:  # noqa: ANN001
        self.app, self.delay = app, delay

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        import asyncio

        if scope["type"] == "http" and b"schemas" in scope.get("query_string", b""):
            await asyncio.sleep(self.delay)
        await self.app(scope, receive, send)


def test_a_run_never_read_shows_its_header_first_with_a_progress_line(driver, tmp_path) -> None:
    store = tmp_path / "store"
    rid = _cold_run(store, 100_000)
    assert not (store / "index").exists() or not any((store / "index").rglob("*.idx"))
    with Server(SlowColumns(tracker.ui.create_app(store), 3.0)) as server:
        driver.get(f"{server.url}/runs/{rid}")
        line = wait(driver, lambda d: css(d, ".build-progress"), timeout=10, what="the progress line")[0]
        text = line.text
        head = css(driver, ".run-head h1")[0].text
        charts_then = css(driver, '[data-section="charts"] .chart')
        assert "cold" in head and "for the first time" in text and "MiB of JSONL" in text
        assert charts_then == []  # the header came before the columns were built
        wait(driver, lambda d: css(d, '.chart[data-metric="loss"] [data-points]'), timeout=60, what="the charts")
        assert css(driver, ".build-progress") == []
