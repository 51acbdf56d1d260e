"""One suite of reading cases over a folder and over the database it was synced to: the same answers.

Each case asks both stores the same question (the real ``tracker`` command
in-process, the dashboard's API through Starlette's test client) and compares
the answers, after replacing the store's own name (a folder, or the
database's URL with its password masked) by one placeholder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli
from tracker.core.urls import redact_url

from ..query.pg import PASSWORD

STORE = "<store>"


def scrub(value: Any, names: tuple[str, ...]) -> Any:
    """``value`` with each of ``names`` (a store's own name) replaced by one placeholder."""
    if isinstance(value, str):
        for n in names:
            value = value.replace(n, STORE)
        return value
    if isinstance(value, dict):
        return {scrub(k, names): scrub(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, names) for v in value]
    return value


@pytest.fixture(scope="module")
def host() -> Iterator[tracker.Host]:
    h = tracker.Host(tracker.get_plugin_manager(), tracker.Config())
    old = tracker.set_host(h)
    yield h
    tracker.set_host(old)


@pytest.fixture(scope="module")
def both(pair, host) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``{"folder": (store, names), "team": (url, names)}``: how each is named, and what to scrub."""
    store, url, _ = pair
    return {"folder": (str(store), (str(store),)), "team": (url, (redact_url(url), url))}


def cli_answer(host: tracker.Host, target: tuple[str, tuple[str, ...]], *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of the real command over one store."""
    where, names = target
    res = CliRunner().invoke(make_cli(host), ["--store", where, *args], catch_exceptions=False)
    assert PASSWORD not in res.output
    return res.exit_code, scrub(res.stdout, names), scrub(res.stderr, names)


def same_cli(host: tracker.Host, both: dict, *args: str, parse: Callable[[str], Any] | None = None) -> Any:
    """The command's exit code, stdout and stderr over the folder; asserts the database gives the same."""
    folder = cli_answer(host, both["folder"], *args)
    team = cli_answer(host, both["team"], *args)
    assert folder[0] == 0, folder
    if parse is not None:
        folder, team = (folder[0], parse(folder[1]), folder[2]), (team[0], parse(team[1]), team[2])
    assert team == folder, args
    assert orjson.dumps(team) == orjson.dumps(folder), args  # the same order too
    return folder[1]


CLI_CASES = [
    ("runs", "--format", "json"),
    ("runs", "--all"),
    ("runs", "--project", "vision", "--format", "csv"),
    ("runs", "--status", "crashed", "--format", "json"),
    ("runs", "-m", "loss", "--columns", "config.lr,summary.x", "--all"),
    ("show", "{alpha}", "--format", "json"),
    ("show", "{beta}"),
    ("show", "multi", "--format", "json"),
    ("summary", "{alpha}", "--format", "json"),
    ("summary", "{fft_study}"),
    ("summary", "capture1", "--format", "json"),
    ("compare", "{alpha}", "{beta}", "--format", "json"),
    ("compare", "multi", "crash"),
    ("export", "{alpha}", "--format", "csv"),
    ("export", "multi", "--format", "csv"),
    ("export", "capture1", "--format", "jsonl"),
    ("export", "{fft_study}", "--schema", "fft.loss_point", "--format", "csv"),
    ("tail", "multi", "--format", "jsonl"),
    ("tail", "{alpha}", "-n", "5"),
    ("tail", "multi", "-f", "--format", "jsonl"),  # a finished run: prints its records, then says it finished
    ("tail", "capture1", "--schema", "image", "--format", "jsonl"),
    ("query", "SELECT run_id, name, count, min, max, last FROM metric_stats ORDER BY run_id, name", "--format",
     "json"),
    ("query", "SELECT run_id, count(*) AS n FROM metrics GROUP BY run_id ORDER BY run_id", "--format", "json"),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: " ".join(c[:3]))
def test_cli(host, both, pair, case) -> None:
    _, _, ids = pair
    args = tuple(a.format(**ids) for a in case)
    json_out = "json" in args or "jsonl" in args
    same_cli(host, both, *args, parse=_parse if json_out else None)


def _parse(text: str) -> Any:
    text = text.strip()
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return [orjson.loads(line) for line in text.splitlines()]


def test_unknown_run_is_one_line_over_both(host, both) -> None:
    for target in both.values():
        code, out, err = cli_answer(host, target, "show", "no-such-run")
        assert code == 1 and out == "" and err.strip().count("\n") == 0 and "no-such-run" in err


# --- the dashboard's API --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def clients(both) -> Iterator[dict[str, Any]]:
    from starlette.testclient import TestClient

    import tracker.ui

    with TestClient(tracker.ui.create_app(both["folder"][0])) as f, \
            TestClient(tracker.ui.create_app(both["team"][0])) as t:
        yield {"folder": f, "team": t}


def api(clients: dict[str, Any], both: dict, path: str) -> Any:
    """The JSON of ``path`` over the folder; asserts the database answers the same (status and body)."""
    out = {}
    for kind, client in clients.items():
        res = client.get(path)
        assert PASSWORD not in res.text
        out[kind] = (res.status_code, scrub(res.json(), both[kind][1]))
    assert out["team"] == out["folder"], path
    assert out["folder"][0] == 200, out["folder"]
    return out["folder"][1]


def _without_now(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "now"}


API_CASES = [
    "/api/runs/{alpha}",
    "/api/runs/{beta}",
    "/api/runs/{xss}",
    "/api/runs/multi",
    "/api/runs/crash",
    "/api/runs/capture1",
    "/api/runs/{fft_study}",
    "/api/runs/{phase_trainer}?parts=info,schemas,metric_names,panels",
    "/api/runs/{ptq}?parts=summaries",
    "/api/runs/{quant_analysis}",
    "/api/runs/capture1?parts=images,artifacts,system",
    "/api/runs/{alpha}/metrics",
    "/api/runs/{alpha}/metrics?names=loss&max_points=10",
    "/api/runs/{beta}/metrics?x=time",
    "/api/runs/multi/metrics",
    "/api/runs/multi/metrics?names=extra,only_first&x_min=10&x_max=25",
    "/api/runs/capture1/metrics?names=odd",
    "/api/runs/crash/metrics?max_points=2",
    "/api/runs/{fft_study}/panels",
    "/api/runs/{quant_analysis}/panels?names=quant.error_vs_bits",
    "/api/compare?runs={alpha},{beta}",
    "/api/compare?runs=multi,crash,capture1",
    "/api/runs/abc",
    "/api/runs/nope",
]


@pytest.mark.parametrize("path", API_CASES)
def test_api(clients, both, pair, path) -> None:
    _, _, ids = pair
    path = path.format(**ids)
    out = {}
    for kind, client in clients.items():
        res = client.get(path)
        assert PASSWORD not in res.text
        body = res.json()
        if "cursor" in body:
            body.pop("cursor")  # byte offsets over a folder, record counts over the database: opaque to the page
        # What a folder has yet to derive from its JSONL; the database has nothing to build.
        build = body.pop("build", None) if res.status_code == 200 else None
        assert build is None or kind == "folder"
        for row in body.get("artifacts") or []:
            if row.get("folder"):
                # A folder's file list is in its manifest, a blob: the database holds no bytes (a bucket does).
                members = row.pop("members", None)
                err = row.pop("error", None)
                assert (members is not None) if kind == "folder" else (row["sha256"] in err and "[team] blobs" in err)
        out[kind] = (res.status_code, scrub(body, both[kind][1]))
    assert out["team"] == out["folder"]
    assert orjson.dumps(out["team"]) == orjson.dumps(out["folder"])  # the same order of keys too


@pytest.mark.parametrize("query", ["", "?stats=loss,acc", "?project=vision&stats=loss", "?status=crashed",
                                   "?q=abc", "?tag=gpu&stats=val_loss", "?status=bogus"])
def test_api_runs_listing(clients, both, query) -> None:
    out = {}
    for kind, client in clients.items():
        res = client.get("/api/runs" + query)
        out[kind] = (res.status_code, _without_now(scrub(res.json(), both[kind][1])))
    assert out["team"] == out["folder"]
    assert orjson.dumps(out["team"]) == orjson.dumps(out["folder"])


def test_live_cursor_gives_nothing_new_over_both(clients, pair) -> None:
    _, _, ids = pair
    for client in clients.values():
        first = client.get(f"/api/runs/{ids['alpha']}/metrics").json()
        assert first["records"] == 51 and first["series"]
        again = client.get(f"/api/runs/{ids['alpha']}/metrics", params={"since": first["cursor"]}).json()
        assert again["records"] == 0 and again["series"] == {}


def test_images_and_downloads(clients, pair) -> None:
    """The folder serves the bytes; the database names the blob's key (its bytes live in a bucket, not in it)."""
    parts = clients["folder"].get("/api/runs/capture1?parts=images,artifacts").json()
    sha = parts["images"]["samples"][0]["sha256"]
    assert clients["folder"].get(f"/api/runs/capture1/blobs/{sha}").content[:4] == b"\x89PNG"
    res = clients["team"].get(f"/api/runs/capture1/blobs/{sha}")
    # No bucket configured: the blob is named, and so is what is missing ([team] blobs).
    assert res.status_code == 500 and sha in res.json()["error"] and "[team] blobs" in res.json()["error"]
    unknown = "0" * 64
    assert clients["team"].get(f"/api/runs/capture1/blobs/{unknown}").status_code == 404


def test_blobs_through_the_protocol_reader(pair, both, monkeypatch) -> None:
    """With a ``BlobReader`` behind the team store (here the folder's own blob store, as a bucket would be),
    images, downloads and folder listings over the database are the folder's, byte for byte."""
    from starlette.testclient import TestClient

    import tracker.ui
    from tracker.capture.blobs import BlobStore
    from tracker.team.postgres import TeamStore

    store, url, _ = pair
    monkeypatch.setattr(TeamStore, "blobs", property(lambda self: BlobStore(store)))
    with TestClient(tracker.ui.create_app(str(store))) as folder, TestClient(tracker.ui.create_app(url)) as team:
        parts = {k: c.get("/api/runs/capture1?parts=images,artifacts").json() for k, c in
                 (("folder", folder), ("team", team))}
        assert parts["team"] == parts["folder"]
        shas = [i["sha256"] for i in parts["folder"]["images"]["samples"]]
        shas += [a["sha256"] for a in parts["folder"]["artifacts"] if not a["folder"]]
        shas += [m["sha256"] for a in parts["folder"]["artifacts"] if a["folder"] for m in a["members"]]
        for sha in shas:
            a = folder.get(f"/api/runs/capture1/blobs/{sha}?download=1")
            b = team.get(f"/api/runs/capture1/blobs/{sha}?download=1")
            assert (b.status_code, b.content, b.headers["content-type"]) == \
                (a.status_code, a.content, a.headers["content-type"]) == (200, a.content, a.headers["content-type"])
            assert b.headers["content-disposition"].startswith("attachment")
