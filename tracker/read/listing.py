"""Pages of the runs list: filters, a sort on any column, keyset cursors, and the choices a list offers.

What ``store.runs(..., sort=, limit=, cursor=)`` means, for every store: the
folder store answers it from its catalog (:func:`page_entries`), the team store
with SQL (:mod:`tracker.team.listing`), and both give the same rows in the same
order.

- A sort key is a column: a field of the run (``created_at``, ``name``,
  ``status``, ``duration``...: :data:`FIELDS`), ``config.KEY`` (nested keys
  dotted) or ``metric.NAME.last|min|max``; a leading ``-`` sorts descending.
- Values are ordered numbers first (booleans as 0 and 1), then text (by code
  point), then anything else (NaN, lists); a run without the value comes last
  in either direction. Ties are broken by run id, in the sort's direction, so
  the order is total and a page boundary is a single point of it.
- A cursor is opaque: it holds the sort and the last row's sort value and id,
  so the next page is the runs strictly after that point (keyset, not an
  offset): runs added meanwhile are never repeated or skipped by the pages
  still to come. ``offset`` jumps, for a scroll bar.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import orjson

from tracker.core.errors import TrackerError

#: The run fields a list sorts by (besides ``config.KEY`` and ``metric.NAME.STAT``).
FIELDS = ("created_at", "ended_at", "duration", "name", "project", "status", "id", "group", "job_type", "records",
          "last_step")
STATS = ("last", "min", "max")
DEFAULT_SORT = "-created_at"
#: The largest page a request may ask for.
MAX_LIMIT = 10_000
_CURSOR_V = 1
#: Ranks of sort values: numbers, text, other (NaN, lists, objects), missing.
NUMBER, TEXT, OTHER, MISSING = 0, 1, 2, 3


class ListingError(TrackerError, ValueError):
    """A sort key, cursor, limit or offset that cannot be used (the message names it)."""


@attrs.frozen
class SortKey:
    """A parsed sort: ``kind`` is ``field``, ``config`` or ``metric``; ``stat`` only for a metric."""

    kind: str
    name: str
    stat: str | None = None
    desc: bool = False

    @property
    def text(self) -> str:
        """The key as ``sort=`` writes it (``-metric.loss.min``)."""
        body = self.name if self.kind == "field" else f"{self.kind}.{self.name}" + \
            (f".{self.stat}" if self.stat else "")
        return ("-" if self.desc else "") + body


def parse_sort(text: str | None) -> SortKey:
    """The sort key of ``text`` (``None`` or empty: newest first).

    :raises ListingError: an unknown field, or a metric without ``.last``, ``.min`` or ``.max``.
    """
    text = (text or DEFAULT_SORT).strip()
    desc = text.startswith("-")
    body = text[1:] if desc or text.startswith("+") else text
    if body in FIELDS:
        return SortKey("field", body, None, desc)
    if body.startswith("config.") and len(body) > 7:
        return SortKey("config", body[7:], None, desc)
    if body.startswith("metric."):
        name, _, stat = body[7:].rpartition(".")
        if name and stat in STATS:
            return SortKey("metric", name, stat, desc)
        raise ListingError(f"sort: expected metric.NAME.last, .min or .max, given {text[:80]!r}")
    raise ListingError(f"sort: expected a field ({', '.join(FIELDS)}), config.KEY or metric.NAME.STAT, "
                       f"with - for descending, given {text[:80]!r}")


def rank(value: Any) -> tuple[int, float, str]:
    """A value's place in a sort: ``(rank, number, text)`` (see the module's docstring)."""
    if value is None:
        return (MISSING, 0.0, "")
    t = type(value)
    if t is bool:
        return (NUMBER, float(value), "")
    if t is int or t is float or isinstance(value, (int, float)):
        f = float(value)
        return (OTHER, 0.0, "") if f != f else (NUMBER, f, "")
    if t is str:
        return (TEXT, 0.0, value)
    return (OTHER, 0.0, "")


def _config_value(config: dict[str, Any], dotted: str) -> Any:
    """``config``'s value at ``a.b.c`` (a key holding dots taken whole first), ``None`` when absent."""
    if dotted in config:
        return config[dotted]
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return None if isinstance(node, dict) else node


