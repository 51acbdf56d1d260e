"""Summaries: the columnar ``Table`` a summarizer reads and the ``Summary`` it returns."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    import numpy as np

    from tracker.core.schema import CompiledSchema


#: The NaN that stands where a record lacks a metric: a quiet NaN with its own
#: payload, so that a logged NaN (data) and a missing value stay apart.
MISSING: float = struct.unpack("<d", struct.pack("<Q", 0x7FF8_7472_6163_6B00))[0]
_MISSING_BITS = 0x7FF8_7472_6163_6B00


@attrs.frozen
class Summary:
    """A small table that the CLI renders as an aligned table, JSON or CSV.

    :param title: a heading.
    :param rows: one dict per row, plain values (str, int, float, bool, None).
    :param columns: the column order; by default the keys in order of appearance.
    :param notes: lines shown under the table (totals, the worst item, flags).
    """

    title: str
    rows: list[dict[str, Any]]
    columns: list[str] | None = None
    notes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    summarizer: str = attrs.field(default="", kw_only=True)
    schema: str = attrs.field(default="", kw_only=True)

    def column_names(self) -> list[str]:
        """The columns in display order."""
        if self.columns is not None:
            return list(self.columns)
        seen: dict[str, None] = {}
        for row in self.rows:
            for k in row:
                seen.setdefault(k, None)
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain data (what ``--format json`` prints)."""
        return {"title": self.title, "summarizer": self.summarizer, "schema": self.schema,
                "columns": self.column_names(), "rows": [dict(r) for r in self.rows],
                "notes": list(self.notes)}


@attrs.frozen
class Summarizer:
    """Turns one run's records of one schema into a :class:`Summary`.

    :param name: a dotted name, e.g. ``"metrics.scalars"``.
    :param schema: the schema whose records ``fn`` reads.
    :param fn: ``fn(table) -> Summary``, or ``fn(table, run) -> Summary`` to
        also read other schemas of the same run through the ``RunView``.
    :param description: one line shown by ``tracker plugins``.
    """

    name: str
    schema: str
    fn: Callable[..., Summary]
    description: str = ""


class Table:
    """One run's records of one schema, as columns.

    ``table[name]`` is a numpy array for numeric fields (float64, int64 or bool)
    and a list otherwise; ``table["step"]`` and ``table["time"]`` are always
    there. ``rows()`` yields instances of the schema's class.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # ``tracker.Table(columns=[...], data=[...])`` is W&B's ``wandb.Table`` (a W&B script after
        # ``import tracker as wandb``): a call without a schema name makes one of those.
        schema = args[0] if args else kwargs.get("schema")
        if cls is Table and (args or kwargs) and not isinstance(schema, str) and Table.wandb_table is not None:
            return Table.wandb_table(*args, **kwargs)
        return super().__new__(cls)

    #: W&B's table class, set by :mod:`tracker.integrations.wandb.init` (the read core imports nothing above it).
    wandb_table: Any = None

    def __init__(self, schema: str, steps: list[int], times: list[float],
                 data: list[dict[str, Any]], compiled: CompiledSchema | None = None) -> None:
        import numpy as np

        self.schema = schema
        self._data = data
        self._compiled = compiled
        self._length = len(data)
        cols: dict[str, Any] = {"step": np.asarray(steps, dtype=np.int64),
                                "time": np.asarray(times, dtype=np.float64)}
        if compiled is not None and not compiled.free_form:
            for name, kind in compiled.kinds.items():
                values = [d.get(name) for d in data]
                cols[name] = _column(values, kind)
        else:
            names: dict[str, None] = {}
            for d in data:
                for k in d:
                    names.setdefault(k, None)
            for name in names:
                values = [d.get(name) for d in data]
                cols[name] = _column(values, "f" if compiled is not None else "?")
        self.columns: dict[str, Any] = cols

    @classmethod
    def from_columns(cls, schema: str, columns: dict[str, Any], length: int,
                     compiled: CompiledSchema | None = None,
                     rows: Callable[[], Iterator[dict[str, Any]]] | None = None) -> Table:
        """A table from ready columns (``step``, ``time`` and one per field).

        :param rows: streams the records' data again for :meth:`rows`.
        """
        table = cls.__new__(cls)
        table.schema = schema
        table.columns = dict(columns)
        table._compiled = compiled
        table._data = None
        table._rows = rows
        table._length = length
        return table

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, name: str) -> Any:
        try:
            return self.columns[name]
        except KeyError:
            raise KeyError(f"schema {self.schema!r} has no column {name!r}; "
                           f"columns: {', '.join(self.columns)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def numeric_columns(self) -> dict[str, np.ndarray]:
        """The numeric record fields (not step or time) as numpy arrays."""
        return {k: v for k, v in self.columns.items()
                if k not in ("step", "time") and hasattr(v, "dtype") and v.dtype.kind in "fiub"}

    def present(self, name: str) -> np.ndarray:
        """A bool array: which records hold field ``name`` (a logged NaN counts as held)."""
        import numpy as np

        col = self[name]
        if self._data is not None:
            return np.array([name in d and d[name] is not None for d in self._data], dtype=bool)
        if hasattr(col, "dtype") and col.dtype == np.float64:
            return col.view(np.uint64) != _MISSING_BITS
        return np.ones(len(self), dtype=bool)

    def rows(self) -> Iterator[Any]:
        """Each record as an instance of the schema's class (dicts when it is unknown)."""
        for d in self._data if self._data is not None else self._rows():
            yield self._compiled.structure(d) if self._compiled is not None else dict(d)

    def __repr__(self) -> str:
        return f"<Table {self.schema!r}: {len(self)} rows, columns {list(self.columns)}>"


