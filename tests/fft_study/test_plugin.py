"""The plugin as tracker loads it: entry point, hooks, options, the missing-matplotlib hint."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner
from tracker_fft_study import plugin
from tracker_fft_study.config import SETTINGS, Settings

import tracker
from tracker.cli import make_cli
from tracker.testing import make_host

SCHEMAS = ["fft.loss_point", "fft.params", "fft.heatmap", "fft.landscape", "fft.trace"]


def test_entry_point_is_found_and_loads():
    pm = tracker.get_plugin_manager()
    info = pm.infos["fft_study"]
    assert info.status == "ok", info.error
    assert info.distribution == "tracker-fft-study"
    assert pm.get_plugin("fft_study") is plugin


def test_hooks_register_schemas_and_summarizers():
    host = make_host(plugin, names=["fft_study"])
    info = next(p for p in host.plugins() if p.name == "fft_study")
    assert info.status == "ok", info.error
    assert info.schemas == SCHEMAS
    assert info.summarizers == ["fft.models", "fft.loss_curves", "fft.gates",
                                "fft.landscape_min"]
    assert [host.summarizers[s].schema for s in info.summarizers] == [
        "fft.params", "fft.loss_point", "fft.heatmap", "fft.landscape"]


def test_cli_has_the_fft_group(host):
    result = CliRunner().invoke(make_cli(host), ["fft", "report", "--help"])
    assert result.exit_code == 0
    assert "tracker fft report 3f2a -o study.html" in result.stdout


def test_options_from_config(make_tracker_host):
    try:
        make_tracker_host(plugin, names=["fft_study"], config=tracker.Config(
            plugins={"fft_study": {"prune_threshold": 0.25, "report_dpi": 80}}))
        assert (SETTINGS.prune_threshold, SETTINGS.report_dpi) == (0.25, 80)
        # A later host without the table is back to the defaults.
        make_tracker_host(plugin, names=["fft_study"])
        assert (SETTINGS.prune_threshold, SETTINGS.report_dpi) == (0.5, 110)
    finally:
        SETTINGS.load({})


@pytest.mark.parametrize(("table", "message"), [
    ({"threshold": 0.5}, "[plugins.fft_study] threshold: expected one of prune_threshold, "
                         "report_dpi, given unknown key 'threshold'"),
    ({"prune_threshold": 0}, "prune_threshold: expected a number in (0, 1], given 0"),
    ({"prune_threshold": "0.5"}, "prune_threshold: expected a number in (0, 1], given '0.5'"),
    ({"report_dpi": 72.0}, "report_dpi: expected an int in [50, 600], given 72.0"),
    ({"report_dpi": 1000}, "report_dpi: expected an int in [50, 600], given 1000"),
])
def test_bad_options_are_named(table, message):
    with pytest.raises(ValueError) as caught:
        Settings().update(table)
    assert message in str(caught.value)


def test_bad_option_warns_and_keeps_the_plugin_working(make_tracker_host, tracker_store):
    config = tracker.Config(file=tracker_store.parent / "tracker.toml",
                            plugins={"fft_study": {"dpi": 3, "prune_threshold": 0.3}})
    with pytest.warns(tracker.TrackerWarning) as caught:
        host = make_tracker_host(plugin, names=["fft_study"], config=config)
    (warning,) = caught
    assert f"plugin 'fft_study': {config.file}: [plugins.fft_study] dpi: expected one of" \
        in str(warning.message)
    info = next(p for p in host.plugins() if p.name == "fft_study")
    assert info.status == "ok"
    assert (SETTINGS.prune_threshold, SETTINGS.report_dpi) == (0.5, 110)
    with tracker.start_run(store=tracker_store) as r:  # the schemas still log
        r.log_record("fft.heatmap", model_id="m", stages=1, butterflies=1, gates=[0.4])


def test_report_without_matplotlib_says_how_to_install(host, study_run, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes "import matplotlib" fail
    out = tmp_path / "r.html"
    result = CliRunner().invoke(make_cli(host), ["fft", "report", study_run, "-o", str(out)])
    assert result.exit_code == 1
    assert 'pip install "tracker-fft-study[report]"' in result.stderr
    assert not out.exists()
