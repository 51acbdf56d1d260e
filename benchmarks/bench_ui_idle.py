"""The dashboard kept open, and opened on a store never read (issue 35); run on its own, needs Chromium.

- **An idle runs page of 5,000 runs**: the page open in headless Chromium for
  ``--idle`` seconds (default 40) after its first load; bytes of ``/api/runs``
  answers per second. Baseline, in the same script and the same browser: the
  same page served with ``If-None-Match`` stripped (every poll a full
  listing: what the page cost before the ETag).
- **Time to the run page's header on a store never read** (one run of
  1,000,000 steps, copied afresh for each round so nothing is derived yet):
  in Chromium, from navigation to the header on screen, and to the first
  chart. Baseline: the request the page used to wait for before it drew the
  header (``?parts=info,schemas,metric_names,panels`` on a fresh copy, which
  builds the derived columns).

Usage::

    python benchmarks/bench_ui_idle.py [--quick] [--idle 40]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ui import make_list_store  # noqa: E402
from common import Served, browser, emit, parse_args  # noqa: E402

import tracker.ui  # noqa: E402


class Count:
    """ASGI middleware: bytes and statuses of ``/api/runs`` answers; ``strip`` drops If-None-Match."""

    def __init__(self, app, strip: bool = False) -> None:  # noqa: ANN001
        self.app, self.strip = app, strip
        self.log: list[tuple[float, int, int]] = []  # (time, status, body bytes)

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http" or scope["path"] != "/api/runs":
            await self.app(scope, receive, send)
            return
        if self.strip:
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"if-none-match"]}
        entry = [0, 0]

        async def counted(message: dict) -> None:
            if message["type"] == "http.response.start":
                entry[0] = message["status"]
                # the status line and the headers count too: a 304 is not free
                entry[1] += 17 + sum(len(k) + len(v) + 4 for k, v in message.get("headers", [])) + 2
            elif message["type"] == "http.response.body":
                entry[1] += len(message.get("body", b""))
                if not message.get("more_body"):
                    self.log.append((time.monotonic(), entry[0], entry[1]))
            await send(message)

        await self.app(scope, receive, counted)


def until(driver, css: str, timeout: float = 300.0) -> float:  # noqa: ANN001
    """Poll every 10 ms for ``css``; the monotonic time it appeared."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.find_elements("css selector", css):
            return time.monotonic()
        time.sleep(0.01)
    raise RuntimeError(f"{css} did not appear")


def idle_bytes(driver, store: Path, idle: float, polls: int, strip: bool) -> dict:  # noqa: ANN001
    """Bytes per second of an open, idle runs page: over at least ``idle`` seconds and ``polls`` polls.

    The page polls every 4 s, or every ten times what a listing took when that is longer (a big
    store on a busy machine), so the window runs until enough polls were seen (at most 10 minutes).
    """
    app = Count(tracker.ui.create_app(store), strip=strip)
    with Served(app) as srv:
        driver.get(srv.url + "/")
        until(driver, "table.runs[data-ready] tbody tr[data-id]")
        first = list(app.log)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 600 and (time.monotonic() - t0 < idle or len(app.log) - len(first) < polls):
            time.sleep(0.2)
        window = time.monotonic() - t0
        later = [e for e in app.log if e[0] >= t0]
        driver.get("about:blank")
    return {"first_bytes": sum(n for _, _, n in first), "first_requests": len(first),
            "idle_bytes_per_s": sum(n for _, _, n in later) / window, "polls": len(later), "window_s": window,
            "bytes_per_poll": sum(n for _, _, n in later) / max(1, len(later)),
            "not_modified": sum(1 for _, s, _ in later if s == 304)}


