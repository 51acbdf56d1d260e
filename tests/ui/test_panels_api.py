"""GET /api/runs/{id}/panels with panels of a test plugin: figures, a failing panel, the host registry."""

from __future__ import annotations

import numpy as np
import pytest

import tracker
import tracker.ui

from .support import strict_json


def good(table, run):
    return [tracker.LineChart("loss", [tracker.Series("loss", table["loss"], x=table["step"])],
                              bands=[tracker.Band(0, 2, "warm-up")], log_y=True),
            tracker.Heatmap("grid", np.eye(2), marked=[(0, 0)]),
            tracker.TableFigure.from_summary(run.summarize("metrics")[0])]


def broken(table, run):
    raise RuntimeError("no figures today")


def not_a_list(table, run):
    return tracker.BarChart("b", ["a"], {"x": [1]})


class Panels:
    @tracker.hookimpl
    def tracker_panels(self):
        return [tracker.Panel("demo.good", "metrics", good, title="Good <b>panel</b>"),
                tracker.Panel("demo.broken", "metrics", broken),
                tracker.Panel("demo.notlist", "metrics", not_a_list),
                tracker.Panel("demo.other", "other.schema", good)]


@pytest.fixture
def client(tmp_path, make_tracker_host):
    from starlette.testclient import TestClient

    make_tracker_host(Panels(), names=["demo"])
    store = tmp_path / "store"
    with tracker.start_run(store=store, run_id="withpanels") as run:
        for i in range(5):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
    with TestClient(tracker.ui.create_app(store)) as c:
        yield c


def test_panels_of_the_schemas_present_with_errors_in_place(client):
    r = client.get("/api/runs/withpanels/panels")
    assert r.status_code == 200
    panels = strict_json(r.text)["panels"]
    assert [p["name"] for p in panels] == ["demo.good", "demo.broken", "demo.notlist"]
    good_panel = panels[0]
    assert good_panel["title"] == "Good <b>panel</b>" and good_panel["plugin"] == "demo"
    assert [f["type"] for f in good_panel["figures"]] == ["line", "heatmap", "table"]
    line = good_panel["figures"][0]
    assert line["series"][0]["y"] == [1.0, 0.5, 1 / 3, 0.25, 0.2] and line["bands"][0]["label"] == "warm-up"
    assert good_panel["figures"][1]["marked"] == [[0, 0]]
    assert panels[1]["error"] == "RuntimeError: no figures today" and "figures" not in panels[1]
    assert "expected a list of figures" in panels[2]["error"]


def test_the_run_lists_its_panels(client):
    detail = strict_json(client.get("/api/runs/withpanels").text)
    assert [p["name"] for p in detail["panels"]] == ["demo.good", "demo.broken", "demo.notlist"]
