"""Reading a store over HTTP: ``open_store("http://127.0.0.1:P")`` and ``tracker --store http://...`` against
a real server process give the answers of the server's own store.

One store (runs of two projects: metrics with a NaN, console lines, an environment, an artifact and a
run that used it) is served by a real server process; each test asks the same question of the folder
and of the URL and compares.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli
from tracker.core.errors import RunNotFound, StoreError

from ..sysdeps import require_curl
from .readsupport import make_store, same


@pytest.fixture(scope="module")
def served(server_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, dict[str, str], str]:
    """``(store, server, ids, read key)``: the store of readsupport served by a real ``tracker server``."""
    tmp = tmp_path_factory.mktemp("remote-read")
    store = tmp / "store"
    ids = make_store(store, tmp)
    server = server_factory(store=store)
    return store, server, ids, server.make_key("reader", "read")


@pytest.fixture(autouse=True)
def _client_env(served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process reads with the read key, a blob cache of the test's own, and no key file of the user's."""
    monkeypatch.setenv("TRACKER_API_KEY", served[3])
    monkeypatch.setenv("TRACKER_BLOB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def stores(served) -> tuple[Any, Any, dict[str, str]]:
    store, server, ids, _ = served
    return tracker.open_store(store), tracker.open_store(server.url), ids


def test_runs_info_and_paging(stores) -> None:
    from tracker.read.protocol import BlobReader, RunReader, StoreReader

    folder, remote, ids = stores
    assert type(remote).__name__ == "RemoteStore"
    assert isinstance(remote, StoreReader) and isinstance(remote.run("alpha"), RunReader)
    assert isinstance(remote.blobs, BlobReader)
    assert same(remote.runs(), folder.runs())
    assert [i.name for i in remote.runs()] == ["gamma", "beta", "alpha"]
    assert same(remote.runs(project="vision"), folder.runs(project="vision"))
    assert same(remote.runs(tag="base"), folder.runs(tag="base"))
    assert remote.run_ids() == folder.run_ids()
    # Paged as the store pages: one run a page, each cursor leading to the next, the same runs in the same order.
    seen, cursor = [], None
    while True:
        page = remote.runs(limit=1, cursor=cursor)
        assert len(page) == 1 and page.total == 3
        seen.append(page[0].id)
        cursor = page.next
        if cursor is None:
            break
    assert seen == [i.id for i in folder.runs()]
    for kw in ({"group": "g1"}, {"sort": "name"}, {"sort": "-metric.loss.min", "limit": 2}, {"q": "gam"},
               {"sort": "config.lr", "offset": 1, "limit": 1}, {"tag": ["base"], "project": "vision"}):
        got, want = remote.runs(**kw), folder.runs(**kw)
        assert same(list(got), list(want)), kw
        assert (got.total, got.next is None) == (want.total, want.next is None), kw
    with pytest.raises(tracker.TrackerError, match="400 sort"):
        remote.runs(sort="nope", limit=3)
    # The catalog's per-metric figures (what `tracker runs -m` and data frames show).
    assert {e.info.id: e.metrics for e in remote.catalog()} == {e.info.id: e.metrics for e in folder.catalog()}


def test_run_by_prefix_and_name(stores) -> None:
    folder, remote, ids = stores
    for ref in (ids["alpha"], ids["alpha"][:8], "alpha"):
        assert same(remote.run(ref).info, folder.run(ref).info)
    with pytest.raises(RunNotFound, match="no run matches 'nope'"):
        remote.run("nope")


def test_metrics_records_summaries(stores) -> None:
    folder, remote, ids = stores
    for name in ("alpha", "beta", "gamma"):
        r, f = remote.run(ids[name]), folder.run(ids[name])
        a, b = r.metrics(), f.metrics()
        assert list(a) == list(b)
        for k in a:
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k], equal_nan=True), k
            assert a[k].tobytes() == b[k].tobytes(), k  # bit for bit: a logged NaN and a missing value differ
        assert same(list(r.records()), list(f.records()))
        assert same(list(r.records("console")), list(f.records("console")))
        assert r.schemas() == f.schemas()
        assert same(r.metric_stats(), f.metric_stats())
        assert repr(r.summarize()) == repr(f.summarize())
    assert remote.run(ids["alpha"]).dataframe().equals(folder.run(ids["alpha"]).dataframe())
    assert remote.dataframe().equals(folder.dataframe())


