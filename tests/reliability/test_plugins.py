"""Bad plugins, installed for real: two distributions with entry points in group ``tracker``.

The distributions are written as ``.dist-info`` folders in a temporary folder
that is put on the PYTHONPATH of child processes, so the plugins are found by
``importlib.metadata`` exactly as installed ones are. A child logs through all
of them; the command line lists them.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import ack_lines, child_env, cli, install, read_run, spawn
from tracker.host.bus import MAX_FAILURES

RECORDS = 20
SLOW_SECONDS = 0.6  # each of the slow handler's calls: over the bus's limit for one event

GOOD = '''
import attrs
import tracker

SEEN = []


@attrs.frozen
class Point:
    value: float


@tracker.hookimpl
def tracker_schemas():
    return [tracker.Schema("good.point", Point)]


@tracker.hookimpl
def tracker_subscribe(bus):
    bus.subscribe(SEEN.append)
'''

BROKEN = {
    "import_fails": "raise ImportError('this plugin cannot be imported')\n",
    "schemas_raise": '''
        import tracker

        @tracker.hookimpl
        def tracker_schemas():
            raise RuntimeError("tracker_schemas exploded")
        ''',
    "handler_raises": '''
        import tracker

        def on_event(event):
            raise ValueError(f"handler fails on {event.kind}")

        @tracker.hookimpl
        def tracker_subscribe(bus):
            bus.subscribe(on_event)
        ''',
    "slow_handler": f'''
        import time
        import tracker

        CALLS = []

        def on_record(event):
            CALLS.append(event.step)
            if len(CALLS) <= 2:
                time.sleep({SLOW_SECONDS})

        @tracker.hookimpl
        def tracker_subscribe(bus):
            bus.subscribe(on_record, kinds=["record"])
        ''',
    "dup_schema": '''
        import attrs
        import tracker

        @attrs.frozen
        class Other:
            value: float

        @tracker.hookimpl
        def tracker_schemas():
            return [tracker.Schema("good.point", Other)]
        ''',
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    install(site, "acme-good", {"good": GOOD})  # sorts first: it keeps the schema name "good.point"
    install(site, "broken-plugins", BROKEN)
    return site


def plugin_env(work: Path, site: Path) -> dict[str, str]:
    return child_env(work, PYTHONPATH=str(site))


@pytest.mark.slow
def test_logging_goes_on_through_broken_plugins_and_each_is_reported_once(site: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    out = tmp_path / "out.txt"
    # the good plugin counts what its handler saw; the child prints it after the run
    p = spawn("plugins", tmp_path, out, plugin_env(tmp_path, site), "--store", str(store), "--run-id", "plugged",
              "--count", str(RECORDS))
    assert p.wait(120) == 0, out.with_suffix(".err").read_text()
    acked = [int(a[0]) for a in ack_lines(out)]
    assert acked == list(range(RECORDS))
    err = out.with_suffix(".err").read_text()
    report = json.loads(err.strip().splitlines()[-1])
    warnings_text = "\n".join(line for line in err.splitlines() if "TrackerWarning" in line or "tracker:" in line)

    # Nothing lost: every record logged, and the good plugin's schema still works.
    view, records = read_run(store, "plugged")
    assert [r.data["k"] for r in records if r.schema == "metrics"] == list(range(RECORDS))
    assert [r.data for r in records if r.schema == "good.point"] == [{"value": 1.5}]
    assert len(report["refused"]) == 1 and report["refused"][0].startswith("dup.point")
    # The well-behaved plugin's handler saw every event, broken neighbours or not.
    assert report["seen"] == ["run_started"] + ["record"] * (RECORDS + 1) + ["run_finished"]
    assert view.info.status == "finished"

    # Each broken plugin is reported once, by name; the duplicate names both plugins.
    for name in BROKEN:
        hits = [line for line in warnings_text.splitlines() if f"plugin '{name}'" in line]
        assert len(hits) == 1, (name, warnings_text)
    (dup,) = [line for line in warnings_text.splitlines() if "plugin 'dup_schema'" in line]
    assert "'good'" in dup and "good.point" in dup
    (slow,) = [line for line in warnings_text.splitlines() if "plugin 'slow_handler'" in line]
    assert re.search(r"handler on_record took \d+\.\d+ s on one event", slow)

    # The process lists each as broken, with its error; the good one and the built-in are fine.
    infos = {p["name"]: p for p in report["plugins"]}
    for name in BROKEN:
        assert infos[name]["status"] == "broken" and infos[name]["error"], infos[name]
        assert infos[name]["distribution"] == "broken-plugins"
    assert "this plugin cannot be imported" in infos["import_fails"]["error"]
    assert "tracker_schemas exploded" in infos["schemas_raise"]["error"]
    assert "handler fails on" in infos["handler_raises"]["error"]
    assert re.search(r"took \d", infos["slow_handler"]["error"])
    assert infos["good"]["status"] == "ok" and infos["good"]["schemas"] == ["good.point"]
    assert infos["metrics"]["status"] == "ok"


def test_command_line_lists_plugins_broken_when_loaded(site: Path, tmp_path: Path) -> None:
    res = cli("plugins", "--format", "json", env=plugin_env(tmp_path, site), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    infos = {p["name"]: p for p in json.loads(res.stdout)}
    # Failures at loading show in any process; handler failures only where events flow (see the test above).
    for name in ("import_fails", "schemas_raise", "dup_schema"):
        assert infos[name]["status"] == "broken" and infos[name]["error"]
        assert sum(f"plugin '{name}' is broken" in line for line in res.stderr.splitlines()) == 1, res.stderr
    assert infos["good"]["status"] == "ok" and infos["metrics"]["status"] == "ok"
    assert {"handler_raises", "slow_handler"} <= set(infos)
    table = cli("plugins", env=plugin_env(tmp_path, site), cwd=tmp_path)
    assert table.returncode == 0 and "import_fails" in table.stdout and "broken" in table.stdout


def test_disabled_plugin_is_listed_disabled_and_not_imported(site: Path, tmp_path: Path) -> None:
    env = child_env(tmp_path, toml='[plugins]\ndisable = ["import_fails"]\n', PYTHONPATH=str(site))
    res = cli("plugins", "--format", "json", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    infos = {p["name"]: p for p in json.loads(res.stdout)}
    assert infos["import_fails"]["status"] == "disabled"
    assert "cannot be imported" not in res.stderr


def test_handler_failing_on_every_event_costs_bounded_memory_and_one_warning() -> None:
    bus = tracker.EventBus()
    bus.owner = "always_fails"
    bus.subscribe(lambda event: 1 / 0)
    bus.owner = None
    event = tracker.Event("record", "r", 0, 0.0, "metrics", {"x": 1.0})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3 * MAX_FAILURES):
            bus.publish(event)
    assert len(caught) == 1 and "'always_fails'" in str(caught[0].message)
    assert len(bus.failures) == MAX_FAILURES
