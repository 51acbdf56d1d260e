"""Sort columns: a catalog's order keys as numpy arrays, so that a sort never asked before is one ``lexsort``.

The dashboard keeps a folder store's catalog entries (:class:`tracker.ui.runlist.RunList`); a page of a new
sort over 100,000 of them used to build 100,000 Python tuples and sort them. Here each sort column is made
once per catalog version as arrays: the rank of each run's value (numbers, text, other, missing: see
:mod:`tracker.read.listing`), its number, the code-point rank of its text, and the rank of the run's id.
The order of a sort, over every run or over those a filter keeps, is then ``numpy.lexsort`` of those
arrays (the sort's direction by negation, the rank always ascending), and its rows and order keys are made
only for the positions a page reads (:class:`Ordered`). The order is exactly
:func:`tracker.read.listing.sort_entries`'s (a test holds them equal on random entries).

A metric's figures live in each entry's JSON text, whose parsing costs most of a new sort; the figures of
the metrics most runs logged are read into columns in one pass (:meth:`Columns.prepare_metrics`, which the
dashboard calls in the thread that read the catalog, before a sort is asked), the others when first asked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

from tracker.read.listing import (
    FIELDS,
    MISSING,
    NUMBER,
    OTHER,
    STATS,
    TEXT,
    RunFilter,
    SortKey,
    _config_value,
    rank,
    text_fields,
    value_of,
)

#: The config keys most runs have whose columns are made ahead.
CONFIG_KEYS = 16
#: At most this many bytes of metric columns are made ahead, per catalog version (the most logged metrics).
METRIC_BUDGET = 64 << 20


#: What separates a run's text fields in :meth:`Columns.haystacks` (a text holding it is matched field by field).
_SEP = "\x00"


class Column:
    """One sort key's values over a catalog version: ``rank`` (int8), ``num`` (float64, 0 unless a number),
    ``text_rank`` (int64 code-point rank among the column's texts; ``None`` when it has none) and ``values``
    (the values themselves, for a text's order key; empty for a column of numbers and gaps)."""

    __slots__ = ("rank", "num", "text_rank", "values", "texts")

    def __init__(self, values: list[Any]) -> None:
        import numpy as np

        n = len(values)
        self.values = values
        self.text_rank = None
        #: the column's distinct texts, sorted by code point (``text_rank`` indexes them)
        self.texts: list[str] = []
        types = set(map(type, values))
        if types <= {float, int, bool, type(None)}:  # numbers and gaps, vectorised
            obj = np.array(values, dtype=object) if n else np.zeros(0, object)
            missing = np.equal(obj, None) if n else np.zeros(0, bool)
            num = np.zeros(n, np.float64)
            try:
                num[~missing] = obj[~missing].astype(np.float64)
            except OverflowError:  # an int beyond a float: ranked one by one below
                types = {object}
            else:
                nan = num != num
                num[nan] = 0.0
                self.rank = np.where(missing, MISSING, np.where(nan, OTHER, NUMBER)).astype(np.int8)
                self.num = num
                self.values = []  # no text to look up: the values are let go
                return
        if types <= {str, type(None)}:  # text and gaps: code-point ranks by numpy (unless a text ends in NUL,
            texts = [v for v in values if v is not None]  # which numpy's strings drop)
            if "\x00" not in "".join(texts):
                obj = np.array(values, dtype=object)
                missing = np.equal(obj, None) if type(None) in types else None
                self.rank = np.full(n, TEXT, np.int8)
                self.num = np.zeros(n, np.float64)
                self.text_rank = np.zeros(n, np.int64)
                uniques, inverse = np.unique(np.array(texts), return_inverse=True)
                self.texts = uniques.tolist()
                if missing is None:
                    self.text_rank[:] = inverse.reshape(-1)
                else:
                    self.rank[missing] = MISSING
                    self.text_rank[~missing] = inverse.reshape(-1)
                return
            self.rank = np.fromiter((MISSING if v is None else TEXT for v in values), np.int8, n)
            self.num = np.zeros(n, np.float64)
        else:
            ranked = [rank(v) for v in values]
            self.rank = np.fromiter((r[0] for r in ranked), np.int8, n)
            self.num = np.fromiter((r[1] for r in ranked), np.float64, n)
        texts = {v for v in values if type(v) is str}
        if texts:
            self.texts = sorted(texts)
            at = {t: j for j, t in enumerate(self.texts)}
            self.text_rank = np.fromiter((at.get(v, 0) if type(v) is str else 0 for v in values), np.int64, n)

    def equals(self, text: str) -> Any:
        """Which rows hold exactly ``text`` (a bool array)."""
        from bisect import bisect_left

        import numpy as np

        j = bisect_left(self.texts, text)
        if j < len(self.texts) and self.texts[j] == text and self.text_rank is not None:
            return (self.rank == TEXT) & (self.text_rank == j)
        return np.zeros(len(self.rank), bool)

    def text(self, i: int) -> str:
        """Row ``i``'s text (the row's rank is :data:`~tracker.read.listing.TEXT`)."""
        return self.values[i]

    @property
    def nbytes(self) -> int:
        return self.rank.nbytes + self.num.nbytes + (0 if self.text_rank is None else self.text_rank.nbytes)


class Columns:
    """The sort columns of one list of catalog entries (a catalog version), made when first asked for.

    Safe to share between threads: a column is made once (under a lock) and never changed.
    """

    def __init__(self, entries: Sequence[Any]) -> None:
        import numpy as np

        self.entries = entries
        self.ids = [e.info.id for e in entries]
        n = len(self.ids)
        self.id_rank = np.empty(n, np.int64)
        if n:
            self.id_rank[np.argsort(np.array(self.ids), kind="stable")] = np.arange(n)
        self._cols: dict[tuple[str, str, str | None], Column] = {}
        self._lock = threading.Lock()  # a field's or config key's column being made
        self._metrics_lock = threading.Lock()  # metric columns being made (one pass over every run's figures)
        self._counts: dict[str, int] | None = None  # runs per metric name (of their last values)
        #: the columns an earlier version had made (the sorts asked then): :meth:`prepare` makes them again
        self.asked: list[tuple[str, str, str | None]] = []
        self._tags: dict[str, Any] | None = None  # tag -> positions of the runs that have it (an int array)
        self._hay: list[str] | None = None  # each run's text fields, case folded (text_rows)

    def column(self, key: SortKey) -> Column:
        """The column of ``key`` (its direction aside)."""
        k = (key.kind, key.name, key.stat)
        col = self._cols.get(k)
        if col is not None:
            return col
        with self._metrics_lock if key.kind == "metric" else self._lock:
            col = self._cols.get(k)
            if col is None:
                if key.kind == "metric":  # the parse is the cost: the most logged metrics made in the same pass
                    ahead = [m for m in self.metrics_ahead() if ("metric", m, STATS[0]) not in self._cols]
                    self._metric_columns(list(dict.fromkeys([key.name, *ahead])))
                    col = self._cols[k]
                elif key.kind == "field" and key.name != "duration":
                    col = self._cols[k] = Column(list(map(attrgetter(f"info.{key.name}"), self.entries)))
                else:
                    col = self._cols[k] = Column([value_of(e, key) for e in self.entries])
        return col

    def prepare(self, asked: Iterable[tuple[str, str, str | None]] = (), budget: int = METRIC_BUDGET) -> None:
        """Make ahead the columns of every field, of the keys ``asked`` (``(kind, name, stat)``: sorts asked of
        an earlier version), and of the metrics most runs logged (:meth:`prepare_metrics`)."""
        for name in FIELDS:
            self.column(SortKey("field", name))
        self.tag_index()  # so that a first filter on tags or text finds them made
        self.haystacks()
        for kind, name, stat in asked:
            if kind != "metric":
                self.column(SortKey(kind, name, stat))
        self.prepare_config()
        self.prepare_metrics(budget, [name for kind, name, _ in asked if kind == "metric"])

    def keys(self) -> list[tuple[str, str, str | None]]:
        """The ``(kind, name, stat)`` of the columns made so far."""
        return list(self._cols)

    def prepare_config(self, most: int = CONFIG_KEYS) -> list[str]:
        """Make the columns of the ``most`` config keys most runs have (flattened, dotted), in one pass."""
        from tracker.core.text import flatten

        counts: dict[str, int] = {}
        configs = [e.info.config for e in self.entries]
        for c in configs:
            if c:
                for k, _ in flatten(c):
                    counts[k] = counts.get(k, 0) + 1
        names = sorted(counts, key=lambda k: (-counts[k], k))[:most]
        with self._lock:
            todo = [k for k in names if ("config", k, None) not in self._cols]
            values: dict[str, list[Any]] = {k: [] for k in todo}
            for c in configs:
                for k, got in values.items():
                    got.append(_config_value(c, k) if c else None)
            for k, got in values.items():
                self._cols[("config", k, None)] = Column(got)
        return names

    def prepare_metrics(self, budget: int = METRIC_BUDGET, also: Iterable[str] = ()) -> list[str]:
        """Make the columns of the metrics most runs logged (by their last values in the runs' infos), as many
        as fit in ``budget`` bytes, and of the metrics ``also``, in one pass over the entries' figures; the
        metric names made."""
        names = self.metrics_ahead(budget)
        names += [m for m in also if m not in names]
        with self._metrics_lock:
            todo = [m for m in names if ("metric", m, STATS[0]) not in self._cols]
            if todo:
                self._metric_columns(todo)
        return names

    def metrics_ahead(self, budget: int = METRIC_BUDGET) -> list[str]:
        """The metrics most runs logged (by their last values in the runs' infos), as many as fit in ``budget``
        bytes of columns."""
        counts = self._counts
        if counts is None:
            counts = {}
            for e in self.entries:
                for name in e.info.last_metrics:
                    counts[name] = counts.get(name, 0) + 1
            self._counts = counts
        per_metric = len(STATS) * len(self.entries) * 9
        return sorted(counts, key=lambda m: (-counts[m], m))[:max(0, budget // max(1, per_metric))]

    def _metric_columns(self, names: list[str]) -> None:
        """Make the ``last``, ``min`` and ``max`` columns of metrics ``names`` (the caller holds the lock)."""
        values: dict[str, list[list[Any]]] = {m: [[] for _ in STATS] for m in names}
        for e in self.entries:
            peek = getattr(e, "peek_metrics", None)  # a catalog entry: its figures parsed, not kept
            figures = peek() if peek is not None else e.metrics
            for m, lists in values.items():
                got = figures.get(m)
                for j, stat in enumerate(STATS):
                    lists[j].append(None if got is None else got.get(stat))
        for m, lists in values.items():
            for j, stat in enumerate(STATS):
                self._cols[("metric", m, stat)] = Column(lists[j])

    def kept(self, flt: RunFilter) -> Any:
        """The positions (an int array) of the entries ``flt`` keeps: its project, status, group and job type
        compared over their columns at once, each tag a lookup (:meth:`tag_rows`), its text searched for in
        every run's text fields at once (:meth:`text_rows`)."""
        import numpy as np

        mask = np.ones(len(self.entries), bool)
        for name in ("project", "status", "group", "job_type"):
            want = getattr(flt, name)
            if want is not None:
                mask &= self.column(SortKey("field", name)).equals(want)
        rows = np.flatnonzero(mask)
        for tag in flt.tags:
            rows = np.intersect1d(rows, self.tag_rows(tag), assume_unique=True)
        if flt.q:
            found = self.text_rows(flt.q, None if len(rows) == len(self.entries) else rows)
            if found is None:  # a text holding the separator: run by run
                entries, rest = self.entries, RunFilter(q=flt.q)
                found = np.fromiter((i for i in rows.tolist() if rest.keeps(entries[i].info)), np.int64)
            rows = found
        return rows

    def tag_rows(self, tag: str) -> Any:
        """The positions of the runs tagged ``tag`` (sorted)."""
        import numpy as np

        return self.tag_index().get(tag, np.zeros(0, np.int64))

    def tag_index(self) -> dict[str, Any]:
        """Each tag's runs (sorted positions), made on first use."""
        import numpy as np

        index = self._tags
        if index is None:
            with self._lock:
                index = self._tags
                if index is None:
                    lists: dict[str, list[int]] = {}
                    for i, e in enumerate(self.entries):
                        for t in e.info.tags:
                            if type(t) is str:  # a filter's tags are text: nothing else equals them
                                lists.setdefault(t, []).append(i)
                    index = self._tags = {t: np.array(sorted(set(v)), np.int64) for t, v in lists.items()}
        return index

    def text_rows(self, text: str, rows: Any = None) -> Any:
        """The positions (of all, or of the sorted positions ``rows``) of the runs whose id, name, project, tags,
        notes, group or job type hold ``text`` (case folded, as :func:`tracker.read.listing.text_matches`);
        ``None`` when ``text`` holds a NUL character (which separates the fields here)."""
        import numpy as np

        needle = text.casefold()
        if _SEP in needle:
            return None
        hay = self.haystacks()
        if rows is None:
            return np.fromiter((i for i, h in enumerate(hay) if needle in h), np.int64)
        return np.fromiter((i for i in rows.tolist() if needle in hay[i]), np.int64)

    def haystacks(self) -> list[str]:
        """Each run's text fields, case folded, NUL between them (made on first use)."""
        hay = self._hay
        if hay is None:
            with self._lock:
                hay = self._hay
                if hay is None:
                    hay = self._hay = [_SEP.join(text_fields(e.info)).casefold() for e in self.entries]
        return hay

    def order(self, key: SortKey, rows: Any = None) -> Ordered:
        """The entries (all, or the positions ``rows``: an int array) in ``key``'s order."""
        import numpy as np

        col = self.column(key)
        pick = (lambda a: a) if rows is None else (lambda a: a[rows])
        r, num, idr = pick(col.rank), pick(col.num), pick(self.id_rank)
        tr = pick(col.text_rank) if col.text_rank is not None else np.zeros(len(r), np.int64)
        if key.desc:
            num, tr, idr = -num, -tr, -idr
        at = np.lexsort((idr, tr, num, r))
        return Ordered(self, col, at if rows is None else np.asarray(rows)[at])


class Ordered:
    """A sort's order over a catalog version: ``rows`` (entries) and ``keys`` (order keys), each a sequence
    made per position read, as :func:`tracker.read.listing.page_entries` takes them (``ordered=``)."""

    def __init__(self, columns: Columns, col: Column, at: Any) -> None:
        self.rows = _Rows(columns.entries, at)
        self.keys = _Keys(col, columns.ids, at)

    def __iter__(self) -> Any:  # unpacked as ``(rows, keys)``
        return iter((self.rows, self.keys))

    def __getitem__(self, i: int) -> Any:
        return (self.rows, self.keys)[i]


class _Rows:
    __slots__ = ("entries", "at")

    def __init__(self, entries: Sequence[Any], at: Any) -> None:
        self.entries, self.at = entries, at

    def __len__(self) -> int:
        return len(self.at)

    def __getitem__(self, pos: Any) -> Any:
        if isinstance(pos, slice):
            return [self.entries[i] for i in self.at[pos].tolist()]
        return self.entries[int(self.at[pos])]

    def __iter__(self) -> Any:
        return (self.entries[i] for i in self.at.tolist())


class _Keys:
    __slots__ = ("col", "ids", "at")

    def __init__(self, col: Column, ids: list[str], at: Any) -> None:
        self.col, self.ids, self.at = col, ids, at

    def __len__(self) -> int:
        return len(self.at)

    def __getitem__(self, pos: int) -> tuple[int, float, str, str]:
        if isinstance(pos, slice):
            return [self[p] for p in range(*pos.indices(len(self)))]  # type: ignore[return-value]
        i = int(self.at[pos])
        r = int(self.col.rank[i])
        return (r, float(self.col.num[i]) if r == NUMBER else 0.0, self.col.values[i] if r == TEXT else "",
                self.ids[i])

    def __iter__(self) -> Any:
        return (self[p] for p in range(len(self)))


__all__ = ["METRIC_BUDGET", "Column", "Columns", "Ordered"]
