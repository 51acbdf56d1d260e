"""How the records of a run get from ``Run.log`` to the run's segment in this process.

Each run this process logs to has one :class:`Attachment`: its segment
writer, shared by every ``Run`` object of that run here. A record whose schema
no handler but the store's wants takes a :class:`Route` of the attachment
straight to the segment, without an ``Event``; any other record is published
on the bus, where the store's handler (:class:`StoreSink`, critical, first)
appends it before the plugins' handlers see it. Routes are made on first use
and dropped whenever a handler subscribes or unsubscribes, and in a forked
child.
"""

from __future__ import annotations

import errno
import functools
import os
import secrets
import threading
import time as _time_mod
import weakref
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from tracker.core.errors import StoreError, TrackerError
from tracker.core.format import (
    METRICS,
    RECORD,
    RUN_STARTED,
    STRICT,
    WRITER_STARTED,
    encode_line,
    encode_nonfinite,
    record_template,
)
from tracker.core.records import Event
from tracker.core.schema import NO_INSTANCE, NeedsInstance, validators_disabled
from tracker.core.values import RESERVED
from tracker.write.fast import fastline
from tracker.write.writer import Heartbeat, SegmentWriter, on_fork_in_child

if TYPE_CHECKING:
    from tracker.host.host import Host

_time = _time_mod.time
_dumps = orjson.dumps
_crc32 = zlib.crc32


if fastline is not None:
    fastline.configure(orjson.dumps, STRICT, RESERVED | {""}, encode_nonfinite, _time, validators_disabled,
                       NO_INSTANCE, NeedsInstance)
#: ``_fastline.append`` (the common case of :meth:`Route.append`, in C), or ``None``.
fast_append: Callable[..., int | None] | None = fastline.append if fastline is not None else None


def fast_method(func: Callable[..., Any], kind: str) -> Callable[..., Any]:
    """``func`` (``Run.log`` or ``Run.log_record``) as a method whose common case runs in C, or ``func``.

    The C method descriptor takes ``run.log(values)`` and ``run.log_record(schema, **fields)`` (or a
    dict) without a Python frame, and calls ``func`` for anything it declines; it carries ``func``'s
    name, docstring and signature (``__wrapped__``).
    """
    if fastline is None:
        return func
    method = fastline.method(func, {"log": fastline.LOG, "log_record": fastline.LOG_RECORD}[kind])
    return functools.update_wrapper(method, func)


#: ``fast_append``'s flag for a record encoded with ``STRICT``.
FAST_STRICT = fastline.STRICT if fastline is not None else 0


def line_parts(template: dict[str, Any]) -> tuple[bytes, bytes, bytes, bytes] | None:
    """The constant parts of a record's line, between which step, time, seq and data go.

    Taken from the encoded template itself, so a line put together from them
    is byte for byte the one ``orjson.dumps`` of the filled-in template gives;
    ``None`` (the C fast path then declines) if the template does not encode in
    that order.
    """
    blank = _dumps(dict(template, step=0, time=0.0, seq=0, data=None))
    try:
        prefix, rest = blank.split(b'"step":0', 1)
        time_mark, rest = rest.split(b'0.0', 1)
        writer_mark, rest = rest.split(b'0,"data":', 1)
    except ValueError:
        return None
    parts = (prefix + b'"step":', time_mark, writer_mark, b',"data":')
    if rest != b"null}" or parts[0] + b"0" + time_mark + b"0.0" + writer_mark + b"0" + parts[3] + b"null}" != blank:
        return None
    return parts


