"""The watcher: rules checked against the runs' segment ends and the lines appended since the last look.

Each poll lists the run folders; a run that has ended and whose files have
not changed since the last look costs one ``scandir``. For the others:

- ``run crashed | failed | finished`` and ``no record for D``: the run's
  info from the two ends of its segments (status, time of the last line), as
  ``tracker runs`` derives it, without reading its records;
- ``METRIC is nan`` and ``METRIC > x`` (``<``, ``>=``, ``<=``): the lines
  appended since the last poll, read from the offset reached before; only
  lines naming a watched metric are parsed.

One watcher per store: each takes ``<store>/alerts/watch.lock`` (an
``flock``, let go by the kernel when its process ends, however it ends), so
two ``tracker watch`` (or ``tracker ui --watch``) on one store never both
send an alert; the lock file names the holder for the second one's message.

A run already running when the watcher starts is first checked against its
per-metric figures (count, min, max, last: the derived data every reader
keeps), then followed from the end of its files. A rule fires once per run
and condition: the alert is recorded in the run (its ``condition`` field
names the rule), so a watcher started again does not send it twice. Runs that
had ended before the watcher started (or before ``since`` seconds earlier) are left alone.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson

from tracker.alerts.channels import Alert, build_channels
from tracker.alerts.record import ALERT, deliver, write_observed
from tracker.alerts.rules import Rule, parse_rules
from tracker.core.errors import StoreError, TrackerError
from tracker.core.files import close_quietly
from tracker.core.format import METRICS_HEAD, RECORD
from tracker.read.segment import is_observer, read_run_info, read_segment, segment_paths

#: Bytes of new lines read at a time.
TAIL_CHUNK = 4 << 20
#: The store's watcher lock, under ``<store>/``.
LOCK_PATH = ("alerts", "watch.lock")


class WatchLock:
    """The store's one-watcher lock: :meth:`acquire` takes it without waiting, :meth:`holder` says who has it.

    :param store_path: the store folder (made if it does not exist yet: the watcher writes its alerts there);
        a database URL has no folder to hold a lock, and its watcher takes none.
    """

    def __init__(self, store_path: str | os.PathLike[str]) -> None:
        self.folder = "://" not in str(store_path)
        self.path = Path(store_path).joinpath(*LOCK_PATH)
        self.fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; ``False`` when another process holds it.

        :raises OSError: when the lock file cannot be made (a store this user may not write).
        """
        try:
            import fcntl
        except ImportError:  # no flock on this system: nothing to take
            return True
        if not self.folder:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        # Who holds it, for the message of the next one (written only while holding it).
        import socket

        facts = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps(facts) + b"\n", 0)
        self.fd = fd
        return True

    def holder(self) -> str:
        """Who holds the lock, as the holder wrote it (``"another process"`` when it cannot be read)."""
        try:
            facts = orjson.loads(self.path.read_bytes())
            return f"pid {int(facts['pid'])} on {facts['host']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    def busy_message(self, store_path: Any) -> str:
        """The one line a second watcher prints."""
        return f"tracker: another watcher ({self.holder()}) already watches {store_path}; this one does not"

    def release(self) -> None:
        """Let go of the lock (closing the file drops it)."""
        close_quietly(self.fd)
        self.fd = None


@attrs.define
class _RunState:
    """What the watcher keeps of one run between polls."""

    status: str
    settled: bool = False            # ended before the watcher started: left alone until it changes
    fired: set[str] = attrs.field(factory=set)
    offsets: dict[str, int] = attrs.field(factory=dict)
    signature: Any = None            # the run's files as last seen (names, sizes, times)
    hits: dict[str, tuple[Any, Any]] = attrs.field(factory=dict)   # rule key -> (value, step) seen in new lines