def cold_header(driver, template: Path, rid: str, work: Path) -> tuple[float, float, float]:  # noqa: ANN001
    """(seconds to the header, to the first chart, of the old first request) on fresh copies."""
    store = work / "cold"
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(template, store)
    with Served(tracker.ui.create_app(store)) as srv:
        start = time.monotonic()
        driver.get(f"{srv.url}/runs/{rid}")
        head = until(driver, ".run-head h1") - start
        chart = until(driver, '.chart[data-metric="loss"] [data-points]') - start
        driver.get("about:blank")
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(template, store)
    with Served(tracker.ui.create_app(store)) as srv:
        start = time.monotonic()
        with urllib.request.urlopen(f"{srv.url}/api/runs/{rid}?parts=info,schemas,metric_names,panels") as r:
            r.read()
        old = time.monotonic() - start
    shutil.rmtree(store, ignore_errors=True)
    return head, chart, old


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], idle={"type": float, "default": None, "help": "seconds kept open"})
    idle = args.idle or (10.0 if args.quick else 40.0)
    runs = 500 if args.quick else 5000
    steps = 100_000 if args.quick else 1_000_000
    work = Path(tempfile.mkdtemp(prefix="bench-ui-idle-"))
    driver = browser()
    if driver is None:
        raise RuntimeError("the idle page needs Chromium and chromedriver")
    try:
        store = make_list_store(work, runs)
        polls = 2 if args.quick else 4
        now = idle_bytes(driver, store, idle, polls, strip=False)
        before = idle_bytes(driver, store, idle, polls, strip=True)
        emit("ui_idle", f"idle runs page, {runs:,} runs, bytes per second", value=now["idle_bytes_per_s"],
             floor=before["idle_bytes_per_s"], ratio=now["idle_bytes_per_s"] / max(before["idle_bytes_per_s"], 1),
             unit="B/s", clock="wall", floor_is="the same page with If-None-Match stripped (every poll a full listing)",
             window_s=now["window_s"], polls=now["polls"], not_modified=now["not_modified"],
             bytes_per_poll=now["bytes_per_poll"], before_bytes_per_poll=before["bytes_per_poll"],
             before_window_s=before["window_s"], before_polls=before["polls"], first_bytes=now["first_bytes"],
             first_requests=now["first_requests"], before_first_requests=before["first_requests"])
        template = work / "big"
        rid = _big_run(template, steps)
        rounds = [cold_header(driver, template, rid, work) for _ in range(args.repeat if not args.quick else 1)]
        rounds.sort()
        head, chart, old = (sorted(x)[len(x) // 2] for x in zip(*rounds, strict=True))
        emit("ui_idle", f"run page header on a store never read, {steps:,}-step run", value=head, floor=old,
             ratio=head / old, unit="s", clock="wall",
             floor_is="the request the page waited for before drawing the header (builds the columns)",
             first_chart_s=chart, rounds=len(rounds))
    finally:
        driver.quit()
        shutil.rmtree(work, ignore_errors=True)


def _big_run(store: Path, n: int) -> str:
    """A finished run of ``n`` loss records, written with the core's line encoder (as the tests' big run)."""
    import json
    import math

    from tracker.core.format import encode_line

    with tracker.start_run(project="big", name="million", store=store, system_metrics=False) as run:
        pass
    seg = next(Path(run.path).glob("*.jsonl"))
    first, finish = seg.read_bytes().splitlines()[:2]
    start_ev, fin_ev = json.loads(first), json.loads(finish)
    w, t0 = start_ev["w"], start_ev["time"]
    with open(seg, "wb") as f:
        f.write(first + b"\n")
        for lo in range(0, n, 100_000):
            f.write(b"".join(encode_line({"v": 1, "kind": "record", "schema": "metrics", "step": i,
                                          "time": t0 + i * 1e-3, "w": w, "seq": i + 2,
                                          "data": {"loss": 1.0 / (i + 1) + 0.01 * math.sin(i)}})
                             for i in range(lo, min(n, lo + 100_000))))
        fin_ev.pop("crc")
        fin_ev.update(seq=n + 2, time=t0 + n * 1e-3)
        fin_ev["data"].update(records=n, max_step=n - 1, last={"loss": 1.0 / n})
        f.write(encode_line(fin_ev))
    shutil.rmtree(store / "index", ignore_errors=True)
    return run.id


if __name__ == "__main__":
    main()
