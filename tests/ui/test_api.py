"""The dashboard's JSON API through Starlette's test client: every endpoint, its errors and headers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tracker
import tracker.ui

from .support import BIG_N, NAN_FROM, NAN_TO, SPIKE, SPIKE_AT, XSS, snapshot, strict_json


def get(client, url, status=200):
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("application/json")
    return strict_json(r.text)


# --- runs ---------------------------------------------------------------------------------------

def test_runs_newest_first_with_filter_choices(client, runs_store):
    _, ids = runs_store
    data = get(client, "/api/runs")
    got = [r["id"] for r in data["runs"]]
    assert set(got) == set(ids.values())
    created = [r["created_at"] for r in data["runs"]]
    assert created == sorted(created, reverse=True)
    assert data["projects"] == ["ids", "nlp", "vision"]
    assert {"baseline", "gpu", XSS} <= set(data["tags"])
    assert {"lr", "optim.name", "optim.beta", "seed"} <= set(data["config_keys"])
    assert {"loss", "acc"} <= set(data["metric_names"])
    alpha = next(r for r in data["runs"] if r["id"] == ids["alpha"])
    assert alpha["config_flat"]["optim.name"] == "adam"
    assert alpha["status"] == "finished" and alpha["records"] == 51


@pytest.mark.parametrize(("query", "labels"), [
    ("project=vision", {"alpha", "beta"}),
    ("status=failed", {"beta"}),
    ("tag=gpu", {"alpha", "beta"}),
    ("tag=gpu&tag=baseline", {"alpha"}),
    ("q=ALPH", {"alpha"}),
    ("q=abc", {"abc111", "abc222"}),
    ("q=onerror", {"xss"}),
    ("q=baseline", {"alpha"}),
    ("project=vision&status=finished", {"alpha"}),
    ("project=nothing", set()),
])
def test_runs_filters(client, runs_store, query, labels):
    _, ids = runs_store
    data = get(client, f"/api/runs?{query}")
    assert {r["id"] for r in data["runs"]} == {ids[k] for k in labels}
    assert data["total"] == len(ids)


def test_runs_stats_min_max_last(client, runs_store):
    _, ids = runs_store
    data = get(client, "/api/runs?stats=loss,acc")
    beta = next(r for r in data["runs"] if r["id"] == ids["beta"])
    loss = beta["stats"]["loss"]
    assert {k: loss[k] for k in ("min", "max", "last")} == {"min": 2.0 / 30, "max": 2.0, "last": 2.0 / 30}
    assert beta["stats"]["acc"]["max"] == 29 / 40  # the NaN at step 10 is not a maximum


def test_runs_bad_status_is_400(client):
    assert "status" in get(client, "/api/runs?status=sleeping", 400)["error"]


def test_store_that_does_not_exist_is_empty_and_not_created(tmp_path):
    from starlette.testclient import TestClient

    store = tmp_path / "nothing-yet"
    with TestClient(tracker.ui.create_app(store)) as c:
        assert get(c, "/api/runs")["runs"] == []
    assert not store.exists()


# --- one run ------------------------------------------------------------------------------------

def test_run_detail_info_config_schemas_summaries(client, runs_store):
    store, ids = runs_store
    data = get(client, f"/api/runs/{ids['alpha']}")
    assert data["info"]["name"] == "alpha"
    assert data["info"]["config"] == {"lr": 0.01, "optim": {"name": "adam", "beta": 0.9}, "seed": 1}
    assert data["schemas"] == ["metrics"]
    assert data["metric_names"] == ["loss", "acc", "val_loss"]
    view = tracker.open_store(store).run(ids["alpha"])
    expected = strict_json(__import__("orjson").dumps(
        tracker.ui.parts.strict([s.to_dict() for s in view.summarize()])).decode())
    assert data["summaries"] == expected
    assert [s["summarizer"] for s in data["summaries"]] == ["metrics.scalars", "metrics.run"]


def test_failed_run_has_error_and_traceback(client, runs_store):
    _, ids = runs_store
    info = get(client, f"/api/runs/{ids['beta']}")["info"]
    assert info["status"] == "failed"
    assert info["error"]["type"] == "ValueError"
    assert info["error"]["message"] == "loss diverged at step 30"
    assert "raise ValueError" in info["error"]["traceback"]


def test_nan_in_summaries_uses_the_store_encoding(client, runs_store):
    _, ids = runs_store
    sums = get(client, f"/api/runs/{ids['beta']}")["summaries"]
    acc = next(r for r in sums[0]["rows"] if r["metric"] == "acc")
    assert acc["nan"] == 1


def test_unique_prefix_finds_the_run(client, runs_store):
    _, ids = runs_store
    assert get(client, f"/api/runs/{ids['alpha'][:6]}")["info"]["id"] == ids["alpha"]


@pytest.mark.parametrize("bad", ["a.b", "x" * 65, "a%20b", "%2e%2e"])
def test_invalid_run_id_is_400(client, bad):
    for suffix in ("", "/metrics", "/panels"):
        assert "invalid run id" in get(client, f"/api/runs/{bad}{suffix}", 400)["error"]


def test_unknown_run_is_404(client):
    for suffix in ("", "/metrics", "/panels"):
        assert "no run" in get(client, f"/api/runs/zzzz9999{suffix}", 404)["error"]


def test_ambiguous_prefix_is_404_with_candidates(client):
    body = get(client, "/api/runs/abc", 404)
    assert "ambiguous" in body["error"]
    assert body["candidates"] == ["abc111", "abc222"]


# --- metrics ------------------------------------------------------------------------------------

def test_metrics_every_series_by_step(client, runs_store):
    _, ids = runs_store
    data = get(client, f"/api/runs/{ids['alpha']}/metrics")
    assert set(data["series"]) == {"loss", "acc", "val_loss"}
    loss = data["series"]["loss"]
    assert loss["x"] == list(range(50))
    assert loss["y"] == [1.0 / (i + 1) for i in range(50)]
    assert loss["y_min"] == loss["y"] == loss["y_max"]
    # a metric logged once has one point, not 50 gaps
    assert data["series"]["val_loss"] == {"x": [49], "y": [0.5], "y_min": [0.5], "y_max": [0.5]}
    assert data["status"] == "finished"


def test_metrics_names_time_and_nan_as_null(client, runs_store):
    store, ids = runs_store
    data = get(client, f"/api/runs/{ids['beta']}/metrics?names=acc,not_logged_yet&x=time")
    assert set(data["series"]) == {"acc"}
    acc = data["series"]["acc"]
    times = tracker.open_store(store).run(ids["beta"]).metrics()["time"]
    assert acc["x"] == times.tolist()
    assert acc["y"][10] is None and acc["y_min"][10] is None and acc["y"][11] == 11 / 40


@pytest.mark.parametrize("query", ["max_points=0", "max_points=100001", "max_points=ten", "x=epoch",
                                   "since=nonsense", "since=1.!!!", "since=1.YWJj"])
def test_metrics_bad_parameters_are_400(client, runs_store, query):
    _, ids = runs_store
    assert get(client, f"/api/runs/{ids['alpha']}/metrics?{query}", 400)["error"]


def test_million_records_downsampled_with_bucket_min_max(big_store):
    from starlette.testclient import TestClient

    store, rid = big_store
    with TestClient(tracker.ui.create_app(store)) as c:
        data = get(c, f"/api/runs/{rid}/metrics?names=loss&max_points=2000")
        assert data["records"] == BIG_N
        s = data["series"]["loss"]
        assert len(s["x"]) == len(s["y"]) == len(s["y_min"]) == len(s["y_max"]) == 2000
        # the first and the last record alone, the others in 1,998 buckets of about 500 consecutive
        # records: x is each bucket's first step
        starts = np.array([0, *(1 + k * (BIG_N - 2) // 1998 for k in range(1998)), BIG_N - 1])
        assert s["x"] == starts.tolist()
        y = 1.0 / (np.arange(BIG_N) + 1)
        assert (s["y"][0], s["y_min"][0], s["y_max"][0]) == (1.0, 1.0, 1.0)
        assert (s["x"][-1], s["y"][-1], s["y_min"][-1], s["y_max"][-1]) == (BIG_N - 1, *[y[-1]] * 3)
        # the one-record spike survives as its bucket's max
        b = int(np.searchsorted(starts, SPIKE_AT, side="right")) - 1
        assert s["y_max"][b] == SPIKE and max(v for v in s["y_max"] if v is not None) == SPIKE
        assert s["y_min"][1] == y[starts[2] - 1] and s["y_max"][1] == y[1]
        assert s["y"][1] == pytest.approx(float(y[1:starts[2]].mean()))
        # the NaN stretch is a gap of whole buckets
        gap = [i for i in range(1999) if starts[i] >= NAN_FROM and starts[i + 1] <= NAN_TO]
        assert len(gap) >= 19 and gap == list(range(gap[0], gap[-1] + 1))
        assert all(s["y"][i] is None and s["y_min"][i] is None and s["y_max"][i] is None for i in gap)
        assert s["y"][gap[0] - 1] is not None and s["y"][gap[-1] + 1] is not None
        small = get(c, f"/api/runs/{rid}/metrics?max_points=7")["series"]["loss"]
        assert len(small["x"]) == 7 and max(v for v in small["y_max"] if v is not None) == SPIKE
        # a second request reads only what is new (nothing): same answer
        assert get(c, f"/api/runs/{rid}/metrics?names=loss&max_points=2000")["series"]["loss"] == s


def test_since_returns_only_new_records(tmp_path):
    from starlette.testclient import TestClient

    store = tmp_path / "store"
    run = tracker.start_run(project="live", store=store)
    try:
        for i in range(10):
            run.log({"loss": float(i)}, step=i)
        with TestClient(tracker.ui.create_app(store)) as c:
            first = get(c, f"/api/runs/{run.id}/metrics")
            assert first["status"] == "running" and first["series"]["loss"]["x"] == list(range(10))
            cursor = first["cursor"]
            nothing = get(c, f"/api/runs/{run.id}/metrics?since={cursor}")
            assert nothing["series"] == {} and nothing["records"] == 0
            for i in (10, 11, 5):  # out of order and repeated steps are kept as logged
                run.log({"loss": float(i) * 10, "lr": 0.1}, step=i)
            new = get(c, f"/api/runs/{run.id}/metrics?since={nothing['cursor']}")
            assert new["records"] == 3
            assert new["series"]["loss"] == {"x": [10, 11, 5], "y": [100.0, 110.0, 50.0],
                                             "y_min": [100.0, 110.0, 50.0], "y_max": [100.0, 110.0, 50.0]}
            assert new["series"]["lr"]["x"] == [10, 11, 5]
            for i in range(12, 112):
                run.log({"loss": float(i)}, step=i)
            many = get(c, f"/api/runs/{run.id}/metrics?since={new['cursor']}&max_points=10")
            assert many["records"] == 100 and len(many["series"]["loss"]["x"]) == 10
            assert many["series"]["loss"]["y_max"][-1] == 111.0
            run.finish()
            assert get(c, f"/api/runs/{run.id}/metrics?since={many['cursor']}")["status"] == "finished"
    finally:
        run.finish()


def test_since_reads_a_second_writer_from_its_start(tmp_path):
    from starlette.testclient import TestClient

    store = tmp_path / "store"
    with tracker.start_run(store=store, run_id="shared") as run:
        run.log({"loss": 1.0}, step=0)
    with TestClient(tracker.ui.create_app(store)) as c:
        cursor = get(c, "/api/runs/shared/metrics")["cursor"]
        with tracker.start_run(store=store, run_id="shared", resume=True) as run:
            run.log({"loss": 2.0})
        new = get(c, f"/api/runs/shared/metrics?since={cursor}")
        assert new["series"]["loss"]["y"] == [2.0] and new["series"]["loss"]["x"] == [1]


def test_a_corrupt_line_is_reported_and_the_rest_is_read(tmp_path):
    from starlette.testclient import TestClient

    store = tmp_path / "store"
    with tracker.start_run(store=store, run_id="damaged") as run:
        for i in range(5):
            run.log({"loss": float(i)}, step=i)
    seg = next((store / "runs" / "damaged").glob("*.jsonl"))
    lines = seg.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b'"loss":2.0', b'"loss":9.0')
    seg.write_bytes(b"\n".join(lines))
    with TestClient(tracker.ui.create_app(store)) as c:
        data = get(c, "/api/runs/damaged/metrics")
        assert data["series"]["loss"]["y"] == [0.0, 1.0, 3.0, 4.0]
        assert data["problems"][0]["kind"] == "checksum" and data["problems"][0]["line"] == 4
        assert get(c, "/api/runs/damaged")["problems"][0]["kind"] == "checksum"


# --- compare ------------------------------------------------------------------------------------

def test_compare_config_diff_and_summaries(client, runs_store):
    _, ids = runs_store
    data = get(client, f"/api/compare?runs={ids['alpha']},{ids['beta']}")
    assert [r["id"] for r in data["runs"]] == [ids["alpha"], ids["beta"]]
    assert data["config_diff"] == {"lr": [0.01, 0.1]}
    assert data["config_same"] == {"optim.name": "adam", "optim.beta": 0.9, "seed": 1}
    metrics = next(s for s in data["sections"] if s["summarizer"] == "metrics.scalars")
    last_loss = next(r for r in metrics["rows"] if r["labels"] == {"metric": "loss"} and r["field"] == "last")
    assert last_loss["values"] == [1 / 50, 2 / 30] and last_loss["better"] == "min" and last_loss["best"] == [0]


def test_compare_nested_keys_missing_in_one_run(client, runs_store):
    _, ids = runs_store
    data = get(client, f"/api/compare?runs={ids['alpha']},{ids['xss']}")
    assert data["config_diff"]["optim.name"] == ["adam", None]
    assert data["config_diff"][XSS] == [None, XSS]


@pytest.mark.parametrize(("query", "status"), [("runs=abc111", 400), ("", 400), ("runs=abc111,zzzz", 404),
                                               ("runs=abc111,a.b", 400), ("runs=abc111,abc", 404)])
def test_compare_errors(client, query, status):
    assert get(client, f"/api/compare?{query}", status)["error"]


# --- panels -------------------------------------------------------------------------------------

def test_panels_of_a_run_without_plugin_records_is_empty(client, runs_store):
    _, ids = runs_store
    assert get(client, f"/api/runs/{ids['alpha']}/panels") == {"panels": []}


# --- the app as a whole ---------------------------------------------------------------------------

def test_every_response_has_the_csp(client, runs_store):
    _, ids = runs_store
    for url in ["/", "/runs/x", "/static/app.js", "/static/vendor/uplot/uPlot.esm.js", "/api/runs",
                f"/api/runs/{ids['alpha']}", "/api/runs/a.b", "/api/nothing", "/static/missing.js"]:
        r = client.get(url)
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp, url
        assert r.headers["x-content-type-options"] == "nosniff"


def test_pages_static_files_and_unknown_paths(client):
    page = client.get("/runs/whatever")
    assert page.status_code == 200 and '<script type="module" src="/static/app.js">' in page.text
    assert client.get("/compare?runs=a,b").text == page.text
    assert "MIT" in client.get("/static/vendor/uplot/LICENSE").text
    assert "1.6.32" in client.get("/static/vendor/uplot/VERSION").text
    assert get(client, "/api/nothing", 404)["error"]
    for outside in ["/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2fapp.py"]:
        r = client.get(outside)
        assert "create_app" not in r.text


def test_read_only_nothing_written_and_no_writing_methods(runs_store, big_store):
    from starlette.testclient import TestClient

    store, ids = runs_store
    before = snapshot(store)
    with TestClient(tracker.ui.create_app(store)) as c:
        urls = ["/api/runs?stats=loss", f"/api/compare?runs={ids['alpha']},{ids['beta']}"]
        for rid in ids.values():
            urls += [f"/api/runs/{rid}", f"/api/runs/{rid}/metrics", f"/api/runs/{rid}/panels"]
        for url in urls:
            assert c.get(url).status_code == 200, url
        for method in ("post", "put", "delete", "patch"):
            assert getattr(c, method)(f"/api/runs/{ids['alpha']}").status_code == 405
    assert snapshot(store) == before


def test_non_finite_config_and_last_metrics_are_strict_json(tmp_path):
    from starlette.testclient import TestClient

    store = tmp_path / "store"
    with tracker.start_run(store=store, run_id="nonfinite", config={"clip": math.inf}) as run:
        run.log({"loss": math.nan, "gain": -math.inf}, step=0)
    with TestClient(tracker.ui.create_app(store)) as c:
        row = get(c, "/api/runs")["runs"][0]
        assert row["config"]["clip"] == "Infinity"
        assert row["last_metrics"] == {"loss": "NaN", "gain": "-Infinity"}
        s = get(c, "/api/runs/nonfinite/metrics")["series"]
        assert s["loss"]["y"] == [None] and s["gain"]["y"] == [None]


def test_run_parts_come_one_at_a_time(client, runs_store):
    _, ids = runs_store
    early = get(client, f"/api/runs/{ids['alpha']}?parts=info,metric_names")
    assert set(early) == {"id", "info", "metric_names"} and early["info"]["id"] == ids["alpha"]
    assert set(get(client, f"/api/runs/{ids['alpha']}?parts=summaries")) == {"id", "summaries"}
    err = get(client, f"/api/runs/{ids['alpha']}?parts=info,nope", 400)["error"]
    assert "parts" in err and "'nope'" in err and "summaries" in err
