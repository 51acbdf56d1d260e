"""The read path over derived columns: reading costs what the columns cost, listing what the catalog costs.

Each figure has its floor measured in the same script:
- ``view.metrics()`` of a 1,000,000-step x 4-metric run in a fresh process,
  once the run has been read before, against ``np.load`` of the same four
  columns saved as ``.npy`` files (in the same fresh process);
- the first read ever (no derived data yet: it is built) against today's
  JSON parsing path, ``view.metrics()`` with ``TRACKER_INDEX=off``;
- ``tracker show`` and the dashboard's first ``GET /api/runs/ID`` (a fresh
  app) of the long run against the same for a 1,000-step run;
- ``tracker runs`` and ``GET /api/runs?stats=loss`` over 10,000 runs once the
  catalog exists, per run;
- ``run.log`` into a store whose derived data exists against one without
  (writers never touch derived data).
Fresh processes are timed inside the child (CPU time of the call, imports
excluded) or, for whole commands, by wall clock from the parent.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FOUR_FLOATS, emit, main_guard, parse_args, per_call, scratch, side_by_side  # noqa: E402

import tracker  # noqa: E402
from tracker.read.index import catalog  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

CHILD_METRICS = """
import json, sys, time
import numpy as np
import tracker
store, run_id, npy = sys.argv[1], sys.argv[2], sys.argv[3]
names = ("loss", "acc", "lr", "grad_norm")
[np.load(f"{npy}/{k}.npy") for k in names]  # numpy's loading code and the page cache warm
view = tracker.open_store(store).run(run_id)
t = time.process_time()
cols = view.metrics()
spent = time.process_time() - t
t = time.process_time()
floor = [np.load(f"{npy}/{k}.npy") for k in names]
floor_spent = time.process_time() - t
assert all((cols[k] == f).all() for k, f in zip(names, floor))
print(json.dumps({"metrics": spent, "np_load": floor_spent}))
"""

# The bare parse: every line of the segment through orjson.loads, the metrics into arrays.
# The same read with its imports: from a process that has imported numpy (as the floor has) to the columns in
# hand, every module the read imports included (compiled modules cached, as a user's Python keeps them).
CHILD_METRICS_COLD = """
import json, sys, time
import numpy as np
store, run_id, npy, which = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
names = ("loss", "acc", "lr", "grad_norm")
t = time.process_time()
if which == "tracker":
    import tracker
    cols = tracker.open_store(store).run(run_id).metrics()
else:
    cols = {k: np.load(f"{npy}/{k}.npy") for k in names}
print(json.dumps({"spent": time.process_time() - t, "n": len(cols["loss"])}))
"""

CHILD_BARE_PARSE = """
import json, sys, time
from array import array
from pathlib import Path
import numpy as np, orjson
(seg,) = Path(sys.argv[1]).glob("*.jsonl")
t = time.process_time()
with open(seg, "rb") as f:
    lines = f.read().split(b"\\n")[:-1]
step, cols, loads = array("q"), {}, orjson.loads
for line in lines:
    ev = loads(line)
    if ev["kind"] == "record" and ev["schema"] == "metrics":
        step.append(ev["step"])
        for k, v in ev["data"].items():
            a = cols.get(k)
            if a is None:
                a = cols[k] = array("d")
            a.append(v)
