"""Hostile values at the API: tags and config keys under one rule, keys named, odd images and histograms,
a manifest that climbs out, full-width digits, and the [ui] extra's Starlette floor."""

from __future__ import annotations

import enum
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import tracker
from tracker.capture.blobs import BlobStore

from ..childenv import child_environ


def _env() -> dict[str, str]:
    return child_environ()


# --- one rule for tags and config keys ---------------------------------------------------------

@pytest.mark.parametrize("tag", ["x\ny", "a\rb", "", "   ", "t" * 1001])
def test_start_run_refuses_the_tags_tracker_tag_refuses_with_the_same_message(tmp_path, tag):
    store = tmp_path / "store"
    with pytest.raises(tracker.TrackerError) as at_start:
        tracker.start_run(project="p", tags=["ok", tag], store=store, system_metrics=False)
    assert not (store / "runs").exists() or list((store / "runs").iterdir()) == []
    with tracker.start_run(project="p", tags=["ok"], store=store, system_metrics=False) as run:
        pass
    with pytest.raises(tracker.TrackerError) as at_tag:
        tracker.Store(store).tag(run.id, add=[tag])
    assert str(at_start.value) == str(at_tag.value)
    assert tracker.Store(store).run(run.id).info.tags == ["ok"]
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "tag", run.id, "--add", tag],
                         capture_output=True, text=True, timeout=120, env=_env())
    assert res.returncode == 1 and str(at_start.value) in res.stderr


@pytest.mark.parametrize(("config", "where"), [
    ({"": 1}, "''"), ({" ": 1}, "' '"), ({"optim": {"\t": 1}}, "optim.'\\t'"), ({"layers": [{"": 2}]}, "layers[0].''")])
def test_blank_config_keys_are_refused_naming_where(tmp_path, config, where):
    store = tmp_path / "store"
    with pytest.raises(tracker.SchemaError) as err:
        tracker.start_run(project="p", config={"lr": 0.1, **config}, store=store, system_metrics=False)
    assert f"config': {where}: expected a key that is not blank" in str(err.value)
    assert not (store / "runs").exists() or list((store / "runs").iterdir()) == []
    run = tracker.init(project="p", config={"lr": 0.1}, dir=store)
    try:
        with pytest.raises(tracker.SchemaError) as err:
            run.config.update(config)
        assert f"{where}: expected a key that is not blank" in str(err.value)
    finally:
        tracker.finish()
    assert tracker.Store(store).run(run.id).info.config == {"lr": 0.1}


class Colour(enum.Enum):
    RED = 1


@pytest.mark.parametrize("value", [object(), Path("/data/x"), Colour.RED, {1, 2}, b"raw"])
def test_a_config_value_that_is_not_json_is_named_by_its_key(tmp_path, value):
    # A long config first: the message must still name the key, not a cut repr of the whole dict.
    config = {f"key{i}": i for i in range(50)}
    config["k"] = value
    with pytest.raises(tracker.SchemaError) as err:
        tracker.init(project="p", config=config, dir=tmp_path / "store")
    message = str(err.value)
    assert "config': k: expected a JSON value" in message
    assert f"given {type(value).__name__}" in message
    with pytest.raises(tracker.SchemaError) as err:
        tracker.start_run(config={"outer": {"inner": [1, value]}}, store=tmp_path / "store")
    assert "outer.inner[1]: expected" in str(err.value)


# --- images and histograms -------------------------------------------------------------------------

def test_an_empty_pil_image_is_a_schema_error_like_an_empty_array(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    import numpy as np

    with tracker.start_run(project="p", store=tmp_path / "store", system_metrics=False) as run:
        for image in (Image.new("RGB", (0, 0)), Image.new("L", (5, 0)), np.zeros((0, 3), dtype=np.uint8)):
            with pytest.raises(tracker.SchemaError) as err:
                run.log_image("empty", image)
            assert "expected a non-empty image" in str(err.value)
    assert not (tmp_path / "store" / "blobs").exists() or not any((tmp_path / "store" / "blobs").rglob("*.png"))
    assert "image" not in tracker.Store(tmp_path / "store").run(run.id).schemas()


def test_an_extreme_histogram_keeps_the_other_steps_counts_in_the_heatmap(tmp_path):
    import numpy as np

    from tracker.builtin.media import histogram_heatmaps

    with tracker.start_run(project="p", store=tmp_path / "store", system_metrics=False) as run:
        run.log_histogram("w", np.arange(100.0), step=0)
        run.log_histogram("w", [-1e308, 0.0, 1e308], step=1)
        run.log_histogram("w", np.linspace(-5, 5, 40), step=2)
    view = tracker.Store(tmp_path / "store").run(run.id)
    (fig,) = histogram_heatmaps(view.table("histogram"), view)
    spec = fig.to_json()
    z = np.asarray(spec["z"], dtype=float)
    assert np.isfinite(z).all()
    assert z.sum(axis=0).round(6).tolist() == [100.0, 3.0, 40.0]  # every step's counts, none lost
    assert all(isinstance(y, float) and math.isfinite(y) for y in spec["y"])
    assert spec["x"] == [0, 1, 2]


# --- a manifest whose entries climb out --------------------------------------------------------------

def test_verify_reports_a_manifest_with_parent_entries(tmp_path):
    store = tmp_path / "store"
    blobs = BlobStore(store)
    member, _ = blobs.put_bytes(b"payload")
    doc = {"format": "tracker.manifest", "v": 1, "files": [{"path": "../../escape.txt", "size": 7, "sha256": member}]}
    sha, _ = blobs.put_bytes(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode())
    with tracker.start_run(project="p", store=store, system_metrics=False) as run:
        run.log_record("artifact", name="ckpt", kind="folder", sha256=sha, size=7, folder=True, files=1,
                       reference=None)
        run.log({"loss": 1.0}, step=0)
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "verify"],
                         capture_output=True, text=True, timeout=120, env=_env())
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout + res.stderr
    assert sha[2:] in out and "manifest" in out and "Traceback" not in out
    res = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "get", run.id, "ckpt", "-o",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=120, env=_env())
    assert res.returncode == 1 and not (tmp_path / "out").exists() and not (tmp_path.parent / "escape.txt").exists()


# --- the dashboard's numbers -------------------------------------------------------------------------

def test_max_points_takes_ascii_digits_only(tmp_path):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from tracker.ui import create_app

    with tracker.start_run(project="p", store=tmp_path / "store", system_metrics=False) as run:
        for i in range(10):
            run.log({"loss": float(i)}, step=i)
    with TestClient(create_app(tmp_path / "store")) as c:
        assert c.get(f"/api/runs/{run.id}/metrics", params={"max_points": "5"}).status_code == 200
        for bad in ("\uff15", "\u0665", " 5", "5_0", "+5", "5.0", "0x5"):
            r = c.get(f"/api/runs/{run.id}/metrics", params={"max_points": bad})
            assert r.status_code == 400, bad
            assert "max_points: expected an integer from 1 to" in r.json()["error"]


def test_the_ui_extra_needs_a_starlette_with_the_range_header_fix():
    import re

    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    spec = re.search(r'^ui = \[.*"starlette>=([0-9.]+)"', text, re.MULTILINE).group(1)
    assert tuple(int(p) for p in spec.split(".")) >= (0, 49, 1)  # GHSA-7f5h-v6xp-fcq8 was fixed in 0.49.1
