"""Groups and reports: ``store.aggregate``, the runs page grouped by a config key, ``tracker report``.

Figures (wall clock, medians over rounds that alternate subject and floor):

- ``store.aggregate("loss", by=None)`` over 100 runs of 100,000 steps, warm
  (derived data built, files in the page cache): the mean and ±1 std band on a
  1,000-point grid, per-bucket min and max, counts. Floor: numpy's ``mean`` and
  ``std`` over the same 100 arrays, already stacked in memory. Target: within 1 s.
- The runs page of 5,000 runs opened grouped by a config key in headless
  Chromium: from navigation to the group rows drawn. Floor: the same page
  ungrouped, to its rows drawn. Then regrouping in the page (the menu changed:
  5,000 runs folded again) next to a re-sort (a header clicked). Target: within 1 s.
  Also ``GET /api/aggregate`` of the page's chart over the 5,000 runs, first and again.
- ``tracker report`` of 10 runs of 1,000,000 steps (its build and write, warm):
  time and file size; and cold (``cold_s``: a store never read, whose first
  listing builds every run's derived data from its 1,000,000 lines). Floor:
  ``view.metrics()`` of the same 10 runs, what any report of them must read.
  Targets: under 3 MB, within 5 s.

``--quick``: 10 runs of 10,000 steps, 300 runs on the page, 10 runs of 20,000 steps.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from common import Served, browser, emit, main_guard, parse_args, scratch  # noqa: E402

import tracker  # noqa: E402
from tracker.core.format import encode_line  # noqa: E402


def seeded_segment(root: Path, name: str, steps: int, seed: int, config: dict) -> Path:
    """A finished run of ``steps`` loss records (a seed's noise), written by the API then the line encoder."""
    with tracker.start_run(project="bench", name=name, store=root, config=config, system_metrics=False) as run:
        pass
    (seg,) = Path(run.path).glob("*.jsonl")
    import json

    first = seg.read_bytes().splitlines()[0]
    start = json.loads(first)
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 0.01, steps)
    with open(seg, "wb") as f:
        f.write(first + b"\n")
        for s0 in range(0, steps, 100_000):
            f.write(b"".join(encode_line({"v": 1, "kind": "record", "schema": "metrics", "step": i,
                                          "time": start["time"] + i * 1e-3, "w": start["w"], "seq": i + 2,
                                          "data": {"loss": 1.0 / (i + 1) + float(noise[i])}})
                             for i in range(s0, min(steps, s0 + 100_000))))
    return seg


def linked_store(root: Path, runs: int, steps: int, distinct: int) -> Path:
    """``runs`` runs whose segments are ``distinct`` seeds' files, hard-linked (the disk holds ``distinct``)."""
    seeds = [seeded_segment(root / "seeds", f"seed{k}", steps, k, {"seed": k}) for k in range(distinct)]
    store = root / "store"
    for i in range(runs):
        folder = store / "runs" / f"run{i:05d}"
        folder.mkdir(parents=True)
        os.link(seeds[i % distinct], folder / seeds[i % distinct].name)
    return store


def bench_aggregate(root: Path, runs: int, steps: int, rounds: int) -> None:
    store_path = linked_store(root / "agg", runs, steps, distinct=10)
    store = tracker.open_store(store_path)
    store.aggregate("loss", by=None)  # builds every run's derived columns (hard links: not a cold figure)
    arrays = np.vstack([store.run(i.id).metrics()["loss"] for i in store.runs()])

    def subject() -> float:
        t = time.perf_counter()
        store.aggregate("loss", by=None, max_points=1000)
        return time.perf_counter() - t

    def floor() -> float:
        t = time.perf_counter()
        arrays.mean(axis=0)
        arrays.std(axis=0)
        return time.perf_counter() - t

    subj, base = [], []
    for _ in range(rounds):
        base.append(floor())
        subj.append(subject())
    value, fl = statistics.median(subj), statistics.median(base)
    emit("groups", f"store.aggregate('loss') over {runs} runs of {steps:,} steps, warm (1,000-point grid, mean, "
                   "std band, min/max, counts)", value=round(value, 4), unit="s", floor=round(fl, 4),
         ratio=round(value / fl, 2), floor_is="numpy mean and std over the same arrays stacked in memory",
         target="<= 1 s", met=value <= 1.0, rounds=rounds)