out = {k: np.frombuffer(a) for k, a in cols.items()}
print(json.dumps({"parse": time.process_time() - t}))
"""

CHILD_API = """
import json, sys, time
from starlette.testclient import TestClient
import tracker.ui
store, run_id = sys.argv[1], sys.argv[2]
client = TestClient(tracker.ui.create_app(store), base_url="http://127.0.0.1")
# What the run page asks for first: its header and the names of its charts (run.js, EARLY),
# then the series of a chart.
t = time.perf_counter()
r = client.get(f"/api/runs/{run_id}?parts=info,schemas,metric_names,panels")
assert r.status_code == 200, r.text
first = time.perf_counter() - t
r = client.get(f"/api/runs/{run_id}/metrics?names=loss")
assert r.status_code == 200, r.text
print(json.dumps({"wall": first, "chart": time.perf_counter() - t - first}))
"""

CHILD_LIST_API = """
import json, sys, time
from starlette.testclient import TestClient
import tracker.ui
store = sys.argv[1]
client = TestClient(tracker.ui.create_app(store), base_url="http://127.0.0.1")
t = time.perf_counter()
r = client.get("/api/runs?stats=loss")
took = time.perf_counter() - t  # the request; the client's parse of the answer is the page's cost
assert r.status_code == 200 and len(r.json()["runs"]) == int(sys.argv[2]), r.text[:200]
print(json.dumps({"wall": took, "bytes": len(r.content)}))
"""


def env(index: bool = True) -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # As a user's Python runs commands: compiled modules are cached, not compiled at every start.
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["TRACKER_INDEX"] = "on" if index else "off"
    return out


def child(code: str, *args: str, index: bool = True) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env(index), capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, env=env(), capture_output=True, check=True)
    return time.perf_counter() - t


def make_run(store: Path, n: int, run_id: str) -> str:
    values = dict(FOUR_FLOATS)
    with tracker.start_run(project="bench", name=run_id, store=store, run_id=run_id, system_metrics=False) as run:
        log = run.log
        for i in range(n):
            values["loss"] = 1.0 / (i + 1)
            log(values, step=i)
    return run_id


def median_ratio(pairs: list[tuple[float, float]]) -> dict:
    ratios = [s / f for s, f in pairs]
    return {"value": round(statistics.median(s for s, _ in pairs) * 1e3, 3),
            "floor": round(statistics.median(f for _, f in pairs) * 1e3, 3),
            "ratio": round(statistics.median(ratios), 3), "ratio_min": round(min(ratios), 3),
            "ratio_max": round(max(ratios), 3), "rounds": len(pairs)}


def reading(tmp: Path, n: int, rounds: int) -> None:
    import numpy as np

    store = tmp / "store"
    make_run(store, n, "long")
    cols = tracker.open_store(store).run("long").metrics()
    npy = tmp / "npy"
    npy.mkdir()
    for k in ("loss", "acc", "lr", "grad_norm"):
        np.save(npy / f"{k}.npy", cols[k])
    del cols
    # Once read before: the derived columns exist.
    pairs = []
    for _ in range(rounds):
        got = child(CHILD_METRICS, str(store), "long", str(npy))
        pairs.append((got["metrics"], got["np_load"]))
    emit("index", f"view.metrics() in a fresh process, read before, {n:,} x 4 floats", unit="ms", clock="cpu",
         floor_name="np.load of the same four columns", target=10.0, **median_ratio(pairs))
    # With the imports a read needs (DESIGN: "imports included"), each side in a fresh process of its own.
    pairs = [(child(CHILD_METRICS_COLD, str(store), "long", str(npy), "tracker")["spent"],
              child(CHILD_METRICS_COLD, str(store), "long", str(npy), "numpy")["spent"]) for _ in range(rounds)]
    emit("index", f"open_store(p).run(id).metrics() in a fresh process, imports included, {n:,} x 4 floats",
         unit="ms", clock="cpu", floor_name="np.load of the same four columns in a fresh process (numpy imported "
         "by both)", target=10.0, **median_ratio(pairs))
    # The first read ever: derived data built, against today's JSON parsing path and the bare parse.
    pairs, bare = [], []
    for _ in range(rounds):
        plain = child(CHILD_METRICS, str(store), "long", str(npy), index=False)["metrics"]
        parse = child(CHILD_BARE_PARSE, str(store / "runs" / "long"))["parse"]
        shutil.rmtree(store / "index", ignore_errors=True)
        first = child(CHILD_METRICS, str(store), "long", str(npy))["metrics"]
        pairs.append((first, plain))
        bare.append((first, parse))
    emit("index", f"view.metrics(), first read ever (builds the columns), {n:,} x 4 floats", unit="ms",
         clock="cpu", floor_name="view.metrics() parsing the JSONL (TRACKER_INDEX=off)", **median_ratio(pairs))
    emit("index", f"view.metrics(), first read ever, against the bare parse, {n:,} x 4 floats", unit="ms",
         clock="cpu", floor_name="orjson.loads of every line into arrays", target=1.3, **median_ratio(bare))


def first_read_small(tmp: Path, rounds: int, n: int = 20_000) -> None:
    """The first read ever of a small run (DESIGN: at most 1.5x a bare parse), in fresh processes."""
    import numpy as np

    store = tmp / "small"
    make_run(store, n, "small")
    npy = tmp / "npy-small"
    npy.mkdir()
    cols = tracker.open_store(store).run("small").metrics()
    for k in ("loss", "acc", "lr", "grad_norm"):
        np.save(npy / f"{k}.npy", cols[k])
    bare = []
    for _ in range(rounds):
        shutil.rmtree(store / "index", ignore_errors=True)
        first = child(CHILD_METRICS, str(store), "small", str(npy))["metrics"]
        bare.append((first, child(CHILD_BARE_PARSE, str(store / "runs" / "small"))["parse"]))
    emit("index", f"view.metrics(), first read ever, against the bare parse, {n:,} x 4 floats", unit="ms",
         clock="cpu", floor_name="orjson.loads of every line into arrays", target=1.5, **median_ratio(bare))


def long_against_short(tmp: Path, n: int, rounds: int) -> None:
    store = tmp / "store"
    if not (store / "runs" / "long").exists():
        make_run(store, n, "long")
    make_run(store, 1000, "short")
    exe = str(Path(sys.executable).with_name("tracker"))
    tracker.open_store(store).runs()
    for rid in ("long", "short"):
        tracker.open_store(store).run(rid).summarize()
    pairs = [(wall([exe, "--store", str(store), "show", "long"]), wall([exe, "--store", str(store), "show", "short"]))
             for _ in range(rounds)]
    emit("index", f"tracker show of a {n:,}-step run", unit="ms", clock="wall",
         floor_name="tracker show of a 1,000-step run", target=3.0, **median_ratio(pairs))
    got = [(child(CHILD_API, str(store), "long"), child(CHILD_API, str(store), "short")) for _ in range(rounds)]
    emit("index", f"GET /api/runs/ID on a fresh app (the run page's first request), {n:,}-step run", unit="ms",
         clock="wall", floor_name="the same for a 1,000-step run", target=3.0,
         **median_ratio([(a["wall"], b["wall"]) for a, b in got]))
    emit("index", f"then its first chart (GET /api/runs/ID/metrics?names=loss), {n:,}-step run", unit="ms",
         clock="wall", floor_name="the same for a 1,000-step run",
         **median_ratio([(a["chart"], b["chart"]) for a, b in got]))


def listing(tmp: Path, runs: int, rounds: int) -> None:
    tmpl = tmp / "tmpl"
    make_run(tmpl, 100, "tmpl")
    (seg,) = (tmpl / "runs" / "tmpl").glob("*.jsonl")
    store = tmp / f"list-{runs}"
    for i in range(runs):
        folder = store / "runs" / f"run{i:05d}"
        folder.mkdir(parents=True)
        shutil.copyfile(seg, folder / seg.name)
    t = time.perf_counter()
    tracker.open_store(store).runs()  # builds the catalog
    emit("index", f"building the catalog of {runs:,} runs of 100 records", unit="s", clock="wall",
         value=round(time.perf_counter() - t, 3), rounds=1)
    # The catalog as any later listing finds it: entries derived within a clock tick of their files'
    # last change are checked by content once more, then marked settled.
    time.sleep(catalog.SETTLE_NS / 1e9)
    tracker.open_store(store).runs()
    exe = str(Path(sys.executable).with_name("tracker"))
    floor = [wall([sys.executable, "-c", "import tracker"]) for _ in range(rounds)]
    cli = [wall([exe, "--store", str(store), "runs", "--format", "json"]) for _ in range(rounds)]
    api = [child(CHILD_LIST_API, str(store), str(runs)) for _ in range(rounds)]

    def inproc() -> float:
        st = tracker.open_store(store)
        t = time.process_time()
        st.runs()
        return time.process_time() - t

    def ends() -> float:
        # The floor: the first line and the last 4 KiB of every segment parsed (what listing read before).
        import orjson

        t = time.process_time()
        for entry in os.scandir(store / "runs"):
            for seg in os.scandir(entry.path):
                with open(seg.path, "rb") as f:
                    orjson.loads(f.readline())
                    size = os.fstat(f.fileno()).st_size
                    f.seek(max(0, size - 4096))
                    orjson.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
        return time.process_time() - t

    res = side_by_side(lambda: inproc() / runs, lambda: ends() / runs, rounds)
    emit("index", f"Store.runs() from the catalog, {runs:,} runs", unit="us/run", clock="cpu",
         floor_name="first line + last 4 KiB per segment, parsed", target_value=30.0, **res)
    emit("index", f"tracker runs --format json, {runs:,} runs", unit="s", clock="wall",
         value=round(statistics.median(cli), 3), floor=round(statistics.median(floor), 3),
         floor_name="python -c 'import tracker'", target_value=0.5, rounds=rounds)
    emit("index", f"GET /api/runs?stats=loss on a fresh app, {runs:,} runs", unit="s", clock="wall",
         value=round(statistics.median(a["wall"] for a in api), 3), target_value=0.5, rounds=rounds,
         note=f"{api[0]['bytes'] / 1e6:.1f} MB of JSON")


def logging(tmp: Path, rounds: int) -> None:
    with_index = tmp / "log-with"
    without = tmp / "log-without"
    make_run(with_index, 1000, "old")
    tracker.open_store(with_index).run("old").metrics()
    assert (with_index / "index").is_dir()
    values = dict(FOUR_FLOATS)
    runs = [tracker.start_run(store=s, system_metrics=False) for s in (with_index, without)]
    try:
        res = side_by_side(lambda: per_call(lambda i: runs[0].log(values), 20_000),
                           lambda: per_call(lambda i: runs[1].log(values), 20_000), rounds)
    finally:
        for r in runs:
            r.finish()
    emit("index", "run.log, 4 floats, a store with derived data", unit="us/call", clock="cpu",
         floor_name="run.log into a store without", target=1.05, **res)


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    n = 20_000 if args.quick else 1_000_000
    runs = 300 if args.quick else 10_000
    rounds = 2 if args.quick else min(args.repeat, 5)
    with scratch() as tmp:
        reading(tmp, n, rounds)
        if n != 20_000:
            first_read_small(tmp, rounds)
        long_against_short(tmp, n, rounds)
        listing(tmp, runs, rounds)
        logging(tmp, rounds)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
