"""Plain value classes passed between the API, the bus, the store and readers.

``Event`` and ``Record`` are named tuples rather than attrs classes: one of
each is made per logged or read record, and a tuple is the cheapest object
Python can build (see benchmarks/bench_log.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs


class Event(NamedTuple):
    """One event on the bus: a run starting, a record, a run finishing.

    :ivar kind: one of :data:`tracker.core.format.EVENT_KINDS`: ``"run_started"``,
        ``"writer_started"``, ``"record"`` or ``"run_finished"``.
    :ivar run_id: the id of the run it belongs to.
    :ivar step: the record's step (``None`` for lifecycle events).
    :ivar time: seconds since the epoch when it was logged.
    :ivar schema: the schema name of a record (``None`` for lifecycle events).
    :ivar data: the record's fields, or the lifecycle event's facts.
    """

    kind: str
    run_id: str
    step: int | None
    time: float
    schema: str | None
    data: dict[str, Any]


class Record(NamedTuple):
    """One stored record as readers return it.

    :ivar step: the step it was logged at.
    :ivar time: seconds since the epoch.
    :ivar schema: its schema name.
    :ivar data: its fields (NaN and infinities restored as floats).
    :ivar writer: the id of the process that wrote it.
    :ivar seq: its sequence number within that writer's segment.
    """

    step: int
    time: float
    schema: str
    data: dict[str, Any]
    writer: str = ""
    seq: int = 0


@attrs.frozen(kw_only=True)
class RunInfo:
    """What is known about a run without reading its records.

    ``status`` is ``running``, ``finished``, ``failed`` or ``crashed``.
    ``records`` and ``last_step`` come from the writers' finish events or, for
    a writer that never finished, from its last line. ``name``, ``tags``,
    ``notes``, ``config`` and ``summary`` are the start event's with the
    run's edits applied (``tracker tag``, ``rename``, ``note``, ``run.config``,
    ``run.summary``). ``group`` and ``job_type`` are the start event's (W&B's
    ``init(group=, job_type=)``); a run started without a group by 0.4 or
    earlier reads its first ``group:<x>`` tag as its group (and ``job_type:<x>``
    as its job type).
    """

    id: str
    name: str | None = None
    project: str | None = None
    status: str = "running"
    created_at: float | None = None
    ended_at: float | None = None
    config: dict[str, Any] = attrs.field(factory=dict)
    tags: list[str] = attrs.field(factory=list)
    error: dict[str, Any] | None = None
    env: dict[str, Any] = attrs.field(factory=dict)
    writers: int = 0
    records: int = 0
    last_step: int | None = None
    last_metrics: dict[str, Any] = attrs.field(factory=dict)
    notes: str | None = None
    summary: dict[str, Any] = attrs.field(factory=dict)
    #: System figures of the finished writers (tracker.capture.system.Sampler.totals):
    #: cpu_percent_mean/peak, process_rss_peak_bytes, gpu_energy_kwh... Empty without sampling.
    system: dict[str, Any] = attrs.field(factory=dict)
    #: The group the run belongs to (seeds of one ablation, W&B's ``group``), and its job type.
    group: str | None = None
    job_type: str | None = None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end (to the last write for a running run)."""
        if self.created_at is None or self.ended_at is None:
            return None
        return self.ended_at - self.created_at

    def to_dict(self, *, copy: bool = True) -> dict[str, Any]:
        """The info as plain data (what ``tracker runs --format json`` prints).

        :param copy: copy the nested dicts and lists (``False``: share them, for a caller that
            only reads or encodes them).
        """
        if not copy:
            out = {name: getattr(self, name) for name in _RUNINFO_FIELDS}
            out["duration"] = self.duration
            return out
        out = {name: _copied(getattr(self, name)) for name in _RUNINFO_FIELDS}
        out["duration"] = self.duration
        return out


@attrs.frozen
class Problem:
    """Something wrong found while reading a store: a torn or corrupt line, a gap.

    :ivar path: the segment file.
    :ivar line: 1-based line number, or ``None`` for a whole-file problem.
    :ivar kind: ``torn``, ``corrupt``, ``checksum``, ``gap``, ``duplicate``,
        ``empty`` or ``no_start``.
    :ivar message: what is wrong, in words.
    """

    path: str
    line: int | None
    kind: str
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.kind}: {self.message}"


#: Tag prefixes that 0.4's W&B ``init`` wrote for ``group`` and ``job_type`` (read as those fields).
LABEL_TAGS = {"group": "group:", "job_type": "job_type:"}


def label_from_tags(tags: Any, field: str) -> str | None:
    """The value 0.4 kept as the tag ``<field>:<value>`` (``group:ablation-a``), or ``None``.

    :param field: ``"group"`` or ``"job_type"``.
    """
    prefix = LABEL_TAGS[field]
    for t in tags or ():
        if isinstance(t, str) and t.startswith(prefix) and len(t) > len(prefix):
            return t[len(prefix):]
    return None


_RUNINFO_FIELDS = tuple(f.name for f in attrs.fields(RunInfo))
#: RunInfo's field names in declaration order: what :func:`run_info_values` gives and
#: :func:`run_info_from_values` takes.
RUNINFO_FIELDS = _RUNINFO_FIELDS
_set = object.__setattr__


def run_info_values(info: RunInfo) -> list[Any]:
    """The info's field values in the order of :data:`RUNINFO_FIELDS` (nested values shared)."""
    return [getattr(info, name) for name in _RUNINFO_FIELDS]


def run_info_from_values(values: list[Any]) -> RunInfo:
    """The RunInfo of :func:`run_info_values`, built without the keyword call (a listing builds thousands).

    :raises ValueError: when ``values`` does not hold one value per field.
    """
    if type(values) is not list or len(values) != len(_RUNINFO_FIELDS):
        raise ValueError(f"expected {len(_RUNINFO_FIELDS)} RunInfo field values")
    info = object.__new__(RunInfo)
    for name, value in zip(_RUNINFO_FIELDS, values, strict=True):
        _set(info, name, value)
    return info


def _copied(value: Any) -> Any:
    """A copy of nested dicts and lists (plain values are shared): what ``attrs.asdict`` gave, faster."""
    t = type(value)
    if t is dict:
        return {k: _copied(v) if type(v) in (dict, list) else v for k, v in value.items()}
    if t is list:
        return [_copied(v) if type(v) in (dict, list) else v for v in value]
    return value