def test_logs_env_diff_compare_lineage(stores) -> None:
    from tracker.read.environment import run_environment

    folder, remote, ids = stores
    a_env = run_environment(remote.run(ids["alpha"]), remote.blobs)
    f_env = run_environment(folder.run(ids["alpha"]), folder.blobs)
    assert a_env is not None and a_env["package_list"]
    assert same(a_env, f_env)
    assert same(remote.lineage("model:v0"), folder.lineage("model:v0"))
    assert same(remote.lineage(ids["beta"]), folder.lineage(ids["beta"]))
    assert [c.qualified for c in remote.registry().names()] == ["vision/model"]


def test_artifact_bytes_and_sha(stores, tmp_path: Path) -> None:
    folder, remote, ids = stores
    with remote.run(ids["alpha"]).open_artifact("model") as f:
        got = f.read()
    with folder.run(ids["alpha"]).open_artifact("model") as f:
        assert got == f.read()
    art = remote.artifact("model:best")
    assert art.sha256 == hashlib.sha256(got).hexdigest() == folder.artifact("model:best").sha256
    out = remote.run(ids["alpha"]).copy_artifact("model", tmp_path / "copy.bin")
    assert hashlib.sha256(out.read_bytes()).hexdigest() == art.sha256
    with remote.blobs.open(art.sha256) as f:
        assert f.read() == got


def test_damaged_blob_is_a_store_error_naming_it(served) -> None:
    store, server, ids, _ = served
    url = server.url
    data = b"precious bytes " * 100
    sha = hashlib.sha256(data).hexdigest()
    blob = store / "blobs" / "sha256" / sha[:2] / sha[2:]
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(b"damaged bytes! " * 100)  # on the server, under the name of other bytes
    remote = tracker.open_store(url)
    assert remote.blobs.exists(sha)
    with pytest.raises(StoreError, match=f"blob {sha} from .* is damaged"):
        remote.blobs.fetch(sha)
    assert not remote.blobs.path(sha).exists()  # nothing damaged is kept
    with pytest.raises(StoreError, match=f"blob {'0' * 64} is missing"):
        remote.blobs.fetch("0" * 64)


CLI_CASES = [
    ("runs",),
    ("runs", "--format", "json"),
    ("runs", "--project", "vision", "-m", "loss", "--format", "csv"),
    ("runs", "--limit", "2"),
    ("runs", "-n", "1", "--project", "vision", "--format", "json"),
    ("show", "{alpha}"),
    ("show", "beta", "--format", "json"),
    ("logs", "{alpha}"),
    ("logs", "{alpha}", "--format", "json"),
    ("env", "{alpha}"),
    ("env", "{alpha}", "--format", "json"),
    ("summary", "{beta}", "--format", "json"),
    ("diff", "{alpha}", "{beta}"),
    ("compare", "{alpha}", "{beta}", "--format", "json"),
    ("tail", "{beta}", "-n", "3", "--format", "jsonl"),
    ("lineage", "model:v0", "--format", "json"),
    ("artifact", "list"),
    ("query", "SELECT run_id, name, count, min, max, last FROM metric_stats ORDER BY run_id, name", "--format",
     "json"),
    ("query", "SELECT schema, count(*) AS n FROM records GROUP BY schema ORDER BY schema", "--format", "json"),
    ("query", "SELECT name, project, status FROM runs ORDER BY name", "--format", "csv"),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: " ".join(c[:3]))
def test_cli_over_the_url_answers_as_over_the_folder(served, case) -> None:
    store, server, ids, _ = served
    url = server.url
    args = [a.format(**ids) for a in case]
    host = tracker.Host(tracker.get_plugin_manager(), tracker.Config())
    over_folder = CliRunner().invoke(make_cli(host), ["--store", str(store), *args], catch_exceptions=False)
    over_url = CliRunner().invoke(make_cli(host), ["--store", url, *args], catch_exceptions=False)
    assert over_folder.exit_code == 0, over_folder.output
    assert (over_url.exit_code, over_url.stdout) == (over_folder.exit_code, over_folder.stdout)


