"""Entry points for real: loading, broken plugins, disabling, duplicates, the listing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import tracker


def make_dist(site: Path, dist: str, ep_name: str, module: str, source: str) -> None:
    """A minimal installed distribution: a module and a .dist-info with its entry point."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[tracker]\n{ep_name} = {module}\n")


LISTING = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("default")
    import tracker
    with tracker.start_run() as run:
        run.log({"x": 1.0})
        run.log({"x": 2.0})
    values = tracker.open_store().run(run.id).metrics()["x"].tolist()
    print(json.dumps({"plugins": [p.to_dict() for p in tracker.list_plugins()], "values": values}))
""")


def run_child(site: Path, store: Path, extra_env: dict | None = None) -> tuple[dict, str]:
    env = {**os.environ, "PYTHONPATH": str(site), "TRACKER_STORE": str(store), **(extra_env or {})}
    env.pop("TRACKER_RUN_ID", None)
    proc = subprocess.run([sys.executable, "-c", LISTING], env=env, capture_output=True, text=True, timeout=120,
                          cwd=site)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_plugin_that_fails_to_import_is_reported_and_logging_goes_on(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    make_dist(site, "tracker-broken", "broken", "broken_plugin", "raise ImportError('needs a missing library')\n")
    out, err = run_child(site, tmp_path / "store")
    plugins = {p["name"]: p for p in out["plugins"]}
    assert plugins["broken"]["status"] == "broken"
    assert "needs a missing library" in plugins["broken"]["error"]
    assert plugins["broken"]["distribution"] == "tracker-broken"
    assert plugins["metrics"]["status"] == "ok" and plugins["metrics"]["builtin"]
    assert out["values"] == [1.0, 2.0]
    assert err.count("plugin 'broken' is broken") == 1


def test_duplicate_schema_name_stays_with_first_and_second_is_broken(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    source = """
        import attrs
        from tracker import Schema, hookimpl

        @attrs.frozen
        class P:
            x: float

        @hookimpl
        def tracker_schemas():
            return [Schema("dup.point", P)]
    """
    make_dist(site, "tracker-aaa", "aaa", "aaa_plugin", source)
    make_dist(site, "tracker-bbb", "bbb", "bbb_plugin", source)
    out, err = run_child(site, tmp_path / "store")
    plugins = {p["name"]: p for p in out["plugins"]}
    assert plugins["aaa"]["status"] == "ok" and plugins["aaa"]["schemas"] == ["dup.point"]
    assert plugins["bbb"]["status"] == "broken"
    assert "'dup.point'" in plugins["bbb"]["error"] and "'aaa'" in plugins["bbb"]["error"]
    assert "'bbb'" in plugins["bbb"]["error"]
    assert out["values"] == [1.0, 2.0]


def test_disabled_plugin_is_listed_as_disabled_and_not_loaded(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    make_dist(site, "tracker-loud", "loud", "loud_plugin", "raise SystemExit('must not be imported')\n")
    (site / "tracker.toml").write_text("[plugins]\ndisable = ['loud']\n")
    out, err = run_child(site, tmp_path / "store")
    plugins = {p["name"]: p for p in out["plugins"]}
    assert plugins["loud"]["status"] == "disabled"
    assert "must not be imported" not in err


def test_schemas_hook_that_raises_is_broken_other_hooks_dropped(make_tracker_host) -> None:  # noqa: ANN001
    class Bad:
        @tracker.hookimpl
        def tracker_schemas(self) -> list:
            raise RuntimeError("schemas exploded")

        @tracker.hookimpl
        def tracker_subscribe(self, bus: tracker.EventBus) -> None:
            raise AssertionError("a broken plugin's later hooks are not called")

    import pytest

    with pytest.warns(tracker.TrackerWarning, match="plugin 'bad' is broken: tracker_schemas raised"):
        host = make_tracker_host(Bad(), names=["bad"])
    info = {p.name: p for p in host.plugins()}["bad"]
    assert info.status == "broken" and "schemas exploded" in info.error


def test_installed_plugins_are_listed_with_distribution_and_version(fresh_host: None) -> None:
    infos = {p.name: p for p in tracker.list_plugins()}
    metrics = infos["metrics"]
    assert metrics.builtin and metrics.distribution == "tracker-core" and metrics.version == tracker.__version__
    assert metrics.schemas == ["metrics", "metric_axis"] and "metrics.scalars" in metrics.summarizers
    assert "tracker_schemas" in metrics.hooks
