"""``x_min`` / ``x_max`` of ``GET /api/runs/{id}/metrics``: the range a zoomed chart asks for."""

from __future__ import annotations

import numpy as np
import pytest

import tracker
import tracker.ui

from .support import NAN_FROM, NAN_TO, SPIKE, SPIKE_AT, strict_json


def get(client, url, status=200):
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.text[:500])
    return strict_json(r.text)


@pytest.fixture(scope="module")
def big(big_store):
    from starlette.testclient import TestClient

    store, rid = big_store
    with TestClient(tracker.ui.create_app(store)) as c:
        yield c, rid


def finite(values):
    return [v for v in values if v is not None]


def test_range_keeps_only_points_within_it(client, runs_store):
    _, ids = runs_store
    data = get(client, f"/api/runs/{ids['alpha']}/metrics?x_min=10&x_max=19")
    loss = data["series"]["loss"]
    assert loss["x"] == list(range(10, 20))
    assert loss["y"] == [1.0 / (i + 1) for i in range(10, 20)]
    # val_loss is logged at step 49 only: outside the range, so absent
    assert set(data["series"]) == {"loss", "acc"}
    # bounds are inclusive, and one bound alone works; fractions are fine
    assert get(client, f"/api/runs/{ids['alpha']}/metrics?names=loss&x_min=47.5")["series"]["loss"]["x"] == [48, 49]
    assert get(client, f"/api/runs/{ids['alpha']}/metrics?names=loss&x_max=2")["series"]["loss"]["x"] == [0, 1, 2]
    assert get(client, f"/api/runs/{ids['alpha']}/metrics?names=loss&x_min=3&x_max=3")["series"]["loss"]["x"] == [3]
    assert get(client, f"/api/runs/{ids['alpha']}/metrics?x_min=100&x_max=200")["series"] == {}


def test_range_by_time(client, runs_store):
    store, ids = runs_store
    times = tracker.open_store(store).run(ids["beta"]).metrics()["time"]
    lo, hi = float(times[5]), float(times[8])
    acc = get(client, f"/api/runs/{ids['beta']}/metrics?names=acc&x=time&x_min={lo!r}&x_max={hi!r}")["series"]["acc"]
    assert acc["x"] == times[5:9].tolist()
    assert acc["y"] == [i / 40 for i in range(5, 9)]


def test_no_range_is_unchanged(client, runs_store):
    _, ids = runs_store
    whole = get(client, f"/api/runs/{ids['beta']}/metrics")
    assert whole["series"]["loss"]["x"] == list(range(30))
    assert get(client, f"/api/runs/{ids['beta']}/metrics?x_min=&x_max=")["series"] == whole["series"]
    everything = get(client, f"/api/runs/{ids['beta']}/metrics?x_min=-1e18&x_max=1e18")
    assert everything["series"] == whole["series"]
    assert everything["records"] == whole["records"]


def test_max_points_applies_within_the_range(big):
    c, rid = big
    whole = get(c, f"/api/runs/{rid}/metrics?names=loss&max_points=2000")["series"]["loss"]
    shown_before = [x for x in whole["x"] if 500_000 <= x <= 501_000]
    assert len(shown_before) <= 3  # buckets of 500 steps
    s = get(c, f"/api/runs/{rid}/metrics?names=loss&max_points=2000&x_min=500000&x_max=501000")["series"]["loss"]
    # the range holds 1,001 records: every one of them, as logged
    assert s["x"] == list(range(500_000, 501_001))
    assert s["y"] == s["y_min"] == s["y_max"]
    assert s["y"] == (1.0 / (np.arange(500_000, 501_001) + 1)).tolist()
    # more records than max_points in the range: buckets of the range only
    s = get(c, f"/api/runs/{rid}/metrics?names=loss&max_points=100&x_min=200000&x_max=299999")["series"]["loss"]
    assert len(s["x"]) == len(s["y"]) == len(s["y_min"]) == len(s["y_max"]) == 100
    # the range's first and last records alone, the others in 98 buckets of about 1,000
    assert s["x"][:3] == [200_000, 200_001, 201_021] and s["x"][-2:] == [298_978, 299_999]
    assert s["y_max"][0] == s["y_min"][0] == 1.0 / 200_001 and s["y_min"][-1] == s["y_max"][-1] == 1.0 / 300_000


def test_a_spike_inside_the_range_is_kept(big):
    c, rid = big
    s = get(c, f"/api/runs/{rid}/metrics?names=loss&max_points=10&x_min=700000&x_max=800000")["series"]["loss"]
    assert len(s["x"]) == 10
    assert max(finite(s["y_max"])) == SPIKE
    assert s["y_max"][(SPIKE_AT - 700_000) // 10_000] == SPIKE
    # the same number of points outside the spike's range: no spike
    s = get(c, f"/api/runs/{rid}/metrics?names=loss&max_points=10&x_min=780000&x_max=880000")["series"]["loss"]
    assert max(finite(s["y_max"])) < 1e-5


def test_a_nan_stretch_inside_the_range_is_a_gap(big):
    c, rid = big
    url = f"/api/runs/{rid}/metrics?names=loss&max_points=2000&x_min={NAN_FROM - 2}&x_max={NAN_TO + 1}"
    s = get(c, url)["series"]["loss"]
    assert len(s["x"]) == 2000
    # the first and the last record alone, each next to a bucket that holds the other finite one
    assert all(v is not None for v in s["y"][:2] + s["y"][-2:])
    assert all(v is None for v in s["y"][2:-2])


def test_range_applies_to_the_records_new_since_a_cursor(tmp_path):
    from starlette.testclient import TestClient

    store = tmp_path / "store"
    run = tracker.start_run(store=store)
    try:
        for i in range(5):
            run.log({"loss": float(i)}, step=i)
        with TestClient(tracker.ui.create_app(store)) as c:
            cursor = get(c, f"/api/runs/{run.id}/metrics")["cursor"]
            for i in range(5, 15):
                run.log({"loss": float(i)}, step=i)
            new = get(c, f"/api/runs/{run.id}/metrics?since={cursor}&x_min=0&x_max=9")
            assert new["series"]["loss"]["x"] == [5, 6, 7, 8, 9]
    finally:
        run.finish()


@pytest.mark.parametrize(("query", "name"), [
    ("x_min=ten", "x_min"),
    ("x_max=1e", "x_max"),
    ("x_min=nan", "x_min"),
    ("x_max=inf", "x_max"),
    ("x_min=-Infinity", "x_min"),
    ("x_min=5&x_max=1", "x_min"),
    ("x_min=1,2", "x_min"),
])
def test_bad_range_values_are_400_naming_the_parameter(client, runs_store, query, name):
    _, ids = runs_store
    body = get(client, f"/api/runs/{ids['alpha']}/metrics?{query}", 400)
    assert body["error"].startswith(f"{name}: "), body
    assert "number" in body["error"]