def value_of(entry: Any, key: SortKey) -> Any:
    """The value ``key`` sorts ``entry`` (a catalog entry: ``info`` and ``metrics``) by."""
    info = entry.info
    if key.kind == "field":
        if key.name == "duration":
            if info.status == "running" or info.created_at is None or info.ended_at is None:
                return None  # a running run's duration grows with the clock: it has no place in a keyset
            return info.ended_at - info.created_at
        return getattr(info, key.name)
    if key.kind == "config":
        return _config_value(info.config or {}, key.name)
    peek = getattr(entry, "peek_metrics", None)  # a catalog entry: its figures parsed, not kept
    figures = (peek() if peek is not None else entry.metrics).get(key.name)
    return None if figures is None else figures.get(key.stat)


def order_key(entry: Any, key: SortKey) -> tuple[int, float, str, str]:
    """``(rank, number, text, run id)`` of an entry under ``key``."""
    r = rank(value_of(entry, key))
    return (r[0], r[1], r[2], entry.info.id)


def before(a: Sequence[Any], b: Sequence[Any], desc: bool) -> bool:
    """Whether order key ``a`` comes strictly before ``b`` (missing values last in either direction)."""
    if a[0] != b[0]:
        return a[0] < b[0]
    for x, y in zip(a[1:], b[1:], strict=True):
        if x != y:
            return x > y if desc else x < y
    return False


def sort_entries(entries: Iterable[Any], key: SortKey) -> tuple[list[Any], list[tuple[int, float, str, str]]]:
    """``entries`` in ``key``'s order, and their order keys."""
    keyed = [(order_key(e, key), e) for e in entries]
    keyed.sort(key=lambda p: p[0][1:], reverse=key.desc)
    keyed.sort(key=lambda p: p[0][0])  # stable: rank ascending in either direction
    return [e for _, e in keyed], [k for k, _ in keyed]


# --- cursors ---------------------------------------------------------------------------------------

def encode_cursor(key: SortKey, at: Sequence[Any]) -> str:
    """The opaque cursor after the row whose order key is ``at``."""
    r, num, text, rid = at
    doc = [_CURSOR_V, key.text, r, float(num).hex(), text, rid]
    return base64.urlsafe_b64encode(orjson.dumps(doc)).decode().rstrip("=")


def decode_cursor(cursor: str, key: SortKey) -> tuple[int, float, str, str]:
    """The order key a cursor points after.

    :raises ListingError: a cursor that does not parse, or that was made for another sort.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        v, sort, r, num, text, rid = orjson.loads(raw)
        if v != _CURSOR_V or type(r) is not int or type(text) is not str or type(rid) is not str:
            raise ValueError
        at = (r, float.fromhex(num), text, rid)
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise ListingError(f"cursor: expected a cursor from a previous page's next, given {cursor[:40]!r}") from None
    if sort != key.text:
        raise ListingError(f"cursor: made for sort {sort!r}, not for {key.text!r} (start again without a cursor)")
    return at


def check_page(limit: int | None, offset: int | None, cursor: str | None) -> None:
    """:raises ListingError: a limit outside 1..:data:`MAX_LIMIT`, a negative offset, or offset and cursor."""
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise ListingError(f"limit: expected 1 to {MAX_LIMIT}, given {limit}")
    if offset is not None and offset < 0:
        raise ListingError(f"offset: expected 0 or more, given {offset}")
    if offset is not None and cursor is not None:
        raise ListingError("cursor and offset: give one of them")


class RunPage(list):
    """One page of a runs list (a list of :class:`~tracker.RunInfo`), with ``total`` (runs the filters
    keep) and ``next`` (the cursor of the following page, ``None`` after the last)."""

    def __init__(self, items: Iterable[Any] = (), total: int = 0, next: str | None = None,  # noqa: A002
                 entries: list[Any] | None = None) -> None:
        super().__init__(items)
        self.total = total
        self.next = next
        #: the folder store's catalog entries of the page (per-metric figures, records per schema), else ``None``
        self.entries = entries
        #: every run id of the store (sorted) when the answer listed them anyway, else ``None``
        self.run_ids: list[str] | None = None


# --- filters ---------------------------------------------------------------------------------------

@attrs.frozen
class RunFilter:
    """The filters of a runs list: each left as ``None`` (or empty) keeps every run."""

    project: str | None = None
    status: str | None = None
    tags: tuple[str, ...] = ()
    q: str | None = None
    group: str | None = None
    job_type: str | None = None

    @classmethod
    def of(cls, project: str | None = None, status: str | None = None, tag: str | Iterable[str] | None = None,
           q: str | None = None, group: str | None = None, job_type: str | None = None) -> RunFilter:
        """From ``store.runs``'s arguments (``tag``: one tag or several, runs with all of them)."""
        tags = (tag,) if isinstance(tag, str) else tuple(t for t in (tag or ()) if t)
        return cls(project or None, status or None, tuple(t for t in tags if t), q or None, group, job_type)

    def keeps(self, info: Any) -> bool:
        """Whether the run of ``info`` passes."""
        if self.project is not None and info.project != self.project:
            return False
        if self.status is not None and info.status != self.status:
            return False
        if self.group is not None and info.group != self.group:
            return False
        if self.job_type is not None and info.job_type != self.job_type:
            return False
        if self.tags and not all(t in info.tags for t in self.tags):
            return False
        return not self.q or text_matches(info, self.q)


