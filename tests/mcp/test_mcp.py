"""`tracker mcp` as an assistant's client meets it: the SDK's own client starts it in a subprocess."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import tracker

from ..ui.support import BIG_N, make_big_run

pytest.importorskip("mcp")

TOOLS = {"list_runs", "get_run", "get_metrics", "compare_runs", "query", "list_alerts", "list_sweeps"}


def digest(store: Path) -> dict[str, str]:
    """Every file of the store with the SHA-256 of its bytes, but the derived data under ``index/``.

    Readers keep ``index/`` up to date and may rewrite it at any read (the catalog
    derives an entry again when it was made in the same clock tick as a change);
    deleting it changes no answer (docs/format.md). Everything else is the store's data.
    """
    return {str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(store.rglob("*")) if p.is_file() and p.relative_to(store).parts[0] != "index"}


async def session_calls(store: Path, calls: list[tuple[str, dict[str, Any]]], resource: str | None = None) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "tracker", "--store", str(store), "mcp"],
                                   env=dict(os.environ))
    out: dict[str, Any] = {}
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        out["tools"] = {t.name: t for t in (await s.list_tools()).tools}
        out["calls"] = []
        for name, args in calls:
            t0 = time.perf_counter()
            res = await s.call_tool(name, args)
            text = res.content[0].text
            out["calls"].append((name, res.is_error, json.loads(text) if not res.is_error else text,
                                 time.perf_counter() - t0))
        if resource:
            out["resource"] = await s.read_resource(resource)
    return out


@pytest.fixture
def runs(tmp_store: Path) -> dict[str, str]:
    with tracker.start_run(project="gpt", name="a", config={"lr": 0.1, "optim": {"name": "adam"}},
                           tags=["sweep:s1"]) as a:
        for i in range(50):
            a.log({"loss": 1.0 / (i + 1), "acc": i / 50})
        a.alert("plateau", "loss flat", level="WARN")
    with tracker.start_run(project="gpt", name="b", config={"lr": 0.2, "optim": {"name": "adam"}},
                           tags=["sweep:s1"]) as b:
        for i in range(50):
            b.log({"loss": 2.0 / (i + 1)})
    return {"a": a.id, "b": b.id}


def test_every_tool_over_stdio(tmp_store: Path, runs: dict[str, str]) -> None:
    calls = [("list_runs", {"limit": 1}), ("get_run", {"run": runs["a"]}),
             ("get_metrics", {"run": runs["a"], "names": ["loss"], "max_points": 10}),
             ("compare_runs", {"runs": [runs["a"], runs["b"]]}),
             ("query", {"sql": "SELECT run_id, count(*) AS n FROM metrics GROUP BY run_id ORDER BY n", "limit": 1}),
             ("list_alerts", {}), ("list_sweeps", {}),
             ("get_run", {"run": "nosuchrun"}), ("get_metrics", {"run": runs["b"], "names": ["acc"]}),
             ("query", {"sql": "SELECT title, level, suppressed FROM alert"})]
    out = asyncio.run(session_calls(tmp_store, calls, resource=f"tracker://runs/{runs['b']}"))
    assert set(out["tools"]) == TOOLS
    res = {i: (err, doc) for i, (_, err, doc, _) in enumerate(out["calls"])}
    err, doc = res[0]
    assert not err and doc["total"] == 2 and doc["truncated"] is True and len(doc["runs"]) == 1
    err, doc = res[1]
    assert not err and doc["config"]["lr"] == 0.1 and doc["metrics"]["loss"]["count"] == 50
    assert doc["schemas"]["alert"] == 1 and any(s["title"] == "Alerts" for s in doc["summaries"])
    err, doc = res[2]
    s = doc["series"]["loss"]
    assert not err and len(s["x"]) == 10 and s["downsampled"] and s["points_logged"] == 50 and s["y_max"][0] == 1.0
    # the first and the last step as logged: where the loss began and where it ended
    assert (s["x"][0], s["y"][0], s["x"][-1], s["y"][-1]) == (0, 1.0, 49, 1.0 / 50)
    assert "first and the last record are points of their own" in doc["sampling"]
    err, doc = res[3]
    assert not err and doc["config_diff"] == {"lr": [0.1, 0.2]} and doc["runs"][1]["last_metrics"]["loss"] == 0.04
    err, doc = res[4]
    assert not err and doc["columns"] == ["run_id", "n"] and doc["total"] == 2 and doc["truncated"]
    err, doc = res[5]
    assert not err and [a["title"] for a in doc["alerts"]] == ["plateau"] and doc["alerts"][0]["run_name"] == "a"
    err, doc = res[6]
    assert not err and doc["sweeps"][0]["id"] == "s1" and doc["sweeps"][0]["trials"] == 2
    err, text = res[7]
    assert err and "no run matches 'nosuchrun'" in text and "Traceback" not in text
    err, text = res[8]
    assert err and "has no metric 'acc'" in text
    err, doc = res[9]
    assert not err and doc["rows"] == [{"title": "plateau", "level": "WARN", "suppressed": False}]
    body = json.loads(out["resource"].contents[0].text)
    assert body["id"] == runs["b"] and body["name"] == "b"


def test_copy_to_is_refused_and_the_store_is_untouched(tmp_store: Path, runs: dict[str, str],
                                                       tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    reads = [("list_runs", {}), ("get_run", {"run": runs["a"]}), ("list_alerts", {"run": runs["a"]}),
             ("query", {"sql": "SELECT count(*) FROM metrics"})]
    asyncio.run(session_calls(tmp_store, reads))  # the derived data readers keep, built once
    before = digest(tmp_store)
    calls = [("query", {"sql": f"COPY runs TO '{target}'"}),
             ("query", {"sql": f"ATTACH '{tmp_path / 'x.db'}' AS x"}),
             ("query", {"sql": f"COPY (SELECT * FROM metrics) TO '{tmp_store / 'runs' / 'x.csv'}'"}), *reads]
    out = asyncio.run(session_calls(tmp_store, calls))
    (_, err1, text1, _), (_, err2, _, _), (_, err3, _, _) = out["calls"][:3]
    assert err1 and "read-only" in text1 and err2 and err3
    assert not target.exists() and not (tmp_path / "x.db").exists()
    assert digest(tmp_store) == before  # every file byte for byte, and no file more or less


def test_a_million_step_run_comes_back_downsampled(tmp_store: Path) -> None:
    run_id = make_big_run(tmp_store)
    subprocess.run([sys.executable, "-m", "tracker", "index"], check=True, capture_output=True)
    out = asyncio.run(session_calls(tmp_store, [("get_metrics", {"run": run_id}),
                                                ("get_metrics", {"run": run_id, "max_points": 2000}),
                                                ("query", {"sql": "SELECT step, value FROM metrics", "limit": 5})]))
    (_, err, doc, seconds), (_, err2, doc2, seconds2), (_, err3, rows, _) = out["calls"]
    assert not err3 and len(rows["rows"]) == 5 and rows["total"] == BIG_N and rows["truncated"]
    assert not err and not err2
    loss = doc["series"]["loss"]
    assert loss["points_logged"] == BIG_N and len(loss["x"]) == 200 and loss["downsampled"]
    # "where did the loss end?": the last step is in the answer, with its value
    assert (loss["x"][-1], loss["y"][-1], loss["y_min"][-1], loss["y_max"][-1]) == (BIG_N - 1, *[1.0 / BIG_N] * 3)
    assert (loss["x"][0], loss["y"][0]) == (0, 1.0)
    assert len(doc2["series"]["loss"]["x"]) == 2000
    assert max(v for v in doc2["series"]["loss"]["y_max"] if v is not None) > 1.0  # the spike survives
    assert min(seconds, seconds2) < 1.0


def test_http_on_loopback_only(tmp_store: Path) -> None:
    from click.testing import CliRunner

    from tracker.cli import make_cli

    res = CliRunner().invoke(make_cli(), ["mcp", "--http", "--host", "0.0.0.0"])
    assert res.exit_code == 1 and "loopback" in res.output


def test_http_transport_serves_the_tools(tmp_store: Path, runs: dict[str, str]) -> None:
    from ..ui.support import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "mcp", "--http", "--port", str(port)],
                            stderr=subprocess.PIPE, text=True)

    async def talk() -> list[str]:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        for _ in range(100):
            try:
                async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (r, w), \
                        ClientSession(r, w) as s:
                    await s.initialize()
                    res = await s.call_tool("list_runs", {})
                    return [x["name"] for x in json.loads(res.content[0].text)["runs"]]
            except Exception:  # noqa: BLE001 - not listening yet
                await asyncio.sleep(0.1)
        raise AssertionError("the server never answered")

    try:
        assert sorted(asyncio.run(talk())) == ["a", "b"]
        import httpx

        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "page", "version": "1"}}}
        # A web page reaching 127.0.0.1 through a DNS name it controls (DNS rebinding) is turned away.
        res = httpx.post(f"http://127.0.0.1:{port}/mcp", json=hello, timeout=10,
                         headers={"Host": f"evil.example:{port}", "Accept": "application/json, text/event-stream"})
        assert res.status_code == 421
    finally:
        proc.terminate()
        proc.wait(timeout=30)