class Watcher:
    """Checks the rules of ``[alerts]`` against a folder store; :meth:`poll` once, or :meth:`run` until stopped.

    :param store: a folder store (``tracker.open_store(path)``).
    :param host: the plugin host whose configuration holds the rules and channels.
    :param on_alert: called with each alert fired (the CLI prints it).
    :param since: seconds back from the start: runs that ended earlier than that are left alone
        (default 0: only runs that end while the watcher runs).
    :raises ConfigError: a rule that does not parse, or a channel that cannot be built.
    """

    def __init__(self, store: Any, host: Any, on_alert: Callable[[Alert], None] | None = None,
                 clock: Callable[[], float] = time.time, since: float | None = None) -> None:
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
        self.root = Path(store.path) / "runs"
        self.settle_before = clock() - (since or 0.0)

    # --- one poll -------------------------------------------------------------------------------

    def poll(self) -> list[Alert]:
        """Check every rule against every run once; the alerts fired."""
        first = self.polls == 0
        self.polls += 1
        fired: list[Alert] = []
        if not self.rules:
            return fired
        for run_id in self.store.run_ids():
            try:
                fired.extend(self._poll_run(run_id, first))
            except (StoreError, OSError) as exc:  # a run removed meanwhile, or unreadable: the others go on
                print(f"tracker: warning: watch: run {run_id}: {exc}", file=sys.stderr)
        return fired

    def _poll_run(self, run_id: str, first: bool) -> list[Alert]:
        run_dir = self.root / run_id
        st = self.runs.get(run_id)
        sig = _signature(run_dir)
        if st is not None and st.status != "running" and sig == st.signature:
            return []  # ended, and nothing changed since the last look
        segs = [read_segment(p) for p in segment_paths(run_dir)]
        info = read_run_info(run_dir, run_id, segs, self.host.config.heartbeat_timeout, lambda problem: None)
        if st is None:
            old = info.status != "running" and (info.ended_at or 0.0) < self.settle_before
            st = self.runs[run_id] = _RunState(status=info.status, settled=first and old)
            st.fired = _recorded_conditions(segs)
            if first and info.status == "running" and self._metric_rules(info):
                # Already running: what it logged so far from its per-metric figures, then its new lines.
                sizes = {p.name: p.stat().st_size for p in segment_paths(run_dir)}
                self._from_stats(run_id, st, info)
                st.offsets.update(sizes)
        st.signature = sig
        if st.settled:
            if info.status == st.status:
                return []
            st.settled = False  # resumed since: watched from now on
        st.status = info.status
        rules = [r for r in self.rules if r.watches(info.project, info.tags) and r.key not in st.fired]
        if not rules:
            return []
        self._tail(run_dir, st, [r for r in rules if r.condition.metric is not None])
        out = []
        for rule in rules:
            detail = self._check(rule, info, st)
            if detail is not None:
                out.append(self._fire(rule, info, st, detail))
        return out

    def _metric_rules(self, info: Any) -> list[Rule]:
        return [r for r in self.rules if r.condition.metric is not None and r.watches(info.project, info.tags)]

    def _from_stats(self, run_id: str, st: _RunState, info: Any) -> None:
        """Metric conditions over what a run logged before the watcher started, from its per-metric figures."""
        view = getattr(self.store, "_view", self.store.run)(run_id)
        stats = view.metric_stats()
        for rule in self._metric_rules(info):
            cond, s = rule.condition, stats.get(rule.condition.metric)
            if not s:
                continue
            if cond.kind == "nan":
                if _isnan(s.get("last")) or (s.get("count") and s.get("min") is None):
                    st.hits[rule.key] = (math.nan, s.get("last_step"))
                continue
            key = "max" if cond.op in (">", ">=") else "min"
            if s.get(key) is not None and cond.holds(s[key]):
                st.hits[rule.key] = (s[key], s.get(f"{key}_step"))

    def _check(self, rule: Rule, info: Any, st: _RunState) -> str | None:
        """What the run shows that meets ``rule`` (a sentence), or ``None``."""
        cond = rule.condition
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
        if rule.key not in st.hits:
            return None
        value, step = st.hits[rule.key]
        if cond.kind == "nan":
            return f"{cond.metric} is NaN at step {step}"
        return f"{cond.metric} = {value:g} at step {step} ({cond.text})"

    def _tail(self, run_dir: Path, st: _RunState, rules: list[Rule]) -> None:
        """Read the lines appended to the run's segments since the last poll, for the metric rules."""
        rules = [r for r in rules if r.key not in st.hits]
        if not rules:
            return
        for path in segment_paths(run_dir):
            try:
                size = path.stat().st_size
                off = st.offsets.get(path.name, 0)
                if size <= off:
                    continue
                with open(path, "rb") as f:
                    f.seek(off)
                    while off < size and rules:
                        # At most a few MiB at a time: a run that logged a lot since the last look
                        # is read in pieces, never held whole.
                        data = f.read(min(TAIL_CHUNK, size - off))
                        end = data.rfind(b"\n") + 1
                        if end == 0:
                            if len(data) < TAIL_CHUNK:
                                break  # a line still being written: read once it is complete
                            end = len(data)  # a line longer than a chunk: not a metrics record
                        else:
                            _scan(data[:end], st, rules)
                        off += end
                        f.seek(off)
                        rules = [r for r in rules if r.key not in st.hits]
            except OSError:
                continue
            st.offsets[path.name] = off

    def _fire(self, rule: Rule, info: Any, st: _RunState, detail: str) -> Alert:
        st.fired.add(rule.key)
        label = f"{info.name} ({info.id})" if info.name else info.id
        title = rule.title or f"{rule.condition.text}: {label}"
        text = f"Run {label}" + (f" of project {info.project}" if info.project else "") + f": {detail}."
        step = info.last_step if isinstance(info.last_step, int) else 0
        try:
            write_observed(self.root / info.id,
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


_patterns: dict[str, re.Pattern[bytes]] = {}
_STEP = re.compile(rb"-?\d+")


def _number_pattern(key: bytes) -> re.Pattern[bytes]:
    """The numbers that follow ``key`` (``"loss":``) anywhere in a chunk of lines."""
    if key not in _patterns:
        _patterns[key] = re.compile(re.escape(key) + rb"(-?[0-9][0-9.eE+-]*)")
    return _patterns[key]


def _metrics_step(chunk: bytes, pos: int) -> int | None:
    """The step of the ``metrics`` record whose ``data`` holds the bytes at ``pos``, or ``None`` when the line
    is another kind of line, or ``pos`` is not inside its ``data`` (the store's line format: docs/format.md)."""
    start = chunk.rfind(b"\n", 0, pos) + 1
    if not chunk.startswith(METRICS_HEAD, start):
        return None
    data = chunk.find(b',"data":{', start, pos)
    m = _STEP.match(chunk, start + len(METRICS_HEAD))
    return int(m.group()) if data >= 0 and m is not None else None


def _first_literal(chunk: bytes, needle: bytes) -> tuple[int, int] | None:
    """``(position, step)`` of the first ``metrics`` record holding ``needle`` in its data."""
    pos = chunk.find(needle)
    while pos >= 0:
        step = _metrics_step(chunk, pos)
        if step is not None:
            return pos, step
        pos = chunk.find(needle, pos + 1)
    return None


def _scan(chunk: bytes, st: _RunState, rules: list[Rule]) -> None:
    """Check the complete lines of ``chunk`` against the metric rules; the first line meeting a rule is its hit.

    No line is parsed as JSON: the watched metric's values are found by their key's bytes (a C-speed scan),
    and only when one of them meets the rule is its line looked at (a ``metrics`` record, the value in its data).
    """
    for rule in rules:
        cond = rule.condition
        if rule.key in st.hits or cond.metric is None:
            continue
        key = orjson.dumps(cond.metric) + b":"
        quoted = key + b'"' in chunk  # NaN and infinities are strings in the store: none here, nothing to find
        if cond.kind == "nan":
            found = _first_literal(chunk, key + b'"NaN"') if quoted else None
            if found is not None:
                st.hits[rule.key] = (math.nan, found[1])
            continue
        up = cond.op in (">", ">=")
        best: tuple[int, float, int] | None = None  # position, value, step
        inf = _first_literal(chunk, key + (b'"Infinity"' if up else b'"-Infinity"')) if quoted else None
        if inf is not None and cond.holds(math.inf if up else -math.inf):
            best = (inf[0], math.inf if up else -math.inf, inf[1])
        pattern = _number_pattern(key)
        values = pattern.findall(chunk)
        if values:
            try:
                numbers = list(map(float, values))
            except ValueError:  # a damaged number somewhere: look at each
                numbers = [math.inf if up else -math.inf]
            if cond.holds(max(numbers) if up else min(numbers)):
                for m in pattern.finditer(chunk, 0, best[0] if best else len(chunk)):
                    try:
                        value = float(m.group(1))
                    except ValueError:
                        continue
                    if cond.holds(value):
                        step = _metrics_step(chunk, m.start())
                        if step is not None:
                            best = (m.start(), value, step)
                            break
        if best is not None:
            st.hits[rule.key] = (best[1], best[2])


def _signature(run_dir: Path) -> Any:
    """The run's files as a comparable value: each segment's name, size and time, and the edits' folder time."""
    try:
        with os.scandir(run_dir) as it:
            segs = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in it if e.name.endswith(".jsonl"))
    except OSError:
        return None
    try:
        edits = os.stat(run_dir / "edits").st_mtime_ns
    except OSError:
        edits = None
    return segs, edits


