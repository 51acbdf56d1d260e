"""The runs list in pages: ``GET /api/runs?limit=&cursor=&sort=``, a never-read store listed newest first, the
runs page in Chromium asking for pages as it scrolls, and ``tracker runs --limit``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

import tracker
import tracker.ui

from ..childenv import child_environ
from ..runsgen import Adder, write_store
from .support import Server


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = write_store(tmp_path_factory.mktemp("pages"), seed=7, n=250)
    tracker.open_store(path).runs()  # read once: its catalog is built
    return path


@pytest.fixture(scope="module")
def client(store: Path):
    from starlette.testclient import TestClient

    with TestClient(tracker.ui.create_app(store)) as c:
        yield c


def get(client, url: str, status: int = 200) -> dict:
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.text[:300])
    return r.json()


def walk(client, query: str, limit: int) -> list[str]:
    ids: list[str] = []
    cursor = ""
    while True:
        doc = get(client, f"/api/runs?{query}&limit={limit}" + (f"&cursor={cursor}" if cursor else ""))
        assert len(doc["runs"]) <= limit
        ids += [r["id"] for r in doc["runs"]]
        if doc["next"] is None:
            return ids
        cursor = doc["next"]


@pytest.mark.parametrize("query", ["sort=-created_at", "sort=name", "sort=-config.lr", "sort=metric.loss.min",
                                   "sort=-metric.acc.last&project=p", "sort=status&tag=t1", "q=b&sort=id",
                                   "status=failed&sort=-duration"])
def test_pages_walked_by_cursor_are_the_store_s_answer(client, store, query) -> None:
    params = {k: v[0] for k, v in parse_qs(query).items()}
    whole = tracker.open_store(store).runs(**{"tag" if k == "tag" else k: v for k, v in params.items()})
    ids = walk(client, query, 40)
    assert ids == [i.id for i in whole] and len(set(ids)) == len(ids)
    first = get(client, f"/api/runs?{query}&limit=5")
    assert first["matched"] == len(whole) and first["total"] == 250 and first["sort"] == params["sort"]
    # An offset jumps into the same order.
    jump = get(client, f"/api/runs?{query}&limit=5&offset=7")
    assert [r["id"] for r in jump["runs"]] == ids[7:12] and jump["offset"] == 7


def test_an_answer_has_the_choices_from_every_run_and_keeps_its_etag(client) -> None:
    doc = get(client, "/api/runs?limit=3&project=q")
    assert len(doc["runs"]) == 3 and doc["projects"] == ["Q", "p", "q"] and doc["statuses"] == ["failed", "finished"]
    assert doc["tags"] == ["t1", "t2", "t3"] and doc["groups"] == ["g1", "g2"] and doc["job_types"] == ["train"]
    assert {"lr", "opt.name", "flag"} <= set(doc["config_keys"]) and {"loss", "acc"} <= set(doc["metric_names"])
    r = client.get("/api/runs?limit=3&project=q")
    again = client.get("/api/runs?limit=3&project=q", headers={"if-none-match": r.headers["etag"]})
    assert again.status_code == 304 and not again.content
    # Without a limit: every run the filters keep (the answer of 0.5, for clients that do not page).
    everything = get(client, "/api/runs?project=q")
    assert len(everything["runs"]) == everything["matched"] and everything["next"] is None


@pytest.mark.parametrize(("query", "word"), [("sort=bogus", "sort"), ("sort=metric.loss", "sort"), ("limit=0", "limit"),
                                             ("limit=10001", "limit"), ("cursor=zzz&limit=2", "cursor"),
                                             ("offset=-1", "offset"), ("cursor=x&offset=2", "offset")])
def test_a_bad_page_question_is_a_400_naming_it(client, query, word) -> None:
    doc = get(client, f"/api/runs?{query}", 400)
    assert word in doc["error"]


def test_a_cursor_of_another_sort_is_refused(client) -> None:
    nxt = get(client, "/api/runs?limit=2&sort=name")["next"]
    assert "cursor" in get(client, f"/api/runs?limit=2&sort=-name&cursor={nxt}", 400)["error"]


def test_a_page_never_repeats_or_skips_a_run_while_a_writer_adds_runs(tmp_path: Path) -> None:
    """Runs added by another process between page fetches: each run there before shows exactly once."""
    from starlette.testclient import TestClient

    path = write_store(tmp_path, seed=11, n=30)
    before = {i.id for i in tracker.open_store(path).runs()}
    adder = Adder(path)
    try:
        with TestClient(tracker.ui.create_app(path)) as client:
            for sort in ("-created_at", "created_at", "name", "-config.lr"):
                ids: list[str] = []
                cursor = ""
                while True:
                    doc = get(client, f"/api/runs?sort={sort}&limit=4" + (f"&cursor={cursor}" if cursor else ""))
                    ids += [r["id"] for r in doc["runs"]]
                    adder.add(2)  # new runs, newest of all, named and configured to land among the pages
                    if doc["next"] is None:
                        break
                    cursor = doc["next"]
                assert len(ids) == len(set(ids)), sort
                assert before <= set(ids), sort
    finally:
        adder.close()
    assert len(tracker.open_store(path).runs()) > len(before) + 20  # the writer did add runs meanwhile


def test_a_never_read_store_lists_its_newest_runs_first_then_the_rest(tmp_path: Path, monkeypatch) -> None:
    from starlette.testclient import TestClient

    from tracker.ui import runlist

    path = write_store(tmp_path, seed=5, n=40)
    by_age = sorted((p.stat().st_mtime_ns, p.name) for p in (path / "runs").iterdir())
    newest10 = {name for _, name in by_age[-10:]}
    monkeypatch.setattr(runlist, "FIRST_CHUNK", 10)
    opened = tracker.open_store(path)
    plain = opened.catalog

    def slow(*args, **kwargs):  # the rest takes a while to build, as at 10,000 runs
        if kwargs.get("ids") is not None and len(kwargs["ids"]) > 10:
            time.sleep(1.0)
        return plain(*args, **kwargs)

    opened.catalog = slow
    with TestClient(tracker.ui.create_app(opened)) as client:
        first = get(client, "/api/runs?limit=100")
        assert first["building"] == {"done": 10, "total": 40}
        assert {r["id"] for r in first["runs"]} == newest10
        deadline = time.time() + 20
        while True:
            doc = get(client, "/api/runs?limit=100")
            if "building" not in doc or time.time() > deadline:
                break
            time.sleep(0.2)
        assert "building" not in doc and doc["total"] == 40 and len(doc["runs"]) == 40


@pytest.mark.parametrize("big", [False, True])
def test_a_sort_s_pages_follow_runs_resumed_and_edited(tmp_path: Path, monkeypatch, big: bool) -> None:
    """A sort's pages come from sort columns made per catalog version (for a big store, in the thread that
    reads the catalog): a run resumed with a new minimum, or renamed, moves in the very next answers."""
    from starlette.testclient import TestClient

    from tracker.ui import runlist

    path = write_store(tmp_path, seed=13, n=30)
    tracker.open_store(path).runs()
    if big:  # checked in the background, its columns made there before each version is published
        monkeypatch.setattr(runlist, "BIG", 10)
        monkeypatch.setattr(runlist, "QUICK_S", 0.0)

    def agrees(client, sort: str) -> list[str]:
        want = [i.id for i in tracker.open_store(path).runs(sort=sort)]
        deadline = time.time() + 30
        while True:
            got = walk(client, f"sort={sort}", 7)
            if got == want or time.time() > deadline:
                assert got == want, sort
                return got
            time.sleep(0.3)

    with TestClient(tracker.ui.create_app(path)) as client:
        get(client, "/api/runs?limit=5")
        before = {s: agrees(client, s) for s in ("metric.loss.min", "-name", "-config.lr")}
        rid = before["metric.loss.min"][-1]
        with tracker.start_run(store=path, run_id=rid, resume=True, system_metrics=False, console=False,
                               environment=False) as run:
            run.log({"loss": -100.0})
        assert agrees(client, "metric.loss.min")[0] == rid
        other = before["-name"][-1]
        tracker.open_store(path).rename(other, "\uffff")  # the last name becomes the first
        assert agrees(client, "-name")[0] == other
        agrees(client, "-config.lr")


def test_a_big_store_s_first_page_lists_no_run_folder(tmp_path: Path, monkeypatch) -> None:
    """A big store read before, its runs folder unchanged since: the dashboard's first page of the newest
    runs lists no run folder and parses only its rows (counted); the whole catalog is read afterwards."""
    import os
    import threading

    from starlette.testclient import TestClient

    from tracker.read.index import catalog
    from tracker.read.reader import Store
    from tracker.ui import runlist

    path = write_store(tmp_path, seed=17, n=40)
    old = time.time() - 60
    os.utime(path / "runs", (old, old))  # a runs folder nobody added to lately
    want = [i.id for i in tracker.open_store(path).runs()]  # read once: its catalog and run table written
    monkeypatch.setattr(runlist, "BIG", 10)
    seen = {"listed": 0, "parsed": 0}
    run_ids, decode = Store.run_ids, catalog.decode_info

    def asked() -> bool:  # by a request (not by a dashboard's reading thread, of this test or an earlier one)
        return threading.current_thread().name != "tracker-runlist"

    def counting_run_ids(self: Store) -> list[str]:
        seen["listed"] += asked()
        return run_ids(self)

    def counting_decode(*args, **kwargs):
        seen["parsed"] += asked()
        return decode(*args, **kwargs)

    monkeypatch.setattr(Store, "run_ids", counting_run_ids)
    monkeypatch.setattr(catalog, "decode_info", counting_decode)
    with TestClient(tracker.ui.create_app(path)) as client:
        first = get(client, "/api/runs?limit=5")
        assert [r["id"] for r in first["runs"]] == want[:5] and first["total"] == 40
        assert first.get("choices_pending") is True
        assert seen == {"listed": 0, "parsed": 5}
        deadline = time.time() + 20
        while "choices_pending" in get(client, "/api/runs?limit=5") and time.time() < deadline:
            time.sleep(0.1)
        assert walk(client, "sort=-created_at", 7) == want


# --- the runs page in Chromium ----------------------------------------------------------------------

def _wait(driver, predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
        except Exception:  # noqa: BLE001 - the page is still drawing
            last = None
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def test_the_runs_page_asks_for_pages_as_it_scrolls_and_keeps_sort_and_filters_in_the_url(driver, store) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    everything = tracker.open_store(store).runs()
    with Server(tracker.ui.create_app(store)) as server:
        driver.get(server.url + "/")
        table = _wait(driver, lambda: driver.find_element(By.CSS_SELECTOR, "table.runs[data-ready='1']"),
                      what="the first page")
        assert table.get_attribute("data-loaded") == "100" and table.get_attribute("data-matched") == "250"
        first_rows = [tr.get_attribute("data-id") for tr in driver.find_elements(By.CSS_SELECTOR, "tbody tr[data-id]")]
        assert first_rows[:5] == [i.id for i in everything[:5]]
        scroller = driver.find_element(By.CSS_SELECTOR, ".scroller")
        for want in ("200", "250"):
            driver.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight", scroller)
            _wait(driver, lambda w=want: table.get_attribute("data-loaded") == w, what=f"{want} rows loaded")
        # At the bottom, the last rows drawn are the store's last runs in this order.
        driver.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight", scroller)
        _wait(driver, lambda: [tr.get_attribute("data-id") for tr in
                               driver.find_elements(By.CSS_SELECTOR, "tbody tr[data-id]")][-3:]
              == [i.id for i in everything[-3:]], what="the last runs at the bottom")
        # A sort is the server's, and lives in the URL.
        driver.find_element(By.XPATH, "//th//button[starts-with(normalize-space(.), 'name')]").click()
        _wait(driver, lambda: "sort=name" in driver.current_url, what="sort in the URL")
        by_name = tracker.open_store(store).runs(sort="name")
        _wait(driver, lambda: [tr.get_attribute("data-id") for tr in
                               driver.find_elements(By.CSS_SELECTOR, "tbody tr[data-id]")][:5]
              == [i.id for i in by_name[:5]], what="rows sorted by name")
        # A filter too; a copied URL reopens the same rows.
        Select(driver.find_element(By.CSS_SELECTOR, "select[aria-label=project]")).select_by_value("Q")
        _wait(driver, lambda: "project=Q" in driver.current_url, what="filter in the URL")
        kept = tracker.open_store(store).runs(project="Q", sort="name")
        _wait(driver, lambda: table.get_attribute("data-matched") == str(len(kept)), what="the filtered count")
        url = driver.current_url
        assert parse_qs(urlparse(url).query)["sort"] == ["name"]
        driver.get(url)
        _wait(driver, lambda: [tr.get_attribute("data-id") for tr in
                               driver.find_elements(By.CSS_SELECTOR, "tbody tr[data-id]")][:len(kept)][:20]
              == [i.id for i in kept[:20]], what="the same rows after a reload")
        assert not [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


# --- tracker runs --limit ----------------------------------------------------------------------------

def tracker_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tracker", *args], capture_output=True, text=True, env=child_environ(),
                          timeout=120)


def test_tracker_runs_limit_prints_the_newest_runs_and_how_many_more(tmp_path: Path) -> None:
    path = write_store(tmp_path, seed=3, n=30)
    for _ in range(2):  # a store never read, then read (its catalog answers the page)
        res = tracker_cli("--store", str(path), "runs", "--limit", "4")
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        newest = tracker.open_store(path).runs()[:4]
        assert len(lines) == 2 + 4 + 1
        assert [line.split()[0] for line in lines[2:6]] == [i.id[:8] for i in newest]
        assert lines[-1].startswith("... 26 more runs (4 of 30 shown, newest first)") and "--all" in lines[-1]
    doc = json.loads(tracker_cli("--store", str(path), "runs", "--limit", "3", "--format", "json").stdout)
    assert [d["id"] for d in doc] == [i.id for i in newest[:3]]
    failed = json.loads(tracker_cli("--store", str(path), "runs", "-n", "2", "--status", "failed",
                                    "--format", "json").stdout)
    assert [d["id"] for d in failed] == [i.id for i in tracker.open_store(path).runs(status="failed")[:2]]
    everything = tracker_cli("--store", str(path), "runs", "--all")
    assert len(everything.stdout.splitlines()) == 2 + 30