def test_report_over_the_url(served, tmp_path) -> None:
    store, server, ids, _ = served
    url = server.url
    host = tracker.Host(tracker.get_plugin_manager(), tracker.Config())
    pages = []
    for where in (str(store), url):
        out = tmp_path / f"report{len(pages)}.html"
        res = CliRunner().invoke(make_cli(host), ["--store", where, "report", "--group-by", "group", "-m", "loss",
                                                  "-o", str(out)], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        page = re.sub(r'"generated_at":[0-9.]+', "", out.read_text())  # the clock, not the store
        pages.append(page.replace(where, "<store>"))
    assert pages[0] == pages[1]


def test_get_over_the_url(served, tmp_path) -> None:
    store, server, ids, key = served
    out = tmp_path / "model.bin"
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", server.url, "get", ids["alpha"], "model", "-o",
                          str(out)], capture_output=True, text=True,
                         env={**server.env(key), "TRACKER_BLOB_CACHE": str(tmp_path / "c")})
    assert res.returncode == 0, res.stderr
    assert out.read_bytes() == (tracker.open_store(store).run(ids["alpha"]).open_artifact("model").read())


def test_raw_segment_bytes_with_range(served) -> None:
    import http.client

    store, server, ids, key = served
    seg = sorted((store / "runs" / ids["alpha"]).glob("*.jsonl"))[0]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    auth = server.headers(key)
    conn.request("GET", f"/api/v1/runs/{ids['alpha']}/segments/{seg.name}", headers={"Range": "bytes=10-99", **auth})
    resp = conn.getresponse()
    assert resp.status == 206
    assert resp.read() == seg.read_bytes()[10:100]
    # An edit segment (the run was tagged after the fact): under edits/, as GET .../segments lists it.
    tracker.open_store(store).tag(ids["gamma"], add=["later"])
    edit = sorted((store / "runs" / ids["gamma"] / "edits").glob("edits-*.jsonl"))[0]
    conn.request("GET", f"/api/v1/runs/{ids['gamma']}/segments/edits/{edit.name}", headers=auth)
    resp = conn.getresponse()
    assert resp.status == 200 and resp.read() == edit.read_bytes()
    for name in ("..%2F..%2Fkeys.toml", "..", "keys.toml", "meta.json", "edits/x.jsonl"):  # names, never paths
        conn.request("GET", f"/api/v1/runs/{ids['alpha']}/segments/{name}", headers=auth)
        resp = conn.getresponse()
        assert resp.status == 404 and b'"error"' in resp.read()
    conn.request("GET", f"/api/v1/runs/{ids['alpha']}/records?schema=metrics", headers=auth)
    resp = conn.getresponse()
    lines = [orjson.loads(x) for x in resp.read().splitlines()]
    assert lines[-1] == {"end": 30} and lines[4]["nonfinite"] == [["acc"]] and lines[4]["data"]["acc"] == "NaN"
    conn.close()
    assert os.path.getsize(seg) > 100