class Route:
    """The records of one schema of one run, from this process straight to its segment.

    Owns the schema's record template for the segment's writer; the counts
    (sequence number, records, steps, latest metrics) are the writer's.
    """

    __slots__ = ("schema", "writer", "template", "last", "fast")

    def __init__(self, writer: SegmentWriter, schema: str, flat: tuple | None = None) -> None:
        """:param flat: the schema's flat checks (``CompiledSchema._flat``), for ``log_record``'s C path."""
        self.schema = schema
        self.writer = writer
        self.template = record_template(schema, writer.id)
        self.last = schema == METRICS
        parts = line_parts(self.template)
        #: What the C fast path reads, in one attribute: the writer, whether to keep the latest
        #: metrics, the lines' constant parts, the CRC-32 of the first (the line's CRC continues it)
        #: and the schema's flat checks.
        self.fast = (writer, self.last, parts, _crc32(parts[0]) if parts else 0, flat)

    def append(self, steps: list[int], step: int | None, time: float, data: dict[str, Any],
               strict: bool = False) -> int:
        """Write one record of checked ``data``: the logging fast path.

        The route's template is filled in under the writer's lock and encoded
        with one ``orjson.dumps``, so the line is the one
        :meth:`SegmentWriter.append` writes, byte for byte, without building an
        event; :meth:`SegmentWriter.commit` writes it (one ``os.write`` in the common case).

        :param steps: the calling ``Run``'s counter of automatic steps
            (:meth:`SegmentWriter.next_steps`), advanced past the step written.
        :param step: an int within ±2**53, or ``None`` for the next of
            ``steps``, taken under the lock so that threads never share one.
        :param time: seconds since the epoch.
        :param data: the record's fields, checked by their schema (or, with
            ``strict``, metric values checked by type only).
        :param strict: encode with ``STRICT`` and let its TypeError out, for
            ``run.log``'s fast path, which then takes the full check.
        :returns: the record's step, once the line is in the file.
        :raises SchemaError: when ``data`` does not encode (not ``strict``); nothing is written.
        :raises TypeError: when ``data`` does not encode under ``STRICT`` (``strict``); nothing is written.
        :raises StoreError: when the line cannot be written.
        """
        if fast_append is not None:
            done = fast_append(self, steps, step, time, data, FAST_STRICT if strict else 0)
            if done is not None:
                return done
        w = self.writer
        template = self.template
        # ``with``, not acquire() then try: a signal between those two would leave the lock held.
        with w.lock:
            seq, records, top = w.counts
            if step is None:
                step = steps[0]
            template["step"] = step
            template["time"] = time
            template["seq"] = seq = seq + 1
            template["data"] = data
            option = STRICT if strict else 0
            try:
                head = _dumps(template, option=option)[:-1]
                # orjson writes NaN and infinities as null, and a record's event
                # holds no other null where a float goes: only such lines are
                # encoded twice. (``rfind`` costs half of ``in`` on bytes.)
                if head.rfind(b"null") >= 0:
                    head = _dumps(dict(template, data=encode_nonfinite(data)), option=option)[:-1]
            except TypeError:
                if strict:
                    raise
                encode_line({"schema": self.schema, "data": data})  # raises the SchemaError that names why
                raise
            line = head + b',"crc":"%08x"}\n' % _crc32(head)
            w.commit(line, (seq, records + 1, step if step > top else top), data if self.last else None,
                     steps, step)
            return step


class Attachment:
    """This process's writer for one run, shared by every ``Run`` object of that run here."""

    __slots__ = ("writer", "store", "run_id", "refs", "routes", "sink", "sampler", "recorders")

    def __init__(self, writer: SegmentWriter, store: Path, run_id: str, sink: StoreSink) -> None:
        self.writer = writer
        self.store = store
        self.run_id = run_id
        self.sink = sink
        #: How many ``Run`` objects of this process use it; the last to finish closes the segment.
        self.refs = 0
        #: Routes by schema, made on first use, cleared when the bus's subscriptions change.
        self.routes: dict[str, Route] = {}
        #: The system metrics sampler (tracker.capture.system), if on; the last ``Run`` stops it.
        self.sampler: Any = None
        #: The console and environment recorders (tracker.capture.Recorders), if on; the last ``Run`` stops them.
        self.recorders: Any = None

    def route(self, schema: str) -> Route | None:
        """The route of ``schema``'s records, if only the store wants them (else they take the bus)."""
        route = self.routes.get(schema)
        if route is None and self.sink.only_store_wants(schema) and not self.writer.stale:
            compiled = self.sink.schemas.get(schema)
            route = self.routes[schema] = Route(self.writer, schema, compiled._flat if compiled is not None else None)
        return route


class StoreSink:
    """The store's handler on a host's bus: appends each event to its run's segment."""

    def __init__(self, host: Host) -> None:
        self.attached: dict[str, Attachment] = {}
        self.bus = host.bus
        #: The host's compiled schemas: a route keeps its schema's flat checks for the C fast path.
        self.schemas = host.schemas
        self.subscription = host.bus.subscribe(self, critical=True)
        host.bus.on_subscriptions_changed(self.forget_routes)

    def only_store_wants(self, schema: str) -> bool:
        """Whether no handler but this one takes records of ``schema``."""
        route = self.bus.route(RECORD, schema)
        return len(route) == 1 and route[0] is self.subscription

    def forget_routes(self) -> None:
        """Drop every route: a handler was subscribed or unsubscribed, or the process forked."""
        for att in list(self.attached.values()):
            att.routes.clear()

    def __call__(self, event: Event) -> None:
        att = self.attached.get(event.run_id)
        if att is None:
            return  # a run whose segment is not open yet: its start event is written already
        w = att.writer
        if w.stale:
            _reopen_after_fork(w)
        w.append(event.kind, event.schema, event.step, event.time, event.data)


def _reopen_after_fork(w: SegmentWriter) -> None:
    w.reopen()
    w.append(WRITER_STARTED, None, None, _time(), {**w.facts(), "resumed": True, "forked": True})
    w.reveal()


# Keyed by the host object itself: an id() could be reused by a later host and
# hand it a sink subscribed to a dead bus, losing every record.
_sinks: weakref.WeakKeyDictionary[Host, StoreSink] = weakref.WeakKeyDictionary()


