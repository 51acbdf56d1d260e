"""A lab of 100,000 runs of 10 steps: the runs list's first rows, a sorted or filtered page, ``tracker runs``,
the server's memory, and a never-read store's first row.

The folder store is made once by :mod:`labstore` (segment lines written with the store's own encoder) and
cached under ``benchmarks/.cache/``; its catalog is built by the first read and cached with it. The team
database is a sync of the lab's first 1,000 runs, cloned in SQL to 100,000 (each copy its own id and start
time, with its writers, figures and columns): seconds, so it is made again at each run, not cached.

Each measurement runs the real thing: ``tracker ui`` in its own process (its resident memory read from
``/proc``), headless Chromium opening the runs page (first rows: the page's ``runs-first-paint`` mark,
from navigation start), ``tracker runs`` as a command. Floors, measured the same way in the same run: the
page over an empty store (what the page costs with nothing to list), ``GET /api/runs?limit=100`` of the
default order (what a sorted or filtered page is next to), ``tracker --version`` (the interpreter and the
CLI), and the server's memory over an empty store.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import browser, main_guard, parse_args, scratch  # noqa: E402
from common import emit as _emit  # noqa: E402
from labstore import fresh_copy, lab_store, write_runs  # noqa: E402

import tracker  # noqa: E402

CLONED = ["tracker_runs", "tracker_writers", "tracker_events", "tracker_writer_figures", "tracker_metric_chunks",
          "tracker_metric_values", "tracker_changes"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UiProcess:
    """``tracker --store STORE ui --no-open`` in its own process, ready when its page answers."""

    def __init__(self, store: str) -> None:
        self.port = free_port()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        self.proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", store, "ui", "--no-open",
                                      "--port", str(self.port)], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/static/style.css", timeout=5):
                    break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    said = self.proc.stderr.read().decode()[-500:] if self.proc.poll() is not None else ""
                    raise RuntimeError("tracker ui did not start: " + said) from None
                time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def cpu_s(self) -> float:
        """CPU seconds the server has used (user and system, all its threads)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def settle(self, quiet: float = 1.0, timeout: float = 120.0) -> None:
        """Wait until the server has used no CPU for ``quiet`` seconds (the sort columns it makes in the
        background after a new sort's first page are done), at most ``timeout`` seconds."""
        deadline = time.time() + timeout
        last = self.cpu_s()
        while time.time() < deadline:
            time.sleep(quiet)
            now = self.cpu_s()
            if now - last < 0.02:
                return
            last = now

    def get(self, query: str) -> float:
        """Seconds ``GET /api/runs?query`` takes (the body read)."""
        t0 = time.perf_counter()
        with urllib.request.urlopen(f"{self.url}/api/runs?{query}", timeout=600) as r:
            r.read()
        return time.perf_counter() - t0

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def first_rows(driver, url: str, timeout: float = 120) -> float:  # noqa: ANN001
    """Seconds from navigation to the runs page's first rows drawn (its ``runs-first-paint`` mark)."""
    driver.get("about:blank")
    driver.get(url)
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = driver.execute_script("return window.__runsFirstPaint || null")
        if got:
            rows = driver.execute_script("return document.querySelectorAll('tbody tr[data-id]').length")
            empty = driver.execute_script("return !!document.querySelector('.empty')")
            if rows or empty:
                return got / 1000
        time.sleep(0.02)
    raise RuntimeError(f"no rows at {url} within {timeout} s")


def team_database(n: int, tmp: Path) -> tuple[str, object | None]:
    """A database of ``n`` runs: a sync of the lab's first ``min(n, 1000)``, cloned in SQL."""
    import psycopg
    from bench_team import database  # the benchmarks' PostgreSQL: TRACKER_BENCH_PG or a server of its own

    from tracker.team.postgres import sync

    url, server = database()
    base = min(n, 1000)
    src = tmp / f"sync-{base}"
    write_runs(src, base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(tracker.open_store(src), url)
    copies = n // base
    with psycopg.connect(url) as conn:
        for table in CLONED:
            cols = [r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND is_generated = 'NEVER' "
                "ORDER BY ordinal_position",
                (table,)).fetchall()]

            def expr(c: str, table: str = table) -> str:
                if c == "run_id":
                    return "run_id || 'c' || g"
                if c == "stamp":
                    return "nextval('tracker_change_seq')"
                if (table, c) == ("tracker_runs", "created_at"):
                    return "created_at + g * 86400.0"
                if (table, c) == ("tracker_runs", "info"):
                    return ("jsonb_set(info::jsonb, '{created_at}', to_jsonb((info->>'created_at')::float8 "
                            "+ g * 86400.0))::json")
                return c
            sel = ", ".join(expr(c) for c in cols)
            conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {sel} FROM {table}, "  # noqa: S608
                         f"generate_series(1, %s) AS g", (copies - 1,))
        conn.commit()
        conn.execute("ANALYZE")
    return url, server