def test_no_key_is_one_line_naming_what_to_do(served, monkeypatch) -> None:
    store, server, ids, _ = served
    monkeypatch.delenv("TRACKER_API_KEY")
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", server.url, "runs"], capture_output=True,
                         text=True, env={k: v for k, v in server.env().items() if k != "TRACKER_API_KEY"}
                         | {"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]})
    assert res.returncode != 0 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "401" in lines[0] and "an API key is needed" in lines[0] and "tracker login" in lines[0]
    with pytest.raises(tracker.TrackerError, match="401"):
        tracker.open_store(server.url).runs()


def test_a_revoked_key_is_refused(served, monkeypatch) -> None:
    store, server, ids, _ = served
    key = server.make_key("gone", "read")
    monkeypatch.setenv("TRACKER_API_KEY", key)
    assert tracker.open_store(server.url).run("alpha").info.name == "alpha"
    server.cli("keys", "revoke", key.split("_")[1])
    with pytest.raises(tracker.TrackerError, match="401 .*revoked"):
        tracker.open_store(server.url).run("alpha")


def test_a_key_limited_to_a_project_reads_only_it(served, monkeypatch) -> None:
    store, server, ids, _ = served
    monkeypatch.setenv("TRACKER_API_KEY", server.make_key("nlp-only", "read", ["nlp"]))
    remote = tracker.open_store(server.url)
    assert [i.name for i in remote.runs()] == ["gamma"]
    assert remote.run("gamma").metric_stats()["ppl"]["last"] == math.inf
    with pytest.raises(tracker.TrackerError, match=f"403 .*run {ids['alpha']} is of project 'vision'"):
        remote.run("alpha")
    with pytest.raises(tracker.TrackerError, match="403"):
        list(remote.run(ids["gamma"]).store.session.request("GET", f"/api/v1/runs/{ids['beta']}/records").body)
    assert remote.registry().names() == []  # the model is vision's


def test_a_write_key_reads_too(served, monkeypatch) -> None:
    store, server, ids, _ = served
    monkeypatch.setenv("TRACKER_API_KEY", server.make_key("writer", "write"))
    assert same(tracker.open_store(server.url).runs(), tracker.open_store(store).runs())


def test_wandb_api_over_the_url(served, monkeypatch) -> None:
    store, server, ids, key = served
    monkeypatch.delenv("TRACKER_API_KEY")
    api, local = tracker.Api(store=server.url, api_key=key), tracker.Api(store=str(store))
    assert [r.id for r in api.runs("vision")] == [r.id for r in local.runs("vision")]
    run, here = api.run(f"vision/{ids['alpha']}"), local.run(f"vision/{ids['alpha']}")
    assert same(run.summary, here.summary) and run.config == here.config
    assert same(list(run.scan_history(keys=["loss"])), list(here.scan_history(keys=["loss"])))
    assert api.artifact("vision/model:best").digest == local.artifact("vision/model:best").digest


def test_records_after_a_cursor_follow_a_run(stores) -> None:
    folder, remote, ids = stores
    view = remote.run(ids["beta"])
    recs = list(folder.run(ids["beta"]).records("metrics"))
    got, cursor = view.records_after({}, "metrics")
    assert same(got, recs)
    half = recs[5]
    got, cursor = view.records_after({half.writer: half.seq}, "metrics")
    assert same(got, recs[6:]) and cursor == {half.writer: recs[-1].seq}
    assert view.records_after(cursor, "metrics") == ([], cursor)


def test_plain_http_to_another_host_is_refused_before_sending(served, monkeypatch) -> None:
    res = CliRunner().invoke(make_cli(tracker.Host(tracker.get_plugin_manager(), tracker.Config())),
                             ["--store", "http://tracker.example:8080", "runs"])
    assert res.exit_code == 1
    assert res.stderr.strip() == ("tracker: refusing to send a key over plain http:// to tracker.example: use "
                                  "https://tracker.example:8080 (http:// is allowed to loopback addresses only)")
    assert served[3] not in res.output


@pytest.mark.parametrize("args", [("tag", "{alpha}", "--add", "x"), ("rm", "{alpha}", "--yes"), ("du",),
                                  ("verify",), ("note", "{alpha}", "hi")], ids=lambda a: a[0])
def test_commands_on_the_stores_files_say_so_over_http(served, args) -> None:
    store, server, ids, _ = served
    before = tracker.open_store(store).run(ids["alpha"]).info
    res = CliRunner().invoke(make_cli(tracker.Host(tracker.get_plugin_manager(), tracker.Config())),
                             ["--store", server.url, *(a.format(**ids) for a in args)])
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        f"tracker: `tracker {args[0]}` works on the store's own files, which a server does not lend over HTTP "
        f"({server.url}): run it where the store is, with `tracker --store FOLDER {args[0]} ...`"]
    assert tracker.open_store(store).run(ids["alpha"]).info == before


def test_the_dashboard_over_a_server_url_points_at_the_servers_own(served) -> None:
    res = CliRunner().invoke(make_cli(tracker.Host(tracker.get_plugin_manager(), tracker.Config())),
                             ["--store", "https://lab.example:8443", "ui"])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        "tracker: https://lab.example:8443 is a tracker server, which serves its own dashboard: open "
        "https://lab.example:8443/ in a browser (the dashboard here serves a store folder or the team database)"]


def test_the_curl_reading_example_of_the_docs_runs_as_written(served, tmp_path) -> None:
    require_curl()
    store, server, ids, key = served
    text = (Path(__file__).resolve().parents[2] / "docs" / "http-api.md").read_text(encoding="utf-8")
    section = text[text.index("### Reading (`read`)"):text.index("### Logging with JSON")]
    block = re.search(r"^```sh\n(.*?)^```", section, flags=re.S | re.M).group(1)
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True, text=True, timeout=60,
                         env=server.env(key), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = orjson.loads(res.stdout)
    assert [r["info"]["name"] for r in doc["runs"]] == [i.name for i in tracker.open_store(store).runs(limit=10)]
    assert doc["total"] == len(tracker.open_store(store).runs())


def test_sweeps_over_a_server_url_say_where_they_are(served) -> None:
    store, server, ids, _ = served
    res = CliRunner().invoke(make_cli(tracker.Host(tracker.get_plugin_manager(), tracker.Config())),
                             ["--store", server.url, "sweep", "list"])
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        f"tracker: tracker sweep list reads and runs sweeps in a store folder or the team database, not over HTTP "
        f"({server.url}): the server's dashboard shows its sweeps (its Sweeps page)"]
