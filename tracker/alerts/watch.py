"""The watcher: rules checked against the run catalog and the new lines of running runs.

Each poll lists the store through its catalog (each run's info, per-metric
figures and records per schema, kept up to date by reading only the lines
appended since the last look), then per rule and run:

- ``run crashed | failed | finished``: the run's status;
- ``METRIC > x`` (``<``, ``>=``, ``<=``): the metric's max (or min) in the catalog;
- ``METRIC is nan``: the lines appended since the last poll (the catalog keeps
  no NaN count), read from the offset reached before;
- ``no record for D``: the time of the run's last line, while it runs.

A rule fires once per run and condition: the alert is recorded in the run
(its ``condition`` field names the rule), so a watcher started again does
not send it twice. Runs that had ended before the watcher started are left alone.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from ..errors import StoreError, TrackerError
from ..format import METRICS, RECORD, LineError, parse_line
from ..segment import segment_paths
from .channels import Alert, build_channels
from .record import ALERT, deliver, read_alerts, write_observed
from .rules import Rule, parse_rules

_NAN = b'"NaN"'


@attrs.define
class _RunState:
    """What the watcher keeps of one run between polls."""

    status: str
    settled: bool = False            # ended before the watcher started: left alone until it changes
    fired: set[str] = attrs.field(factory=set)
    offsets: dict[str, int] = attrs.field(factory=dict)
    from_end: bool = False           # a run already running at start: its tails start at the end
    nan_steps: dict[str, int | None] = attrs.field(factory=dict)


class Watcher:
    """Checks the rules of ``[alerts]`` against a folder store; :meth:`poll` once, or :meth:`run` until stopped.

    :param store: a folder store (``tracker.open_store(path)``).
    :param host: the plugin host whose configuration holds the rules and channels.
    :param on_alert: called with each alert fired (the CLI prints it).
    :raises ConfigError: a rule that does not parse, or a channel that cannot be built.
    """

    def __init__(self, store: Any, host: Any, on_alert: Callable[[Alert], None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.host = host
        alerts = host.config.alerts
        self.rules: list[Rule] = parse_rules(alerts, host.config.file)
        self.channels = build_channels(alerts, host, host.config.file)  # a bad channel: an error now, not later
        self.interval = float(alerts.get("interval", 2.0))
        self.on_alert = on_alert
        self.clock = clock
        self.runs: dict[str, _RunState] = {}
        self.polls = 0
        self._nan_metrics = {r.condition.metric for r in self.rules if r.condition.kind == "nan"}

    # --- one poll -------------------------------------------------------------------------------

    def poll(self) -> list[Alert]:
        """Check every rule against every run once; the alerts fired."""
        first = self.polls == 0
        self.polls += 1
        fired: list[Alert] = []
        if not self.rules:
            return fired
        for entry in self.store.catalog():
            info = entry.info
            rules = [r for r in self.rules if r.watches(info.project, info.tags)]
            if not rules:
                continue
            st = self.runs.get(info.id)
            if st is None:
                st = self.runs[info.id] = _RunState(status=info.status, settled=first and info.status != "running",
                                                    from_end=first)
                if entry.schemas.get(ALERT):
                    st.fired = {a["condition"] for a in read_alerts(self.store.run(info.id)) if a["condition"]}
            if st.settled:
                if info.status == st.status:
                    continue
                st.settled = False  # resumed since: watched from now on
            st.status = info.status
            if info.status == "running" or not st.offsets.get("_final"):
                self._tail(info.id, st, rules, entry)
                if info.status != "running":
                    st.offsets["_final"] = 1
            for rule in rules:
                if rule.key in st.fired:
                    continue
                detail = self._check(rule, entry, st)
                if detail is not None:
                    fired.append(self._fire(rule, entry, st, detail))
        return fired

    def _check(self, rule: Rule, entry: Any, st: _RunState) -> str | None:
        """What the run shows that meets ``rule`` (a sentence), or ``None``."""
        info, cond = entry.info, rule.condition
        if cond.kind in ("crashed", "failed", "finished"):
            if info.status != cond.kind:
                return None
            err = info.error or {}
            why = f": {err.get('type')}: {err.get('message')}" if cond.kind == "failed" and err else ""
            return f"the run {cond.kind}{why}"
        if cond.kind == "stall":
            if info.status != "running":
                return None
            last = info.ended_at or info.created_at or self.clock()
            silent = self.clock() - last
            if silent < (cond.seconds or 0):
                return None
            return f"no record for {_duration(silent)} (the last at step {info.last_step})"
        stats = entry.metrics.get(cond.metric)
        if cond.kind == "nan":
            if cond.metric in st.nan_steps:
                return f"{cond.metric} is NaN at step {st.nan_steps[cond.metric]}"
            if stats and st.from_end and (_isnan(stats.get("last")) or (stats.get("count") and
                                                                          stats.get("min") is None)):
                return f"{cond.metric} is NaN (its last value)"
            return None
        if not stats:
            return None
        key = "max" if cond.op in (">", ">=") else "min"
        value = stats.get(key)
        if value is None or not cond.holds(value):
            return None
        return f"{cond.metric} = {value:g} at step {stats.get(f'{key}_step')} ({cond.text})"

    def _tail(self, run_id: str, st: _RunState, rules: list[Rule], entry: Any) -> None:
        """Read the lines appended to the run since the last poll, when a ``METRIC is nan`` rule watches it."""
        wanted = {r.condition.metric for r in rules if r.condition.kind == "nan" and r.key not in st.fired}
        if not wanted:
            return
        run_dir = Path(self.store.path) / "runs" / run_id
        try:
            paths = segment_paths(run_dir)
        except StoreError:
            return
        for path in paths:
            try:
                size = os.stat(path).st_size
                off = st.offsets.get(path.name)
                if off is None:
                    off = size if st.from_end else 0
                if size <= off:
                    st.offsets[path.name] = off
                    continue
                with open(path, "rb") as f:
                    f.seek(off)
                    data = f.read(size - off)
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            st.offsets[path.name] = off + end
            if _NAN not in data[:end]:
                continue  # no NaN anywhere in the new lines: nothing to parse
            for line in data[:end].split(b"\n"):
                if _NAN not in line:
                    continue
                try:
                    ev = parse_line(line)
                except LineError:
                    continue
                if ev.get("kind") != RECORD or ev.get("schema") != METRICS:
                    continue
                values = ev.get("data") or {}
                for m in wanted:
                    if values.get(m) == "NaN" and m not in st.nan_steps:
                        st.nan_steps[m] = ev.get("step")

    def _fire(self, rule: Rule, entry: Any, st: _RunState, detail: str) -> Alert:
        info = entry.info
        st.fired.add(rule.key)
        label = f"{info.name} ({info.id})" if info.name else info.id
        title = rule.title or f"{rule.condition.text}: {label}"
        text = f"Run {label}" + (f" of project {info.project}" if info.project else "") + f": {detail}."
        step = info.last_step if isinstance(info.last_step, int) else 0
        try:
            write_observed(Path(self.store.path) / "runs" / info.id,
                           {"title": title, "text": text, "level": rule.level, "suppressed": False,
                            "condition": rule.key}, step, fsync=self.host.config.fsync)
        except TrackerError as exc:
            print(f"tracker: warning: alert {title!r} not recorded in run {info.id}: {exc}", file=sys.stderr)
        item = Alert(title=title, text=text, level=rule.level, run_id=info.id, run_name=info.name,
                     project=info.project, condition=rule.key, time=self.clock(), step=step)
        deliver(self.host, item, rule.channels)
        if self.on_alert is not None:
            self.on_alert(item)
        return item

    # --- the loop -------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Poll every ``[alerts] interval`` seconds until ``stop`` is set; an error is reported, not fatal."""
        while not stop.is_set():
            try:
                self.poll()
            except TrackerError as exc:
                print(f"tracker: warning: watch: {exc}", file=sys.stderr)
            stop.wait(self.interval)


def _isnan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def start_in_thread(store: Any, host: Any, on_alert: Callable[[Alert], None] | None = None) -> threading.Event:
    """A watcher polling in a daemon thread (``tracker ui --watch``); set the returned event to stop it."""
    watcher = Watcher(store, host, on_alert)
    stop = threading.Event()
    threading.Thread(target=watcher.run, args=(stop,), name="tracker-watch", daemon=True).start()
    return stop
