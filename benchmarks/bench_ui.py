"""The dashboard's API (``tracker ui``): the runs list, and one metric of a 1,000,000-record run.

Requests go through Starlette's test client (the whole app: routing, JSON,
headers), CPU time of the process (the app's threads included).

- ``GET /api/runs`` over 5,000 runs; floor: ``store.runs()``, the reading API's
  listing the endpoint is built on.
- ``GET /api/runs/{id}/metrics?names=loss&max_points=2000`` of a run of
  1,000,000 records: the first request (a fresh app, nothing cached), and a
  repeated request after 100 new records were appended (without and with
  ``since``). Floor for all three: reading the same data with
  ``view.metrics()`` and slicing it to 2,000 points (``loss[::500]``), what a
  server without downsampling or offsets would do on every request.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, main_guard, parse_args, scratch  # noqa: E402

import tracker  # noqa: E402
from tracker.core.format import encode_line  # noqa: E402


def cpu(fn) -> float:  # noqa: ANN001
    start = time.process_time()
    fn()
    return time.process_time() - start


def make_list_store(root: Path, runs: int) -> Path:
    """``runs`` runs: one real finished run's segment hard-linked into every run folder."""
    with tracker.start_run(project="bench", name="ui-list", store=root / "tmpl",
                           config={"lr": 0.01, "optim": {"name": "adam"}}, tags=["bench"]) as run:
        for i in range(100):
            run.log({"loss": 1.0 / (i + 1), "acc": i / 100}, step=i)
    (seg,) = Path(run.path).glob("*.jsonl")
    store = root / "list"
    for i in range(runs):
        folder = store / "runs" / f"run{i:05d}"
        folder.mkdir(parents=True)
        os.link(seg, folder / seg.name)
    return store


def lines(w: str, t0: float, start: int, n: int) -> bytes:
    """``n`` metrics records (loss and acc) from step ``start``, as the writer encodes them."""
    return b"".join(encode_line({"v": 1, "kind": "record", "schema": "metrics", "step": i, "time": t0 + i * 1e-3,
                                 "w": w, "seq": i + 2, "data": {"loss": 1.0 / (i + 1), "acc": math.sin(i)}})
                    for i in range(start, start + n))


def make_big_run(root: Path, n: int) -> tuple[Path, str, Path, str, float]:
    """A run of ``n`` records (its start event written by the API, records by the line encoder)."""
    store = root / "big"
    with tracker.start_run(project="bench", name="million", store=store) as run:
        pass
    (seg,) = Path(run.path).glob("*.jsonl")
    first = seg.read_bytes().splitlines()[0]
    import json

    start = json.loads(first)
    with open(seg, "wb") as f:
        f.write(first + b"\n")
        for s in range(0, n, 100_000):
            f.write(lines(start["w"], start["time"], s, min(100_000, n - s)))
    return store, run.id, seg, start["w"], start["time"]


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    import warnings

    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

    import tracker.ui

    n_runs, n_records = (300, 50_000) if args.quick else (5_000, 1_000_000)
    rounds = max(1, min(args.repeat, 3)) if args.quick else args.repeat
    with scratch() as tmp:
        store = make_list_store(tmp, n_runs)
        opened = tracker.open_store(store)
        with TestClient(tracker.ui.create_app(opened)) as client:
            value, floor = [], []
            for _ in range(rounds):
                floor.append(cpu(opened.runs))
                value.append(cpu(lambda: client.get("/api/runs").raise_for_status()))
            assert len(client.get("/api/runs").json()["runs"]) == n_runs
        emit("ui", f"GET /api/runs, {n_runs:,} runs", unit="s", clock="cpu", floor_name="store.runs()",
             value=round(median(value), 4), floor=round(median(floor), 4),
             ratio=round(median([v / f for v, f in zip(value, floor, strict=True)]), 3), rounds=rounds)
        bench_page(store, n_runs, rounds)

        big, rid, seg, w, t0 = make_big_run(tmp, n_records)
        step = n_records // 2000
        url = f"/api/runs/{rid}/metrics?names=loss&max_points=2000"

        def floor_read() -> None:
            cols = tracker.open_store(big).run(rid).metrics()
            [cols["step"][::step].tolist(), cols["loss"][::step].tolist()]

        first, repeat, since, floors = [], [], [], []
        appended = n_records
        for _ in range(rounds):
            floors.append(cpu(floor_read))
            with TestClient(tracker.ui.create_app(big)) as client:
                box = {}
                first.append(cpu(lambda: box.setdefault("r", client.get(url))))  # noqa: B023
                body = box["r"].json()
                assert len(body["series"]["loss"]["x"]) == 2000
                with open(seg, "ab") as f:
                    f.write(lines(w, t0, appended, 100))
                appended += 100
                repeat.append(cpu(lambda: client.get(url).raise_for_status()))  # noqa: B023
                with open(seg, "ab") as f:
                    f.write(lines(w, t0, appended, 100))
                appended += 100
                box = {}
                since.append(cpu(lambda: box.setdefault("r", client.get(url + "&since=" + body["cursor"]))))  # noqa: B023
                assert box["r"].json()["records"] == 200
        f0 = median(floors)
        for name, xs in ((f"metrics, 1 of {n_records:,} records, max_points=2000: first request", first),
                         ("the same, repeated after 100 new records", repeat),
                         ("the same with since=cursor (only new records returned)", since)):
            emit("ui", name, unit="s", clock="cpu", floor_name="view.metrics() + slicing to 2,000 points",
                 value=round(median(xs), 4), floor=round(f0, 4),
                 ratio=round(median([x / f for x, f in zip(xs, floors, strict=True)]), 4), rounds=rounds,
                 records=n_records)


