"""The event bus: every event of every run of the process passes through it.

Who gets an event is resolved once per ``(kind, schema)`` pair and cached, and
the cache is dropped on every subscribe or unsubscribe, so publishing costs a
dict lookup and one call per interested handler; no pluggy hook is called on
the per-record path.

Handlers subscribed with ``critical=True`` (the store writer) run first and
their errors propagate to the caller of ``log``, so a record that could not be
stored raises instead of vanishing. Every other handler is isolated: an
exception is reported once, naming the plugin that subscribed it, and the
other handlers and the store go on. A handler that takes longer than
``slow_handler`` seconds on one event is reported once too (logging waits for
handlers, so a slow one slows the training loop); it keeps its events.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from tracker.core.errors import TrackerWarning  # noqa: F401 - public here since 0.1
from tracker.core.records import Event

Handler = Callable[[Event], Any]
_clock = time.perf_counter
#: How many handler failures ``EventBus.failures`` keeps (a handler may fail on every event).
MAX_FAILURES = 1000


class Subscription:
    """A handler's place on the bus; ``unsubscribe()`` removes it."""

    __slots__ = ("bus", "handler", "kinds", "schemas", "owner", "critical", "reported", "slow_reported")

    def __init__(self, bus: EventBus, handler: Handler, kinds: frozenset[str] | None,
                 schemas: frozenset[str] | None, owner: str | None, critical: bool) -> None:
        self.bus = bus
        self.handler = handler
        self.kinds = kinds
        self.schemas = schemas
        self.owner = owner
        self.critical = critical
        self.reported = False
        self.slow_reported = False

    def matches(self, kind: str, schema: str | None) -> bool:
        """Whether this subscription wants events of this kind and schema."""
        if self.kinds is not None and kind not in self.kinds:
            return False
        return self.schemas is None or schema in self.schemas

    def unsubscribe(self) -> None:
        """Stop delivering events to the handler (idempotent)."""
        self.bus._remove(self)

    def __repr__(self) -> str:
        return f"<Subscription {getattr(self.handler, '__qualname__', self.handler)!r} owner={self.owner!r}>"


class EventBus:
    """Delivers events to subscribed handlers.

    ``owner`` names the plugin whose ``tracker_subscribe`` is running, so that
    a handler's failures are reported under that plugin's name.
    """

    def __init__(self) -> None:
        self._subs: list[Subscription] = []
        self._routes: dict[tuple[str, str | None], tuple[Subscription, ...]] = {}
        self._lock = threading.Lock()
        self._watchers: list[Callable[[], Any]] = []
        self.owner: str | None = None
        #: Failures of isolated handlers, ``(owner, handler name, error text)``, in order (the first
        #: ``MAX_FAILURES`` of them).
        self.failures: list[tuple[str | None, str, str]] = []
        #: Seconds one call of an isolated handler may take before it is reported as slow.
        self.slow_handler = 0.5
        #: Called as ``on_report(owner, message)`` when a handler is first reported (the host lists
        #: its plugin as broken).
        self.on_report: Callable[[str | None, str], Any] | None = None

    def subscribe(self, handler: Handler, kinds: Iterable[str] | str | None = None,
                  schemas: Iterable[str] | str | None = None, *, critical: bool = False) -> Subscription:
        """Call ``handler(event)`` for every event of the given kinds and schemas.

        :param handler: a callable taking one :class:`Event`.
        :param kinds: event kinds to receive; ``None`` for all.
        :param schemas: record schemas to receive; ``None`` for all. Lifecycle
            events have no schema, so a schema filter receives records only.
        :param critical: errors propagate to the logging call instead of being
            reported; reserved for the store writer.
        :returns: a :class:`Subscription` whose ``unsubscribe()`` removes it.
        """
        if not callable(handler):
            raise TypeError(f"handler must be callable, given {type(handler).__name__}")
        sub = Subscription(self, handler, _frozen(kinds), _frozen(schemas), self.owner, critical)
        with self._lock:
            subs = [s for s in self._subs if s.critical] + ([sub] if critical else [])
            subs += [s for s in self._subs if not s.critical] + ([] if critical else [sub])
            self._subs = subs
            self._routes = {}
        self._changed()
        return sub

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            self._subs = [s for s in self._subs if s is not sub]
            self._routes = {}
        self._changed()

    def on_subscriptions_changed(self, callback: Callable[[], Any]) -> None:
        """Call ``callback()`` after every subscribe and unsubscribe.

        Whoever caches :meth:`route` results drops them there: the logging
        API keeps, per run and schema, whether a record needs an ``Event`` at all.
        """
        self._watchers.append(callback)

    def _changed(self) -> None:
        for callback in self._watchers:
            callback()

    def route(self, kind: str, schema: str | None) -> tuple[Subscription, ...]:
        """The subscriptions an event of ``kind`` and ``schema`` goes to, critical ones first.

        Resolved once per pair and cached until the next subscribe or unsubscribe.
        """
        subs = self._routes.get((kind, schema))
        if subs is None:
            subs = self._routes[(kind, schema)] = tuple(s for s in self._subs if s.matches(kind, schema))
        return subs

    def publish(self, event: Event) -> None:
        """Hand ``event`` to every matching handler, critical ones first."""
        subs = self._routes.get((event.kind, event.schema))
        if subs is None:
            subs = self.route(event.kind, event.schema)
        for sub in subs:
            if sub.critical:
                sub.handler(event)
                continue
            start = _clock()
            try:
                sub.handler(event)
            except Exception as exc:  # noqa: BLE001 - a plugin handler never stops logging
                self._report(sub, exc)
            if _clock() - start > self.slow_handler and not sub.slow_reported:
                self._report_slow(sub, _clock() - start)

    def _report(self, sub: Subscription, exc: Exception) -> None:
        name = getattr(sub.handler, "__qualname__", repr(sub.handler))
        if len(self.failures) < MAX_FAILURES:
            self.failures.append((sub.owner, name, f"{type(exc).__name__}: {exc}"))
        if sub.reported:
            return
        sub.reported = True
        self._warn(sub, f"handler {name} raised {type(exc).__name__}: {exc}")

    def _report_slow(self, sub: Subscription, seconds: float) -> None:
        sub.slow_reported = True
        name = getattr(sub.handler, "__qualname__", repr(sub.handler))
        self._warn(sub, f"handler {name} took {seconds:.2f} s on one event (limit {self.slow_handler:g} s); "
                        "logging waits for it")

    def _warn(self, sub: Subscription, message: str) -> None:
        who = f"plugin {sub.owner!r}" if sub.owner else "a handler"
        warnings.warn(f"tracker: {who}: {message} (reported once; logging goes on)", TrackerWarning, stacklevel=4)
        if self.on_report is not None:
            self.on_report(sub.owner, message)

    @property
    def subscriptions(self) -> list[Subscription]:
        """The current subscriptions, critical ones first."""
        return list(self._subs)


def _frozen(value: Iterable[str] | str | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset([value])
    return frozenset(value)
