"""Shipping to a tracker server: log cost with the remote follower, segment and blob throughput, latency.

Figures, each next to a floor measured in the same script against the same
``tracker server`` process on 127.0.0.1 (plain HTTP on loopback):

- ``run.log`` of 4 floats while the store's follower ships the run to the
  server, against the same loop with no follower (alternating rounds; CPU
  and wall time of the logging process; target 1.05x);
- 1,000,000 records shipped by the shipper (``GET`` where the server is,
  then ``POST`` of complete lines by offset, 8 MiB at a time), against
  ``curl --data-binary`` posting the same bytes in the same requests to the
  same endpoint over one connection (target 1.5x);
- a 1 GiB blob sent by the shipper (``HEAD``, then a streamed ``PUT``),
  against ``curl -T`` of the same file to the same endpoint (target 1.3x);
  each round's blob differs in its last bytes, so the server stores every one;
- the time from ``log`` to the record being in the server's dashboard API
  (``GET /api/runs/{id}/metrics?since=``), a process logging 1,000
  records/s with the follower shipping (median; target 2 s).

Needs ``curl`` and the ``ui`` extra (the server). ``--quick``: small sizes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import FOUR_FLOATS, emit, main_guard, parse_args, scratch, start_follower, with_and_without  # noqa: E402

import tracker  # noqa: E402


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}


class Server:
    """A ``tracker server`` child process over a fresh folder store, with a write key."""

    def __init__(self, folder: Path) -> None:
        self.store = folder / "server-store"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        cli = [sys.executable, "-m", "tracker", "--store", str(self.store)]
        made = subprocess.run([*cli, "keys", "create", "bench", "--scope", "write"], capture_output=True, text=True,
                              env=_env(), check=True)
        self.key = made.stdout.strip().splitlines()[-1]
        self.log = open(folder / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([*cli, "server", "--port", str(self.port)], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
        from tracker.remote.session import RemoteError, Session

        self.session = Session(self.url, key=self.key, attempts=1)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.session.whoami()
                break
            except RemoteError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("tracker server did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.session.close()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _follower(store: Path, server: Server) -> subprocess.Popen:
    """The store's follower shipping to the server (not detached: the script stops it)."""
    return start_follower(store, server.url, TRACKER_API_KEY=server.key)