def emit(benchmark: str, name: str, **fields: object) -> None:
    """A measurement's line, with the machine's load average then (the machine is shared)."""
    fields.setdefault("load", round(os.getloadavg()[0], 1))
    _emit(benchmark, name, **fields)


CPU: list[float] = []


def timed(*argv: str) -> float:
    """Seconds ``tracker ARGV`` takes as a command of its own (its CPU seconds appended to :data:`CPU`)."""
    import resource

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tracker", *argv], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def first_pages(ui: UiProcess, label: str, n: int, base: list[float], what: str, sorts: tuple[str, ...]) -> None:
    """Each of ``sorts`` (a sort, with filters after ``&``) asked once of ``ui``: the median of those first pages,
    beside the median of the newest-first pages ``base``; ``what`` is the measurement's name (``{}``: how many)."""
    firsts, cpus = [], []
    for sort in sorts:
        c0 = ui.cpu_s()
        firsts.append(ui.get(f"limit=100&sort={sort}"))
        cpus.append(ui.cpu_s() - c0)
    v = median(firsts)
    emit("lab", f"GET /api/runs, {what.format(len(sorts))}, {label} of {n:,} runs", unit="s", clock="wall",
         value=round(v, 4), floor=round(median(base), 4),
         floor_name="GET /api/runs?limit=100 (newest first) on the same server", ratio=round(v / median(base), 2),
         rounds=len(sorts), target="<= 0.3 s", met=v <= 0.3, max_s=round(max(firsts), 3),
         each_s=[round(x, 3) for x in firsts], server_cpu_s=round(median(cpus), 3))


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    n, cold_n = (300, 300) if args.quick else (100_000, 10_000)
    rounds = 1 if args.quick else max(1, min(args.repeat, 3))
    driver = browser()
    if driver is None:
        raise RuntimeError("needs Chromium and chromedriver")
    t0 = time.perf_counter()
    folder = lab_store(n)
    made = time.perf_counter() - t0
    with scratch() as tmp:
        empty = tmp / "empty"
        url, server = team_database(n, tmp) if not args.only or "team" in args.only else ("", None)
        try:
            floor_ui = UiProcess(str(empty))
            try:
                floor_page = [first_rows(driver, floor_ui.url + "/") for _ in range(rounds)]
                floor_rss = floor_ui.rss_mb()
            finally:
                floor_ui.close()
            parts = args.only.split(",") if args.only else ["folder", "team", "cold"]
            for where, store in (("folder", str(folder)), ("team", url)):
                if where not in parts:
                    continue
                label = "a folder store" if where == "folder" else "the team database (PostgreSQL)"
                # The first rows of a server just started: its first request reads nothing kept in memory.
                firsts, cpus = [], []
                for _ in range(rounds):
                    ui = UiProcess(store)
                    try:
                        c0 = ui.cpu_s()
                        firsts.append(first_rows(driver, ui.url + "/"))
                        cpus.append(ui.cpu_s() - c0)
                    finally:
                        ui.close()
                v = median(firsts)
                emit("lab", f"runs page, first rows in Chromium, {label} of {n:,} runs, server just started",
                     unit="s", clock="wall", value=round(v, 3), floor=round(median(floor_page), 3),
                     floor_name="the same page over an empty store", ratio=round(v / median(floor_page), 2),
                     rounds=rounds, target="<= 1 s", met=v <= 1.0, setup_s=round(made, 1),
                     server_cpu_s=round(median(cpus), 3))
                ui = UiProcess(store)
                try:
                    first_rows(driver, ui.url + "/")
                    for _ in range(40):  # the page's whole catalog, read in the background, answers what follows
                        if "choices_pending" not in urllib.request.urlopen(f"{ui.url}/api/runs?limit=1").read()\
                                .decode():
                            break
                        time.sleep(0.5)
                    ui.get("limit=100")
                    base = [ui.get("limit=100") for _ in range(rounds * 3)]
                    for name, query in (("sorted by a metric's min", "limit=100&sort=-metric.loss.min"),
                                        ("sorted by a config key", "limit=100&sort=config.lr"),
                                        ("filtered by project and status", "limit=100&project=rl&status=failed")):
                        c0 = ui.cpu_s()
                        first = ui.get(query)
                        first_cpu = ui.cpu_s() - c0
                        again = [ui.get(query.replace("limit=100", f"limit={100 + i}")) for i in range(rounds * 3)]
                        v = median(again)
                        emit("lab", f"GET /api/runs, a page {name}, {label} of {n:,} runs", unit="s", clock="wall",
                             value=round(v, 4), floor=round(median(base), 4),
                             floor_name="GET /api/runs?limit=100 (newest first) on the same server",
                             ratio=round(v / median(base), 2), rounds=rounds * 3, target="<= 0.3 s", met=v <= 0.3,
                             first_s=round(first, 3), first_server_cpu_s=round(first_cpu, 3))
                    # More sorts never asked before on this server, each asked once: its first page.
                    first_pages(ui, label, n, base, "the first page of a sort never asked before ({} sorts)",
                                ("metric.acc.max", "-metric.loss.last", "config.batch", "-config.optim.name",
                                 "-name", "status"))
                    rss = ui.rss_mb()
                    emit("lab", f"tracker ui resident memory after the first pages, {label} of {n:,} runs",
                         unit="MB", value=round(rss, 1), floor=round(floor_rss, 1),
                         floor_name="tracker ui over an empty store", ratio=round(rss / floor_rss, 2),
                         target="<= 500 MB", met=rss <= 500)
                    # After the memory above: sorts by a run's end and duration, tag and text filters (a text
                    # some runs hold, sorted two ways, and one none does), over PostgreSQL layout 6's values and
                    # columns; asked once the server is idle again (not while it makes the columns of the sorts
                    # above).
                    ui.settle()
                    first_pages(ui, label, n, base, "the first page by ended_at, duration, a tag or a text filter "
                                "({} queries)", ("-ended_at", "duration", "-created_at&tag=exp3",
                                                 "-created_at&q=speech-4", "-metric.loss.min&q=speech-4",
                                                 "config.lr&q=no-such-run"))
                finally:
                    ui.close()
                # tracker runs --limit 50, a fresh process each time.
                floor = [timed("--version") for _ in range(rounds * 2)]
                CPU.clear()
                value = [timed("--store", store, "runs", "--limit", "50") for _ in range(rounds * 2)]
                v = median(value)
                cpu = median(CPU)
                emit("lab", f"tracker runs --limit 50, {label} of {n:,} runs", unit="s", clock="wall",
                     value=round(v, 3), floor=round(median(floor), 3), floor_name="tracker --version",
                     ratio=round(v / median(floor), 2), rounds=rounds * 2, target="<= 1 s", met=v <= 1.0,
                     cpu_s=round(cpu, 3))
            # A store nobody has read: its first rows while its catalog builds.
            firsts = []
            CPU.clear()
            for r in range(rounds if "cold" in parts else 0):
                cold = fresh_copy(cold_n, tmp / f"cold{r}")
                ui = UiProcess(str(cold))
                try:
                    c0 = ui.cpu_s()
                    firsts.append(first_rows(driver, ui.url + "/"))
                    CPU.append(ui.cpu_s() - c0)
                finally:
                    ui.close()
                shutil.rmtree(cold, ignore_errors=True)
            v = median(firsts) if firsts else None
            if v is not None:
                emit("lab", f"runs page, first rows in Chromium, a never-read folder store of {cold_n:,} runs",
                     unit="s", clock="wall", value=round(v, 3), floor=round(median(floor_page), 3),
                     floor_name="the same page over an empty store", ratio=round(v / median(floor_page), 2),
                     rounds=rounds, target="<= 2 s", met=v <= 2.0, server_cpu_s=round(median(CPU), 3))
        finally:
            driver.quit()
            if server is not None:
                server.stop()


if __name__ == "__main__":
    raise SystemExit(main_guard(body, parse_args(__doc__.splitlines()[0], only={
        "default": None, "help": "comma-separated parts to measure: folder, team, cold (default: all)"})))