def sink_for(host: Host) -> StoreSink:
    """The store's handler on ``host``'s bus (subscribed on first use)."""
    sink = _sinks.get(host)
    if sink is None:
        sink = _sinks[host] = StoreSink(host)
        on_fork_in_child(_forget_all_routes)
    return sink


def _forget_all_routes() -> None:
    # A forked child's first record takes the bus, whose store handler opens
    # the child's own segment; only then do records take routes again.
    for sink in list(_sinks.values()):
        sink.forget_routes()


# --- attaching a run ---------------------------------------------------------------------------

_lock = threading.RLock()
_heartbeats: dict[float, Heartbeat] = {}


def attach(host: Host, root: Path, run_id: str, resume: bool, meta: dict[str, Any],
           at: float | None = None) -> Attachment:
    """This process's attachment to run ``run_id`` of the store at ``root``, one more ``Run`` counted.

    The first attachment of a run in the process opens its segment (creating
    the run unless it exists) and publishes the start event to the plugins.

    :param meta: name, project, config, tags and origin, for the segment's first line.
    :param at: the start event's time (default: now; importers give the source run's start).
    :raises TrackerError: the run exists and ``resume`` is false, or it is open in another store here.
    """
    sink = sink_for(host)
    with _lock:
        att = sink.attached.get(run_id)
        if att is not None and att.store != root:
            raise TrackerError(f"run {run_id} is already open in store {att.store} in this process")
        if att is None:
            writer, event, max_step = _open_segment(host, root, run_id, resume, meta, at)
            writer.continue_after(max_step)
            att = Attachment(writer, root, run_id, sink)
            # The start event is in the segment already: the bus hands it to the plugins only
            # (the store's handler skips a run it has not attached yet).
            host.bus.publish(event)
            sink.attached[run_id] = att
            interval = host.config.heartbeat_interval
            hb = _heartbeats.get(interval) or _heartbeats.setdefault(interval, Heartbeat(interval))
            hb.add(writer)
            if (getattr(host.config, "team_url", None) or os.environ.get("TRACKER_TEAM_URL")
                    or os.environ.get("TRACKER_URL")):
                from tracker.write.stream import on_run_attached  # streaming: the follower process

                on_run_attached(root, run_id, writer, host.config)
        att.refs += 1
        return att


def detach(att: Attachment, last_words: Callable[[], None]) -> None:
    """One ``Run`` of ``att`` less: the last one calls ``last_words()`` (its finish event), then closes the segment."""
    with _lock:
        try:
            if att.refs == 1:
                last_words()
        finally:
            att.refs -= 1
            if att.refs == 0:
                att.writer.close()
                for hb in list(_heartbeats.values()):
                    hb.discard(att.writer)
                att.sink.attached.pop(att.run_id, None)


def _open_segment(host: Host, root: Path, run_id: str, resume: bool, meta: dict[str, Any],
                  at: float | None = None) -> tuple[SegmentWriter, Event, int | None]:
    """This process's segment of run ``run_id``, its first line written: ``(writer, start event, max step)``.

    A new run's folder appears whole: its first segment and start event are
    written in a hidden staging folder that one rename puts in place, so of
    several processes creating the same run at once exactly one does and the
    others attach. A segment added to an existing run is written under a
    hidden name and renamed once its first line is in. A kill -9 at any
    moment thus leaves neither a run without its start event nor an empty
    segment; at most a hidden leftover that readers skip.
    """
    fsync = host.config.fsync
    runs = root / "runs"
    run_dir = runs / run_id
    if not run_dir.exists():
        staging = runs / f".new-{run_id}-{secrets.token_hex(4)}"
        try:
            staging.mkdir()
        except OSError as exc:
            raise StoreError(f"cannot create {run_dir}: {exc.strerror}") from None
        writer = SegmentWriter(staging, fsync=fsync)
        event = Event(RUN_STARTED, run_id, None, _time() if at is None else at, None,
                      {**writer.facts(), **meta, "resumed": False})
        try:
            writer.append(event.kind, None, None, event.time, event.data)
            os.rename(staging, run_dir)
        except OSError as exc:
            writer.discard()
            _remove_folder(staging)
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise StoreError(f"cannot create {run_dir}: {exc.strerror}") from None
            if not resume:  # another process made the run meanwhile
                raise TrackerError(f"run {run_id} already exists in {root}; pass resume=True to append to it") \
                    from None
        except BaseException:
            writer.discard()
            _remove_folder(staging)
            raise
        else:
            writer.moved(run_dir)
            return writer, event, None
    from tracker.read.reader import RunView

    last = RunView(root, run_id, host=host).max_step()
    writer = SegmentWriter(run_dir, fsync=fsync, hidden=True)
    event = Event(WRITER_STARTED, run_id, None, _time() if at is None else at, None,
                  {**writer.facts(), **meta, "resumed": True})
    try:
        writer.append(event.kind, None, None, event.time, event.data)
        writer.reveal()
    except BaseException:
        writer.discard()
        raise
    return writer, event, last


def _remove_folder(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