def bench_log_cost(server: Server, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """Alternating rounds of the same logging loop, without and with the follower shipping the run."""
    n = 20_000 if args.quick else 200_000
    store = tmp / "cost"
    values = dict(FOUR_FLOATS)
    with tracker.start_run("bench", "log-cost", store=store, system_metrics=False) as run:
        run.log(values)
        cpu, wall = with_and_without(lambda i: run.log(values), n, args.repeat, lambda: _follower(store, server))
        rid = run.id
    shipped = sum(server.session.json("GET", f"/api/v1/runs/{rid}/segments")["segments"].values())
    for clock, got in (("cpu", cpu), ("wall", wall)):
        ratios = [w / o for w, o in zip(got["with"], got["without"], strict=True)]
        emit("remote", f"run.log, 4 floats, the follower shipping the run to a server ({clock} time)",
             unit="us/call", calls=n, clock=clock, value=round(statistics.median(got["with"]) * 1e6, 3),
             floor=round(statistics.median(got["without"]) * 1e6, 3), ratio=round(statistics.median(ratios), 3),
             ratio_min=round(min(ratios), 3), ratio_max=round(max(ratios), 3), rounds=args.repeat,
             floor_name="the same loop, no follower", target=1.05, bytes_shipped=shipped)


def _big_run(tmp: Path, n: int) -> tuple[Path, Path]:
    """A store with one run of ``n`` 4-float records (cached between runs of the script); its segment."""
    cache = Path(os.environ.get("TRACKER_BENCH_CACHE") or Path.home() / ".cache" / "tracker-bench") / f"remote-{n}"
    seg = next(cache.glob("runs/*/*.jsonl"), None) if cache.is_dir() else None
    if seg is None:
        shutil.rmtree(cache, ignore_errors=True)
        with tracker.start_run("bench", "million", store=cache, system_metrics=False) as run:
            for _ in range(n):
                run.log(FOUR_FLOATS)
        seg = next(cache.glob("runs/*/*.jsonl"))
    return cache, seg


def _batches(seg: Path, size: int) -> list[tuple[int, bytes]]:
    """The segment's complete lines in batches of about ``size`` bytes (as the shipper cuts them): (offset, bytes)."""
    data = seg.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        end = data.rfind(b"\n", pos, pos + size) + 1
        if end <= pos:
            break
        out.append((pos, data[pos:end]))
        pos = end
    return out


def bench_million(server: Server, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """The shipper against curl posting the same batches to the same endpoint, alternating, fresh run ids."""
    from tracker.remote.shipper import BATCH, Shipper

    n = 50_000 if args.quick else 1_000_000
    _cache, seg = _big_run(tmp, n)
    local = tmp / "million"
    batches = _batches(seg, BATCH)
    chunk_dir = tmp / "chunks"
    chunk_dir.mkdir()
    files = []
    for i, (_off, body) in enumerate(batches):
        (chunk_dir / f"{i}").write_bytes(body)
        files.append(chunk_dir / f"{i}")
    size = seg.stat().st_size
    ours, theirs = [], []
    for k in range(args.repeat):
        rid = f"ship{k}"
        (local / "runs" / rid).mkdir(parents=True)
        os.link(seg, local / "runs" / rid / seg.name)
        t0 = time.perf_counter()
        shipper = Shipper(local, server.session)
        shipper.ship_run(rid)
        ours.append(time.perf_counter() - t0)
        assert shipper.report.bytes == size, (shipper.report.bytes, size)
        cmd = ["curl", "-sS", "--fail", "-o", "/dev/null"]
        for i, (off, _b) in enumerate(batches):
            if i:
                cmd.append("--next")
            cmd += ["-sS", "--fail", "-o", "/dev/null", "-H", f"Authorization: Bearer {server.key}",
                    "-H", "Content-Type: application/x-ndjson", "--data-binary", f"@{files[i]}",
                    f"{server.url}/api/v1/runs/curl{k}/segments/{seg.name}?offset={off}"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        theirs.append(time.perf_counter() - t0)
        got = server.session.json("GET", f"/api/v1/runs/curl{k}/segments")["segments"]
        assert got.get(seg.name) == size, got
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    emit("remote", f"{n:,} records shipped over loopback (the shipper, 8 MiB requests)", unit="s", clock="wall",
         value=round(statistics.median(ours), 3), floor=round(statistics.median(theirs), 3),
         ratio=round(statistics.median(ratios), 3), ratio_min=round(min(ratios), 3), ratio_max=round(max(ratios), 3),
         rounds=args.repeat, bytes=size, requests=len(batches),
         floor_name="curl --data-binary of the same bytes, same requests, one connection", target=1.5)


def _blob_file(path: Path, size: int, round_: int) -> str:
    """``size`` bytes (a random MiB repeated) whose last 8 bytes are the round: a new blob each round."""
    if not path.exists() or path.stat().st_size != size:
        block = os.urandom(1 << 20)
        with open(path, "wb") as f:
            for _ in range(size >> 20):
                f.write(block)
    with open(path, "r+b") as f:
        f.seek(size - 8)
        f.write(round_.to_bytes(8, "big"))
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


def bench_blob(server: Server, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """HEAD + streamed PUT by the session against curl -T, a fresh blob each time, alternating."""
    size = (16 << 20) if args.quick else (1 << 30)
    path = tmp / "blob.bin"
    ours, theirs = [], []
    rounds = min(args.repeat, 3)
    for k in range(rounds):
        sha = _blob_file(path, size, 2 * k)
        t0 = time.perf_counter()
        head = server.session.request("HEAD", f"/api/v1/blobs/sha256/{sha}", ok=(404,))
        assert head.status == 404
        put = server.session.put_file(f"/api/v1/blobs/sha256/{sha}", path, size)
        ours.append(time.perf_counter() - t0)
        assert put.status == 201, put.status
        sha = _blob_file(path, size, 2 * k + 1)
        t0 = time.perf_counter()
        subprocess.run(["curl", "-sS", "--fail", "-o", "/dev/null", "-H", f"Authorization: Bearer {server.key}",
                        "-T", str(path), f"{server.url}/api/v1/blobs/sha256/{sha}"], check=True)
        theirs.append(time.perf_counter() - t0)
        assert server.session.request("HEAD", f"/api/v1/blobs/sha256/{sha}", ok=(404,)).status == 200
    for blob in (server.store / "blobs").rglob("*"):
        if blob.is_file() and blob.stat().st_size >= size:
            blob.unlink()  # the next rounds and scripts need the disk
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    emit("remote", f"a {size >> 20} MiB blob sent (HEAD, then a streamed PUT)", unit="s", clock="wall",
         value=round(statistics.median(ours), 3), floor=round(statistics.median(theirs), 3),
         ratio=round(statistics.median(ratios), 3), ratio_min=round(min(ratios), 3), ratio_max=round(max(ratios), 3),
         rounds=rounds, bytes=size, floor_name="curl -T of the same file to the same endpoint", target=1.3)


LOGGER = textwrap.dedent("""
    import sys, time, tracker
    rate, n = float(sys.argv[1]), int(sys.argv[2])
    with tracker.start_run("bench", "latency", run_id=sys.argv[3], system_metrics=False) as run:
        t0 = time.perf_counter()
        for i in range(n):
            run.log({"t": time.time()}, step=i)
            d = t0 + (i + 1) / rate - time.perf_counter()
            if d > 0:
                time.sleep(d)
""")


def bench_latency(server: Server, tmp: Path, args) -> None:  # noqa: ANN001 - argparse namespace
    """A process logs the time of each `log` at 1,000 records/s; this one polls the dashboard API for it."""
    rate = 1000.0
    n = 2_000 if args.quick else 20_000
    env = _env()
    env.update(TRACKER_URL=server.url, TRACKER_API_KEY=server.key, TRACKER_STORE=str(tmp / "latency"),
               TRACKER_FOLLOWER_LINGER="2")
    rid = "latency"
    proc = subprocess.Popen([sys.executable, "-c", LOGGER, str(rate), str(n), rid], env=env, cwd=str(tmp),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lat: list[float] = []
    seen = 0
    cursor = None
    deadline = time.monotonic() + 120 + n / rate
    while seen < n and time.monotonic() < deadline:
        params = {"names": "t", "max_points": 100000}
        if cursor:
            params["since"] = cursor
        try:
            doc = server.session.json("GET", f"/api/runs/{rid}/metrics", params=params)
        except tracker.TrackerError:
            time.sleep(0.02)
            continue
        now = time.time()
        ys = _values(doc.get("series", {}).get("t"))
        for t in ys:
            lat.append(now - t)
        seen += len(ys)
        cursor = doc.get("cursor") or cursor
        time.sleep(0.02)
    proc.wait(120)
    if not lat:
        raise RuntimeError(f"no record reached the server's dashboard: {proc.stderr.read()[-500:]}")
    lat.sort()
    emit("remote", "latency from log to the server's dashboard API, 1,000 records/s, median", unit="s",
         clock="wall", value=round(lat[len(lat) // 2], 4), p99=round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 4),
         max=round(lat[-1], 4), records=len(lat), missing=n - len(lat), target_value=2.0,
         floor=round(_poll_floor(server), 5), floor_name="one GET of the dashboard API (median round trip)")


def _values(series: object) -> list[float]:
    """The y values of one series of ``/api/runs/{id}/metrics`` (``{"x": [...], "y": [...]}`` or points)."""
    if isinstance(series, dict):
        ys = series.get("y") or series.get("values") or []
        return [float(v) for v in ys if isinstance(v, (int, float))]
    if isinstance(series, list):
        return [float(p[1] if isinstance(p, list) else p) for p in series]
    return []


def _poll_floor(server: Server) -> float:
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        server.session.json("GET", "/api/v1/whoami")
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    if shutil.which("curl") is None:
        raise RuntimeError("curl is not installed (the floor of the throughput figures)")
    with scratch("tracker-bench-remote-") as tmp:
        server = Server(tmp)
        try:
            bench_log_cost(server, tmp, args)
            bench_million(server, tmp, args)
            bench_blob(server, tmp, args)
            bench_latency(server, tmp, args)
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