def page_store(root: Path, runs: int) -> Path:
    """``runs`` runs of 100 steps each, with lr (4 values) and seed in their config."""
    import json

    with tracker.start_run(project="bench", name="t", store=root / "tmpl", config={"lr": 0.1, "seed": 0},
                           system_metrics=False) as run:
        for i in range(100):
            run.log({"loss": 1.0 / (i + 1), "acc": i / 100}, step=i)
    (seg,) = Path(run.path).glob("*.jsonl")
    lines = seg.read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])
    store = root / "page"
    for i in range(runs):
        folder = store / "runs" / f"run{i:05d}"
        folder.mkdir(parents=True)
        ev = dict(first)
        ev["data"] = {**first["data"], "name": f"r{i}", "config": {"lr": [0.1, 0.01, 0.001, 0.0001][i % 4],
                                                                   "seed": i // 4}}
        ev.pop("crc", None)
        (folder / seg.name).write_bytes(encode_line(ev) + b"".join(lines[1:]))
    tracker.open_store(store).runs()  # the catalog, as any first reader builds it
    return store


def until(driver, script: str, timeout: float = 60.0):  # noqa: ANN001, ANN201
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = driver.execute_script(script)
        if got:
            return got
        time.sleep(0.01)
    raise RuntimeError(f"timed out: {script}")


def bench_page(root: Path, runs: int, rounds: int) -> None:
    store = page_store(root, runs)
    driver = browser()
    if driver is None:
        emit("groups", "the runs page grouped: skipped (no chromium or chromedriver)", value=0, unit="s", floor=None)
        return
    grouped, flat, regroup, resort = [], [], [], []
    mark = ("return document.querySelector('table.runs[data-groups]') && "
            "document.querySelectorAll('tr.group-row').length ? performance.now() : null")
    rows = ("return window.__runsFirstPaint && document.querySelectorAll('table.runs tbody tr[data-id]').length "
            "? window.__runsFirstPaint : null")
    import tracker.ui

    with Served(tracker.ui.create_app(store)) as srv:
        url = f"http://127.0.0.1:{srv.port}/"
        try:
            driver.get(url)  # a first load: the server's listing cache and the browser's module cache
            until(driver, rows)
            for _ in range(rounds):
                driver.get(url)
                flat.append(until(driver, rows) / 1000)
                driver.get(url + "?groupby=config.lr")
                grouped.append(until(driver, mark) / 1000)
                # In the page: fold the 5,000 runs by another key, and (the floor) sort them again.
                regroup.append(driver.execute_script("""
                    const sel = document.querySelector('select[data-group-by]');
                    const t = performance.now();
                    sel.value = 'config.seed'; sel.dispatchEvent(new Event('change'));
                    return performance.now() - t;""") / 1000)
                resort.append(driver.execute_script("""
                    const b = [...document.querySelectorAll('table.runs th button.sort')]
                      .find((x) => x.textContent.startsWith('name'));
                    const t = performance.now();
                    b.click();
                    return performance.now() - t;""") / 1000)
            from starlette.testclient import TestClient

            import tracker.ui

            client = TestClient(tracker.ui.create_app(store), base_url="http://127.0.0.1")
            t = time.perf_counter()
            client.get("/api/aggregate?metrics=loss&by=config.lr")
            first = time.perf_counter() - t
            again = []
            for _ in range(rounds):
                t = time.perf_counter()
                client.get("/api/aggregate?metrics=loss&by=config.lr")
                again.append(time.perf_counter() - t)
        finally:
            driver.quit()
    g, f = statistics.median(grouped), statistics.median(flat)
    emit("groups", f"the runs page of {runs:,} runs opened grouped by config.lr (navigation to group rows drawn)",
         value=round(g, 3), unit="s", floor=round(f, 3), ratio=round(g / f, 2),
         floor_is="the same page ungrouped, navigation to its rows drawn", target="<= 1 s", met=g <= 1.0,
         rounds=rounds)
    r, s = statistics.median(regroup), statistics.median(resort)
    emit("groups", f"regrouping the {runs:,} runs in the page (group by config.seed chosen)", value=round(r, 4),
         unit="s", floor=round(s, 4), ratio=round(r / s, 2), floor_is="a re-sort of the same page (a header clicked)",
         rounds=rounds)
    emit("groups", f"GET /api/aggregate of the grouped page's chart over {runs:,} runs, first request then again",
         value=round(statistics.median(again), 3), unit="s", floor=None, first_s=round(first, 3), rounds=rounds)


def bench_report(root: Path, runs: int, steps: int, rounds: int) -> None:
    from tracker.ui.report import build, write

    store_path = linked_store(root / "rep", runs, steps, distinct=runs)
    t = time.perf_counter()  # cold: a store never read (the listing builds every run's derived data), then the report
    store = tracker.open_store(store_path)
    infos = store.runs()
    build(store, infos)
    cold = time.perf_counter() - t
    out = root / "report.html"

    def subject() -> float:
        t = time.perf_counter()
        write(out, build(store, infos))
        return time.perf_counter() - t

    def floor() -> float:
        t = time.perf_counter()
        for i in infos:
            store.run(i.id).metrics()
        return time.perf_counter() - t

    subj, base = [], []
    for _ in range(rounds):
        base.append(floor())
        subj.append(subject())
    value, fl = statistics.median(subj), statistics.median(base)
    size = out.stat().st_size
    emit("groups", f"tracker report of {runs} runs of {steps:,} steps (build and write, warm)", value=round(value, 3),
         unit="s", floor=round(fl, 3), ratio=round(value / fl, 2), floor_is="view.metrics() of the same runs",
         target="<= 5 s", met=value <= 5.0, cold_s=round(cold, 2), rounds=rounds)
    emit("groups", f"the size of that report ({runs} runs x {steps:,} steps, 1,000 points per series)",
         value=round(size / 1e6, 3), unit="MB", floor=None, target="< 3 MB", met=size < 3e6,
         bytes_per_point=round(size / (runs * 1000), 1))


def main(args) -> None:  # noqa: ANN001 - the parsed options
    for var in ("TRACKER_RUN_ID", "TRACKER_STORE", "TRACKER_CONFIG"):
        os.environ.pop(var, None)
    rounds = args.repeat
    with scratch("tracker-bench-groups-") as root:
        if args.quick:
            bench_aggregate(root, 10, 10_000, rounds)
            bench_page(root, 300, rounds)
            bench_report(root, 10, 20_000, rounds)
        else:
            bench_aggregate(root, 100, 100_000, rounds)
            bench_page(root, 5_000, rounds)
            bench_report(root, 10, 1_000_000, rounds)


if __name__ == "__main__":
    sys.exit(main_guard(main, parse_args(__doc__.splitlines()[0])))
