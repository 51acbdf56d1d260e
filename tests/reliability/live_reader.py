"""The reading side of the live-store test, run as a real child process.

``python live_reader.py STORE ACKS GO WRITERS READ``: imports everything
first and prints ``ready``; once the parent has created the file ``GO`` and
every writer has acknowledged a few records, it reads the store once, the
way a user does, while the writers go on logging. ``READ`` is one of:

- ``runs``: ``tracker runs --format json`` (the CLI's command);
- ``api_runs``: ``GET /api/runs`` of the dashboard's app;
- ``metrics_w0``, ``metrics_ranks``: ``open_store(STORE).run(ID).metrics()``;
- ``show``: ``tracker show w0``;
- ``api_metrics``: ``GET /api/runs/w0/metrics?names=k``;
- ``query``: ``tracker query`` counting each run's ``k`` values.

Before the read it takes the writers' acknowledged counts (the last number
in each ``ACKS/c<i>.out``); it prints one JSON line with those counts, the
seconds the read took and what it found, for the parent to check.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path


def acked(acks: Path) -> dict[str, int]:
    """Per writer (``c<i>``), the records it has acknowledged so far."""
    out = {}
    for f in sorted(acks.glob("c*.out")):
        lines = [ln.split() for ln in f.read_text().split("\n")[:-1]]
        counts = [int(ln[0]) for ln in lines if ln and ln[0].isdigit()]
        out[f.stem] = counts[-1] if counts else 0
    return out


def reader(store: Path, name: str) -> Callable[[], object]:
    """The read ``name`` of ``store``, ready to call (its modules imported, its app built)."""
    from click.testing import CliRunner
    from starlette.testclient import TestClient

    import tracker
    import tracker.ui
    from tracker.cli import make_cli

    cli = make_cli()
    runner = CliRunner()
    client = TestClient(tracker.ui.create_app(store)).__enter__() if name.startswith("api") else None

    def cli_json(*args: str) -> object:
        res = runner.invoke(cli, ["--store", str(store), *args], catch_exceptions=False)
        if res.exit_code != 0:
            raise SystemExit(f"tracker {' '.join(args)}: exit {res.exit_code}: {res.output}")
        return json.loads(res.stdout)

    def runs() -> object:
        return {r["id"]: r["records"] for r in cli_json("runs", "--format", "json")}

    def api_runs() -> object:
        assert client is not None
        r = client.get("/api/runs")
        r.raise_for_status()
        return {row["id"]: row["records"] for row in r.json()["runs"]}

    def metrics(run_id: str) -> object:
        cols = tracker.open_store(store).run(run_id).metrics()
        out: dict[str, int] = {}
        for c in cols["c"].astype(int).tolist():
            out[f"c{c}"] = out.get(f"c{c}", 0) + 1
        return out

    def show() -> object:
        res = runner.invoke(cli, ["--store", str(store), "show", "w0"], catch_exceptions=False)
        return {"exit": res.exit_code, "names_run": "w0" in res.output}

    def api_metrics() -> object:
        assert client is not None
        r = client.get("/api/runs/w0/metrics?names=k")
        r.raise_for_status()
        return {"k_max": max(v for v in r.json()["series"]["k"]["y_max"] if v is not None)}

    def query() -> object:
        rows = cli_json("query", "select run_id, count(*) as n from metrics where name = 'k' group by run_id",
                        "--format", "json")
        return {row["run_id"]: row["n"] for row in rows}

    return {"runs": runs, "api_runs": api_runs, "metrics_w0": lambda: metrics("w0"),
            "metrics_ranks": lambda: metrics("ranks"), "show": show, "api_metrics": api_metrics,
            "query": query}[name]


def main() -> None:
    store, acks, go, writers, name = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), \
        sys.argv[5]
    import tracker

    # The same read once on a small store of the same runs first, so that every module it imports
    # on first use is imported before the clock starts, as in a process that has read before.
    warm = store.with_name(f"warm-{name}")
    for rid in ("w0", "ranks"):
        with tracker.start_run(project="burst", store=warm, run_id=rid) as run:
            run.log({"c": 0 if rid == "w0" else 6, "k": 0, "x": 0.0})
    reader(warm, name)()
    fn = reader(store, name)
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    # Every writer under way.
    while len(acked(acks)) < writers or min(acked(acks).values()) < 1000:
        time.sleep(0.005)
    before = acked(acks)
    t0 = time.perf_counter()
    found = fn()
    print(json.dumps({"read": name, "acked": before, "seconds": time.perf_counter() - t0, "found": found}),
          flush=True)
    os._exit(0)  # the app's client and the writers' files need no orderly teardown


if __name__ == "__main__":
    main()