def text_fields(info: Any) -> list[str]:
    """The texts a run's text filter looks in: its id, name, project, tags, notes, group and job type."""
    hay = [info.id, info.name or "", info.project or "", *info.tags, info.notes or "", info.group or "",
           info.job_type or ""]
    return [str(h) for h in hay]


def text_matches(info: Any, text: str) -> bool:
    """Whether ``text`` (case folded) is in one of the run's :func:`text_fields`."""
    needle = text.casefold()
    return any(needle in h.casefold() for h in text_fields(info))


# --- the folder store's answer: over catalog entries ------------------------------------------------

def page_entries(entries: Iterable[Any], key: SortKey, limit: int | None = None, cursor: str | None = None,
                 offset: int | None = None, ordered: tuple[list[Any], list[Any]] | None = None
                 ) -> tuple[list[Any], int, str | None]:
    """One page of (already filtered) catalog entries: ``(entries, total, next cursor)``.

    :param ordered: the entries already in ``key``'s order with their order keys (a cache's), instead of sorting.
    """
    check_page(limit, offset, cursor)
    rows, keys = ordered if ordered is not None else sort_entries(entries, key)
    start = 0
    if cursor is not None:
        at = decode_cursor(cursor, key)
        lo, hi = 0, len(keys)
        while lo < hi:  # the first row strictly after the cursor
            mid = (lo + hi) // 2
            if before(at, keys[mid], key.desc):
                hi = mid
            else:
                lo = mid + 1
        start = lo
    elif offset is not None:
        start = min(offset, len(rows))
    end = len(rows) if limit is None else min(len(rows), start + limit)
    nxt = encode_cursor(key, keys[end - 1]) if end < len(rows) and end > start else None
    if end < len(rows) and end == start:  # an empty page before the end (limit 0 cannot be asked): none
        nxt = None
    return rows[start:end], len(rows), nxt


def choices(infos: Iterable[Any]) -> dict[str, Any]:
    """What a list's filters and columns offer: projects, tags, statuses, groups, job types, config keys and
    metric names (those of the runs' last metrics, sorted), with the default metric column (the one most runs
    logged, ties as ``tracker runs`` breaks them) and the project of the most runs.
    """
    from tracker.core.text import flatten
    from tracker.read.compare import better, key_metrics

    projects: dict[str, int] = {}
    tags: set[str] = set()
    statuses: set[str] = set()
    groups: set[str] = set()
    job_types: set[str] = set()
    config_keys: dict[str, None] = {}
    infos = list(infos)
    for info in infos:
        if info.project:
            projects[info.project] = projects.get(info.project, 0) + 1
        tags.update(info.tags)
        statuses.add(info.status)
        if info.group:
            groups.add(info.group)
        if info.job_type:
            job_types.add(info.job_type)
        if info.config:
            for k, _ in flatten(info.config):
                config_keys.setdefault(k, None)
    names: set[str] = set()
    for info in infos:
        names.update(info.last_metrics)
    common = key_metrics(infos, limit=1)
    metric_names = sorted(names)
    return {"projects": sorted(projects), "tags": sorted(tags), "statuses": sorted(statuses),
            "groups": sorted(groups), "job_types": sorted(job_types), "config_keys": list(config_keys),
            "metric_names": metric_names, "default_metric": common[0] if common else None,
            "metric_better": {n: better(n) for n in metric_names},
            "largest_project": max(projects, key=lambda p: projects[p]) if projects else None}


__all__ = ["DEFAULT_SORT", "FIELDS", "MAX_LIMIT", "STATS", "ListingError", "RunFilter", "RunPage", "SortKey",
           "before", "check_page", "choices", "decode_cursor", "encode_cursor", "order_key", "page_entries",
           "parse_sort", "rank", "sort_entries", "text_fields", "text_matches", "value_of"]
