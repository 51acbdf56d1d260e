"""The panels of the four bundled plugins (real entry points) and of the example third-party plugin."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tracker
import tracker.ui

from .support import strict_json

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = {
    "fft_study": {"fft.losses": ["line"], "fft.gates": ["heatmap"], "fft.landscape": ["heatmap"]},
    "phase_trainer": {"phase.loss": ["line", "bar"]},
    "ptq": {"ptq.errors": ["bar"], "ptq.bytes": ["bar"]},
    "quant_analysis": {"quant.sqnr": ["line", "table"]},
}


@pytest.fixture(scope="module")
def panels(plugin_store):
    from starlette.testclient import TestClient

    store, ids = plugin_store
    with TestClient(tracker.ui.create_app(store)) as c:
        out = {}
        for plugin, rid in ids.items():
            r = c.get(f"/api/runs/{rid}/panels")
            assert r.status_code == 200
            out[plugin] = {p["name"]: p for p in strict_json(r.text)["panels"]}
        return out


@pytest.mark.parametrize("plugin", sorted(EXPECTED))
def test_each_bundled_plugin_offers_its_panels(panels, plugin):
    got = panels[plugin]
    assert {name: [f["type"] for f in p.get("figures", [])] for name, p in got.items()} == EXPECTED[plugin]
    assert all(p["plugin"] == plugin and "error" not in p for p in got.values())


def test_fft_panels_mark_pruned_gates_and_the_landscape_minimum(panels):
    fft = panels["fft_study"]
    loss = fft["fft.losses"]["figures"][0]
    assert loss["log_y"] is True and [s["name"] for s in loss["series"]] == ["butterfly", "gated"]
    gates = fft["fft.gates"]["figures"][0]
    z = gates["z"]
    assert len(z) == 6 and len(z[0]) == 8
    assert gates["marked"] == [[r, c] for r in range(6) for c in range(8) if z[r][c] < 0.5]
    land = fft["fft.landscape"]["figures"][0]
    (r, c), = land["marked"]
    assert land["z"][r][c] == min(min(row) for row in land["z"])
    assert (land["x"][c], land["y"][r]) == (0.25, -0.5)


def test_phase_bands_follow_the_phases(panels):
    chart = panels["phase_trainer"]["phase.loss"]["figures"][0]
    labels = [b["label"] for b in chart["bands"]]
    assert labels == ["FULL", "PREDICT", "CORRECT"] * 2
    assert [(b["start"], b["end"]) for b in chart["bands"][:3]] == [(0, 8), (8, 14), (14, 18)]


def test_ptq_error_against_half_scale_and_bytes(panels):
    err = panels["ptq"]["ptq.errors"]["figures"][0]
    assert err["categories"] == ["fc1", "fc2", "head"]
    maxerr, half = err["series"]
    assert all(m <= h for m, h in zip(maxerr["y"], half["y"], strict=True)) and "all within" in err["title"]
    size = panels["ptq"]["ptq.bytes"]["figures"][0]
    assert [s["name"] for s in size["series"]] == ["fp32", "int8"]


def test_quant_sqnr_against_theory(panels):
    chart = panels["quant_analysis"]["quant.sqnr"]["figures"][0]
    names = [s["name"] for s in chart["series"]]
    assert "conv1 · per_tensor" in names and names[-1].startswith("theoretical")
    theory = chart["series"][-1]
    assert theory["x"] == [4.0, 5.0, 6.0, 7.0, 8.0] and theory["y"][0] == pytest.approx(6.02 * 4 + 1.76)


def test_example_third_party_plugin_panel(tmp_path, make_tracker_host, monkeypatch):
    from starlette.testclient import TestClient

    monkeypatch.syspath_prepend(str(ROOT / "examples" / "third_party_plugin" / "src"))
    for name in [m for m in sys.modules if m.startswith("tracker_gradstats")]:
        monkeypatch.delitem(sys.modules, name)
    from tracker_gradstats import plugin

    make_tracker_host(plugin, names=["gradstats"])
    store = tmp_path / "store"
    with tracker.start_run(store=store, run_id="grads") as run:
        for step in range(10):
            for layer in ("fc1", "fc2"):
                run.log_record("grad.norm", step=step, layer=layer, norm=1.0 + step, max_abs=0.5, zero_fraction=0.1)
    with TestClient(tracker.ui.create_app(store)) as c:
        (panel,) = strict_json(c.get("/api/runs/grads/panels").text)["panels"]
    assert panel["name"] == "grad.norms" and panel["plugin"] == "gradstats"
    assert [f["type"] for f in panel["figures"]] == ["line", "bar", "table"]
    assert [s["name"] for s in panel["figures"][0]["series"]] == ["fc1", "fc2"]


def test_phase_bars_are_the_summarys_loss_mean_and_say_so(panels, plugin_store):
    store, ids = plugin_store
    bars = panels["phase_trainer"]["phase.loss"]["figures"][1]
    (summary,) = [s for s in tracker.open_store(store).run(ids["phase_trainer"]).summarize("phase.step")
                  if "loss per phase" in s.title]
    means = {r["phase"]: r["loss_mean"] for r in summary.rows}
    got = {c.split(" ")[0]: v for c, v in zip(bars["categories"], bars["series"][0]["y"], strict=True)}
    assert got == pytest.approx({p: means[p] for p in got})
    assert "last 100 steps" in bars["note"] and "loss_mean" in bars["note"]
