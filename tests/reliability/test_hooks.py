"""Hook order and hook wrappers, with plugins installed as real entry points (issue 10, item 13).

The host calls each plugin's implementation on its own (to know who offered
what), and must still call them in pluggy's order: ``tryfirst`` first,
``trylast`` last, the others last-registered first. Wrappers
(``wrapper=True``, ``hookwrapper=True``) are refused: the plugin is reported
broken with an error naming it, instead of silently never running.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs
import pytest

import tracker
from tests.reliability.support import child_env, cli, install, local_host, read_run

ORDERED = {
    name: f'''
        import order_log
        import tracker

        @tracker.hookimpl({marker})
        def tracker_configure(config):
            order_log.CALLS.append(("configure", "{name}"))

        @tracker.hookimpl({marker})
        def tracker_subscribe(bus):
            order_log.CALLS.append(("subscribe", "{name}"))
            bus.subscribe(lambda event: order_log.EVENTS.append(("{name}", event.kind)), kinds=["run_started"])
        '''
    for name, marker in (("a_plain", ""), ("b_first", "tryfirst=True"), ("c_last", "trylast=True"),
                         ("d_plain", ""))
}

WRAPPERS = {
    "new_wrapper": '''
        import tracker

        @tracker.hookimpl(wrapper=True)
        def tracker_configure(config):
            result = yield
            return result
        ''',
    "old_wrapper": '''
        import tracker

        @tracker.hookimpl(hookwrapper=True)
        def tracker_schemas():
            yield
        ''',
}

CHILD = r'''
import json, sys, warnings
warnings.simplefilter("always")
import order_log
import tracker

host = tracker.get_host()
ours = [c for c in order_log.CALLS]
order_log.CALLS.clear()
host.pm.hook.tracker_configure(config=host.config)  # pluggy itself, for comparison
pluggy_order = [name for _, name in order_log.CALLS]
with tracker.start_run(store=sys.argv[1], run_id="hooks") as run:
    run.log({"k": 1.0})
print(json.dumps({"calls": ours, "pluggy": pluggy_order, "events": order_log.EVENTS,
                  "plugins": [p.to_dict() for p in tracker.list_plugins()]}))
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("hooksite")
    site.joinpath("order_log.py").write_text("CALLS = []\nEVENTS = []\n")
    install(site, "order-plugins", ORDERED)
    install(site, "wrapper-plugins", WRAPPERS)
    return site


def run_child(site: Path, tmp_path: Path) -> tuple[dict, str]:
    import subprocess

    res = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "store")], capture_output=True, text=True,
                         env=child_env(tmp_path, PYTHONPATH=str(site)), cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1]), res.stderr


def test_hooks_are_called_in_pluggys_order(site: Path, tmp_path: Path) -> None:
    out, _ = run_child(site, tmp_path)
    expected = ["b_first", "d_plain", "a_plain", "c_last"]  # tryfirst, then last registered first, then trylast
    assert out["pluggy"] == expected
    assert [name for hook, name in out["calls"] if hook == "configure"] == expected
    assert [name for hook, name in out["calls"] if hook == "subscribe"] == expected
    # Handlers were subscribed in that order, and see events in that order.
    assert out["events"] == [[name, "run_started"] for name in expected]


def test_hook_wrappers_are_refused_naming_the_plugin(site: Path, tmp_path: Path) -> None:
    out, err = run_child(site, tmp_path)
    infos = {p["name"]: p for p in out["plugins"]}
    for name, hook in (("new_wrapper", "tracker_configure"), ("old_wrapper", "tracker_schemas")):
        assert infos[name]["status"] == "broken", infos[name]
        assert hook in infos[name]["error"] and "wrapper" in infos[name]["error"], infos[name]
        assert sum(f"plugin '{name}'" in line for line in err.splitlines()) == 1, err
    assert all(infos[n]["status"] == "ok" for n in ORDERED), infos
    view, records = read_run(tmp_path / "store", "hooks")
    assert [r.data for r in records] == [{"k": 1.0}] and view.info.status == "finished"
    res = cli("plugins", "--format", "json", env=child_env(tmp_path, PYTHONPATH=str(site)), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    listed = {p["name"]: p for p in json.loads(res.stdout)}
    assert listed["new_wrapper"]["status"] == "broken" and "wrapper" in listed["new_wrapper"]["error"]


def test_a_name_offered_twice_stays_with_the_plugin_loaded_first_whatever_the_markers() -> None:
    @attrs.frozen
    class Point:
        value: float

    class First:
        @tracker.hookimpl(trylast=True)
        def tracker_schemas(self) -> list:
            return [tracker.Schema("dup.point", Point)]

    class Second:
        @tracker.hookimpl(tryfirst=True)  # called first, loaded second
        def tracker_schemas(self) -> list:
            return [tracker.Schema("dup.point", Point)]

    with pytest.warns(tracker.TrackerWarning, match="plugin 'second' is broken.*'first'"):
        host = local_host(First(), Second(), names=["first", "second"])
    assert host.schema_owner["dup.point"] == "first"
    assert {p.name: p.status for p in host.plugins()}["second"] == "broken"
