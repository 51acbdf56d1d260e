"""The event bus: filters, unsubscribe, isolated handlers, no hook call per record."""

from __future__ import annotations

import warnings
from pathlib import Path

import pluggy
import pytest

import tracker
from tracker.core.records import Event


def _event(kind: str = "record", schema: str | None = "metrics") -> Event:
    return Event(kind, "r1", 0, 0.0, schema, {"x": 1.0})


def test_subscribe_filters_by_kind_and_schema_and_unsubscribes() -> None:
    bus = tracker.EventBus()
    seen: dict[str, list[str]] = {"all": [], "rec": [], "fft": []}
    bus.subscribe(lambda e: seen["all"].append(e.kind))
    sub = bus.subscribe(lambda e: seen["rec"].append(e.schema), kinds=["record"])
    bus.subscribe(lambda e: seen["fft"].append(e.schema), schemas="fft.loss_point")
    bus.publish(_event())
    bus.publish(_event(schema="fft.loss_point"))
    bus.publish(_event("run_started", None))
    sub.unsubscribe()
    sub.unsubscribe()
    bus.publish(_event())
    assert seen == {"all": ["record", "record", "run_started", "record"], "rec": ["metrics", "fft.loss_point"],
                    "fft": ["fft.loss_point"]}


def test_raising_handler_is_reported_once_naming_its_plugin_and_others_go_on() -> None:
    bus = tracker.EventBus()
    got = []
    bus.owner = "badplugin"
    bus.subscribe(lambda e: 1 / 0)
    bus.owner = None
    bus.subscribe(got.append)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            bus.publish(_event())
    msgs = [str(w.message) for w in caught if issubclass(w.category, tracker.TrackerWarning)]
    assert len(msgs) == 1 and "badplugin" in msgs[0] and "ZeroDivisionError" in msgs[0]
    assert len(got) == 3
    assert len(bus.failures) == 3


def test_critical_handler_errors_propagate_and_run_first() -> None:
    bus = tracker.EventBus()
    order = []
    bus.subscribe(lambda e: order.append("plugin"))

    def store(e: Event) -> None:
        order.append("store")
        raise OSError("disk full")

    bus.subscribe(store, critical=True)
    with pytest.raises(OSError):
        bus.publish(_event())
    assert order == ["store"]  # a record that was not stored is not shown to plugins


class RaisingHandlerPlugin:
    def __init__(self) -> None:
        self.events: list[Event] = []

    @tracker.hookimpl
    def tracker_subscribe(self, bus: tracker.EventBus) -> None:
        bus.subscribe(self.events.append)
        bus.subscribe(self.explode, kinds=["record"])

    def explode(self, event: Event) -> None:
        raise RuntimeError("handler broke")


def test_handler_that_raises_never_loses_a_record(tmp_store: Path, make_tracker_host) -> None:  # noqa: ANN001
    plugin = RaisingHandlerPlugin()
    make_tracker_host(plugin, names=["exploder"])
    with pytest.warns(tracker.TrackerWarning, match="exploder"):
        with tracker.start_run() as run:
            for i in range(5):
                run.log({"i": float(i)})
    assert tracker.open_store().run(run.id).metrics()["i"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [e.kind for e in plugin.events] == ["run_started"] + ["record"] * 5 + ["run_finished"]
    assert plugin.events[1].data == {"i": 0.0} and plugin.events[1].run_id == run.id


def test_no_pluggy_hook_is_called_per_record(tmp_store: Path, make_tracker_host,  # noqa: ANN001
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    make_tracker_host(RaisingHandlerPlugin(), names=["p"])
    run = tracker.start_run()
    calls = []
    original = pluggy.HookCaller.__call__

    def counting(self: pluggy.HookCaller, *args: object, **kwargs: object) -> object:
        calls.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pluggy.HookCaller, "__call__", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(100):
            run.log({"i": float(i)})
    run.finish()
    assert calls == []