def _column(values: list[Any], kind: str) -> Any:
    """A numpy array for numeric values (NaN where a record lacks one), else the list."""
    import numpy as np

    if kind in ("f", "?"):
        numeric = all(v is None or type(v) in (float, int, bool) for v in values)
        if numeric and (kind == "f" or any(v is not None for v in values)):
            return np.array([MISSING if v is None else v for v in values], dtype=np.float64)
        return values
    if kind == "i" and all(type(v) is int for v in values):
        return np.array(values, dtype=np.int64)
    if kind == "b" and all(type(v) is bool for v in values):
        return np.array(values, dtype=bool)
    return values


def summarize_run(run: Any, schema: str | None = None) -> list[Summary]:
    """Every summary of every schema a run holds (or of one schema), in that order.

    ``run`` is any reader with ``host``, ``schemas()`` and ``table(name)``
    (a run of a folder store or of the team database). A summarizer that
    raises gives a summary that says so instead of stopping the others.
    """
    import warnings

    from tracker.core.errors import TrackerWarning
    from tracker.core.schema import fn_takes_run

    names = [schema] if schema is not None else run.schemas()
    out = []
    for name in names:
        sums = run.host.summarizers_for(name)
        if not sums:
            continue
        table = run.table(name)
        if not len(table):
            continue
        for s in sums:
            try:
                result = s.fn(table, run) if fn_takes_run(s.fn) else s.fn(table)
                if not isinstance(result, Summary):
                    raise TypeError(f"returned {type(result).__name__}, expected tracker.Summary")
                out.append(attrs.evolve(result, summarizer=s.name, schema=name))
            except Exception as exc:  # noqa: BLE001 - one failing summarizer never hides the others
                owner = run.host.summarizer_owner.get(s.name)
                warnings.warn(f"tracker: plugin {owner!r}: summarizer {s.name} raised "
                              f"{type(exc).__name__}: {exc}", TrackerWarning, stacklevel=3)
                out.append(Summary(f"{s.name} failed", [], notes=(f"{type(exc).__name__}: {exc}",),
                                   summarizer=s.name, schema=name))
    return out