def _recorded_conditions(segs: list[Any]) -> set[str]:
    """The conditions a watcher already recorded in the run (its observer segments, one record each)."""
    out = set()
    for seg in segs:
        if is_observer(seg):
            for ev in seg.tail:
                data = ev.get("data") or {}
                if ev.get("kind") == RECORD and ev.get("schema") == ALERT and data.get("condition"):
                    out.add(data["condition"])
    return out


def _isnan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def start_in_thread(store: Any, host: Any, on_alert: Callable[[Alert], None] | None = None,
                    say: Callable[[str], None] | None = None) -> threading.Event:
    """A watcher polling in a daemon thread (``tracker ui --watch``); set the returned event to stop it.

    The thread watches only while it holds the store's watcher lock: when another watcher has it,
    ``say`` is called once with a line saying so, and the thread takes the lock over when that one ends.
    """
    watcher = Watcher(store, host, on_alert)
    stop = threading.Event()
    lock = WatchLock(store.path)

    def run() -> None:
        said = False
        try:
            while not stop.is_set():
                try:
                    held = lock.acquire()
                except OSError as exc:
                    if say is not None:
                        say(f"tracker: warning: --watch: cannot take {lock.path} ({exc.strerror or exc}); "
                            "watching without it")
                    held = True
                if held:
                    watcher.run(stop)
                    return
                if not said and say is not None:
                    say(lock.busy_message(store.path))
                said = True
                stop.wait(watcher.interval)
        finally:
            lock.release()

    threading.Thread(target=run, name="tracker-watch", daemon=True).start()
    return stop