FIRST_PAINT = """
const done = arguments[arguments.length - 1];
const t0 = performance.now();
(function poll() {
  if (window.__runsFirstPaint) return done(window.__runsFirstPaint);
  if (performance.now() - t0 > 60000) return done(null);
  setTimeout(poll, 5);
})();
"""

FLOOR_FETCH = """
const done = arguments[arguments.length - 1];
const t0 = performance.now();
fetch('/api/runs').then((r) => r.json()).then((d) => done([performance.now() - t0, d.runs.length]));
"""

# A click (or keystroke) and the time until the rows are drawn again: the page asks the server for the sorted or
# filtered page (GET /api/runs?sort=...&limit=...), then draws it (two frames after the answer arrived). Typing
# waits 250 ms before asking (the filter's debounce), which the figure includes.
TIMED = """
const [what] = arguments; const done = arguments[arguments.length - 1];
const asked = () => performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/runs')).length;
const n0 = asked();
const t0 = performance.now();
if (what === 'sort') document.querySelectorAll('table.runs th button.sort')[0].click();
else { const f = document.querySelector('input[data-filter]'); f.value = what; f.dispatchEvent(new Event('input')); }
(function poll() {
  if (asked() > n0) return requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
  if (performance.now() - t0 > 30000) return done(null);
  setTimeout(poll, 2);
})();
"""

# The floor of a sort or a filter: the page's own request for the first page in that order, fetched and parsed.
FLOOR_SORT = """
const done = arguments[arguments.length - 1];
const t0 = performance.now();
fetch('/api/runs?limit=100&sort=name').then((r) => r.json()).then((d) => done(performance.now() - t0));
"""



def bench_page(store: Path, n_runs: int, rounds: int) -> None:
    """The runs page in headless Chromium: first paint, sort and filter (see the module's docstring)."""
    import shutil
    import socket
    import threading

    import uvicorn

    import tracker.ui

    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_bin):
        emit("ui", "runs page in a browser", skipped="needs Debian's chromium and chromium-driver")
        return
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(tracker.ui.create_app(store), host="127.0.0.1", port=port,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1440,900"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(options=opts, service=Service(driver_bin))
    drv.set_script_timeout(90)
    url = f"http://127.0.0.1:{port}/"
    try:
        drv.get(url)
        drv.execute_async_script(FIRST_PAINT)  # the first listing builds the catalog
        paint, fetch, sort, sort_floor, filt = [], [], [], [], []
        for _ in range(rounds):
            drv.get(url)
            paint.append(drv.execute_async_script(FIRST_PAINT))
            fetch.append(drv.execute_async_script(FLOOR_FETCH)[0])
            sort_floor.append(drv.execute_async_script(FLOOR_SORT))
            sort.append(drv.execute_async_script(TIMED, "sort"))
            filt.append(drv.execute_async_script(TIMED, "run0001"))
            assert None not in sort + filt, "a sort or a filter never asked the server for its page"
    finally:
        drv.quit()
        server.should_exit = True
        thread.join(10)
    for name, xs, fl, floor_name in (
            (f"runs page, {n_runs:,} runs: first paint", paint, fetch, "fetch + JSON parse of /api/runs in the page"),
            (f"runs page, {n_runs:,} runs: sort by a column (the server's sorted page, drawn)", sort, sort_floor,
             "fetch + JSON parse of that page in the page"),
            (f"runs page, {n_runs:,} runs: filter as typed (250 ms debounce, the server's page, drawn)", filt,
             sort_floor, "fetch + JSON parse of a sorted page in the page")):
        ratios = [x / max(f, 0.01) for x, f in zip(xs, fl, strict=True)]
        emit("ui", name, unit="ms", clock="wall", floor_name=floor_name, value=round(median(xs), 1),
             floor=round(median(fl), 2), ratio=round(median(ratios), 2), rounds=rounds)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
