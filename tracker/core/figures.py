"""The figure vocabulary of plugin panels: what a panel draws, as plain data.

A plugin's panel function returns a list of these figures; the dashboard
(``tracker ui``) draws them in the browser. Plugins never write HTML or
JavaScript, and every figure turns into JSON with :meth:`to_json`::

    from tracker import BarChart, Band, LineChart, Panel, Series, hookimpl

    @hookimpl
    def tracker_panels():
        return [Panel("grad.norms", "grad.norm", norms_panel, title="Gradient norms")]

    def norms_panel(table, run):
        return [LineChart("norm per step", [Series("norm", table["step"], table["norm"])],
                          x_label="step", log_y=True)]

Numbers may be numpy arrays or lists; NaN and infinities in series become
gaps (``null``). Text is always shown as text, never as HTML.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from tracker.core.errors import TrackerError

__all__ = ["Band", "BarChart", "Heatmap", "LineChart", "Panel", "Series", "TableFigure"]

_NONFINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


class FigureError(TrackerError):
    """A figure that cannot be drawn: lengths or shapes that do not match, a bad option."""


def _numbers(values: Any, what: str) -> list[float | None]:
    """A flat list of floats with NaN and infinities as ``None`` (gaps)."""
    if values is None:
        return []
    if hasattr(values, "tolist"):
        values = values.tolist()
    out: list[float | None] = []
    for i, v in enumerate(values):
        if v is None:
            out.append(None)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0:
                v = v.item()
            else:
                raise FigureError(f"{what}[{i}]: expected a number, given {type(v).__name__} {v!r:.40}")
        f = float(v)
        out.append(f if math.isfinite(f) else None)
    return out


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _plain(value: Any) -> Any:
    """A table cell as strict JSON: numpy scalars as numbers, non-finite floats as the store writes them."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else _NONFINITE[value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


@attrs.frozen
class Series:
    """One named series of a :class:`LineChart` or a :class:`BarChart`.

    :param name: shown in the legend.
    :param y: the values; NaN and infinities are gaps.
    :param x: the x values of a line chart (default: 0, 1, 2, ...); a bar
        chart ignores it (its categories are the x).
    :param kind: ``"line"``, ``"points"`` (markers only) or ``"dashed"``.
    :param color: a CSS colour; by default one from the dashboard's palette.
    """

    name: str
    y: Any
    x: Any = None
    kind: str = attrs.field(default="line", kw_only=True)
    color: str | None = attrs.field(default=None, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        """The series as plain data (``x`` filled in as 0, 1, 2, ... when not given)."""
        if self.kind not in ("line", "points", "dashed"):
            raise FigureError(f"series {self.name!r}: kind: expected 'line', 'points' or 'dashed', "
                              f"given {self.kind!r}")
        y = _numbers(self.y, f"series {self.name!r} y")
        x = _numbers(self.x, f"series {self.name!r} x") if self.x is not None else [float(i) for i in range(len(y))]
        if len(x) != len(y):
            raise FigureError(f"series {self.name!r}: x has {len(x)} values, y has {len(y)}: expected as many")
        return {"name": _text(self.name), "x": x, "y": y, "kind": self.kind, "color": self.color}


@attrs.frozen
class Band:
    """A shaded stretch of the x axis of a :class:`LineChart`, from ``start`` to ``end``.

    :param label: shown at the top of the band and in its tooltip (e.g. ``"PREDICT"``).
    :param color: a CSS colour; bands with the same label share a colour by default.
    """

    start: float
    end: float
    label: str = ""
    color: str | None = attrs.field(default=None, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        """The band as plain data."""
        start, end = _numbers([self.start, self.end], "band")
        if start is None or end is None:
            raise FigureError(f"band {self.label!r}: start and end must be finite numbers")
        return {"start": start, "end": end, "label": _text(self.label), "color": self.color}


def _as_series(series: Any) -> tuple[Series, ...]:
    if isinstance(series, Series):
        return (series,)
    if isinstance(series, dict):
        return tuple(Series(str(k), v) for k, v in series.items())
    return tuple(series)


@attrs.frozen
class LineChart:
    """Lines over a shared x axis, with optional shaded x bands.

    :param title: the chart's heading.
    :param series: :class:`Series` (or ``{name: y}``), drawn in order.
    :param x_label: the x axis' label (e.g. ``"step"``).
    :param y_label: the y axis' label.
    :param log_x: a logarithmic x axis.
    :param log_y: a logarithmic y axis (values <= 0 are left out).
    :param bands: :class:`Band` stretches shaded behind the lines.
    :param x_time: the x values are epoch seconds, drawn on a clock-time axis.
    :param x_range: ``(start, end)`` the x axis always spans (e.g. a run's whole duration), whatever
        the series cover.
    :param wide: the figure takes the whole width of the page.
    """

    title: str
    series: tuple[Series, ...] = attrs.field(converter=_as_series)
    x_label: str = attrs.field(default="", kw_only=True)
    y_label: str = attrs.field(default="", kw_only=True)
    log_x: bool = attrs.field(default=False, kw_only=True)
    log_y: bool = attrs.field(default=False, kw_only=True)
    bands: tuple[Band, ...] = attrs.field(default=(), converter=tuple, kw_only=True)
    x_time: bool = attrs.field(default=False, kw_only=True)
    x_range: tuple[float, float] | None = attrs.field(default=None, kw_only=True)
    wide: bool = attrs.field(default=False, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        """``{"type": "line", "title", "series", "bands", ...}``."""
        x_range = None
        if self.x_range is not None:
            x_range = _numbers(list(self.x_range), "x_range")
            if len(x_range) != 2 or None in x_range or x_range[0] > x_range[1]:
                raise FigureError(f"line chart {self.title!r}: x_range: expected (start, end) finite and "
                                  f"start <= end, given {self.x_range!r}")
        return {"type": "line", "title": _text(self.title), "x_label": _text(self.x_label),
                "y_label": _text(self.y_label), "log_x": bool(self.log_x), "log_y": bool(self.log_y),
                "series": [s.to_json() for s in self.series], "bands": [b.to_json() for b in self.bands],
                "x_time": bool(self.x_time), "x_range": x_range, "wide": bool(self.wide)}


@attrs.frozen
class BarChart:
    """Bars per category, one bar per series in each (grouped).

    :param title: the chart's heading.
    :param categories: the labels along the x axis.
    :param series: :class:`Series` (or ``{name: values}``), one value per category.
    :param y_label: the y axis' label.
    :param log_y: a logarithmic y axis.
    :param note: a line under the chart (what the values are, e.g. which window a mean is over).
    :param wide: the figure takes the whole width of the page.
    """

    title: str
    categories: Sequence[Any] = attrs.field(converter=list)
    series: tuple[Series, ...] = attrs.field(converter=_as_series)
    y_label: str = attrs.field(default="", kw_only=True)
    log_y: bool = attrs.field(default=False, kw_only=True)
    note: str = attrs.field(default="", kw_only=True)
    wide: bool = attrs.field(default=False, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        """``{"type": "bar", "title", "categories", "series": [{"name", "y"}], ...}``."""
        out = []
        for s in self.series:
            y = _numbers(s.y, f"series {s.name!r}")
            if len(y) != len(self.categories):
                raise FigureError(f"bar series {s.name!r}: {len(y)} values for {len(self.categories)} "
                                  "categories: expected one per category")
            out.append({"name": _text(s.name), "y": y, "color": s.color})
        return {"type": "bar", "title": _text(self.title), "categories": [_text(c) for c in self.categories],
                "series": out, "y_label": _text(self.y_label), "log_y": bool(self.log_y),
                "note": _text(self.note), "wide": bool(self.wide)}


@attrs.frozen
class Heatmap:
    """A grid of values ``z`` (rows of equal length), with optional marked cells.

    :param title: the chart's heading.
    :param z: ``len(y)`` rows of ``len(x)`` values; NaN cells are left blank.
    :param x: labels or values of the columns (default 0, 1, ...).
    :param y: labels or values of the rows (default 0, 1, ...).
    :param x_label: the x axis' label.
    :param y_label: the y axis' label.
    :param marked: ``(row, column)`` cells drawn with a mark (pruned gates, a minimum).
    :param mark_label: what a mark means, shown in the legend.
    :param vmin: the value of the colour scale's low end (default: the smallest value).
    :param vmax: the value of its high end (default: the largest value).
    :param log: colour by the logarithm of the values.
    :param origin: ``"upper"``: row 0 at the top (a matrix); ``"lower"``: row 0 at the bottom, so rows
        of increasing values (histogram bins) put larger values up.
    :param value_label: what the colour measures (e.g. ``"count"``), shown on the colour scale.
    :param wide: the figure takes the whole width of the page.
    :param cell_aspect: at most how many times wider than tall a cell is drawn (``1.0``: square cells, for
        a plane of two parameters such as a loss landscape); ``None`` (default): cells fill the width.
    """

    title: str
    z: Any
    x: Any = attrs.field(default=None, kw_only=True)
    y: Any = attrs.field(default=None, kw_only=True)
    x_label: str = attrs.field(default="", kw_only=True)
    y_label: str = attrs.field(default="", kw_only=True)
    marked: Sequence[tuple[int, int]] = attrs.field(default=(), kw_only=True)
    mark_label: str = attrs.field(default="", kw_only=True)
    vmin: float | None = attrs.field(default=None, kw_only=True)
    vmax: float | None = attrs.field(default=None, kw_only=True)
    log: bool = attrs.field(default=False, kw_only=True)
    origin: str = attrs.field(default="upper", kw_only=True)
    value_label: str = attrs.field(default="", kw_only=True)
    wide: bool = attrs.field(default=False, kw_only=True)
    cell_aspect: float | None = attrs.field(default=None, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        """``{"type": "heatmap", "title", "z": [[...]], "x", "y", "marked": [[row, col]], ...}``."""
        z = self.z.tolist() if hasattr(self.z, "tolist") else list(self.z)
        rows = [_numbers(r, f"z[{i}]") for i, r in enumerate(z)]
        width = len(rows[0]) if rows else 0
        for i, r in enumerate(rows):
            if len(r) != width:
                raise FigureError(f"heatmap {self.title!r}: row {i} has {len(r)} values, row 0 has {width}: "
                                  "expected rows of equal length")
        xs = self._labels(self.x, width, "x")
        ys = self._labels(self.y, len(rows), "y")
        marked = []
        for cell in self.marked:
            try:
                r, c = (int(v) for v in cell)
            except (TypeError, ValueError):
                raise FigureError(f"heatmap {self.title!r}: marked cell {cell!r}: expected (row, column)") from None
            if not (0 <= r < len(rows) and 0 <= c < width):
                raise FigureError(f"heatmap {self.title!r}: marked cell ({r}, {c}) is outside the "
                                  f"{len(rows)}x{width} grid")
            marked.append([r, c])
        vmin, vmax = _numbers([self.vmin, self.vmax], "vmin/vmax")
        if self.origin not in ("upper", "lower"):
            raise FigureError(f"heatmap {self.title!r}: origin: expected 'upper' or 'lower', given {self.origin!r}")
        return {"type": "heatmap", "title": _text(self.title), "z": rows, "x": xs, "y": ys,
                "x_label": _text(self.x_label), "y_label": _text(self.y_label), "marked": marked,
                "mark_label": _text(self.mark_label), "vmin": vmin, "vmax": vmax, "log": bool(self.log),
                "origin": self.origin, "value_label": _text(self.value_label), "wide": bool(self.wide),
                "cell_aspect": self._aspect()}

    def _aspect(self) -> float | None:
        if self.cell_aspect is None:
            return None
        a = _numbers([self.cell_aspect], "cell_aspect")[0]
        if a is None or not a > 0:
            raise FigureError(f"heatmap {self.title!r}: cell_aspect: expected a positive number, given "
                              f"{self.cell_aspect!r}")
        return float(a)

    def _labels(self, values: Any, n: int, axis: str) -> list[Any]:
        if values is None:
            return list(range(n))
        values = values.tolist() if hasattr(values, "tolist") else list(values)
        if len(values) != n:
            raise FigureError(f"heatmap {self.title!r}: {len(values)} {axis} labels for {n} "
                              f"{'columns' if axis == 'x' else 'rows'}")
        return [_plain(v) for v in values]


@attrs.frozen
class TableFigure:
    """A table: rows of plain values under named columns.

    :param title: the table's heading.
    :param rows: one dict per row.
    :param columns: the column order (default: the keys in order of appearance).
    :param notes: lines shown under the table.
    :param wide: the figure takes the whole width of the page.
    """

    title: str
    rows: Sequence[dict[str, Any]] = attrs.field(converter=list)
    columns: Sequence[str] | None = attrs.field(default=None, kw_only=True)
    notes: Sequence[str] = attrs.field(default=(), converter=tuple, kw_only=True)
    wide: bool = attrs.field(default=False, kw_only=True)

    @classmethod
    def from_summary(cls, summary: Any) -> TableFigure:
        """The table of a :class:`tracker.Summary` (title, rows, columns and notes)."""
        return cls(summary.title, summary.rows, columns=summary.column_names(), notes=summary.notes)

    def to_json(self) -> dict[str, Any]:
        """``{"type": "table", "title", "columns", "rows", "notes"}`` (non-finite numbers as the store writes them)."""
        columns = list(self.columns) if self.columns is not None else list(
            dict.fromkeys(k for r in self.rows for k in r))
        return {"type": "table", "title": _text(self.title), "columns": [_text(c) for c in columns],
                "rows": [{_text(k): _plain(v) for k, v in r.items()} for r in self.rows],
                "notes": [_text(n) for n in self.notes], "wide": bool(self.wide)}


@attrs.frozen
class Panel:
    """A plugin's panel on a run's page: figures drawn from the run's records of one schema.

    :param name: a dotted name, unique among panels (e.g. ``"fft.losses"``).
    :param schema: the schema whose records ``fn`` reads; the panel shows on
        the page of every run that holds such records.
    :param fn: ``fn(table, run) -> list`` of figures (:class:`LineChart`,
        :class:`Heatmap`, :class:`BarChart`, :class:`TableFigure`); ``table``
        is the run's :class:`tracker.Table` of ``schema``, ``run`` its
        :class:`tracker.RunView`.
    :param title: the panel's heading (default: its name).
    """

    name: str
    schema: str
    fn: Callable[..., list[Any]]
    title: str = ""


def figures_json(figures: Any, panel: str = "") -> list[dict[str, Any]]:
    """Each figure of a panel function's result as JSON.

    :raises FigureError: when the result is not a list of figures or a figure cannot be drawn.
    """
    if not isinstance(figures, (list, tuple)):
        raise FigureError(f"panel {panel!r} returned {type(figures).__name__}, expected a list of figures")
    out = []
    for f in figures:
        to_json = getattr(f, "to_json", None)
        if to_json is None:
            raise FigureError(f"panel {panel!r} returned {type(f).__name__}, expected a figure "
                              "(LineChart, Heatmap, BarChart, TableFigure)")
        out.append(to_json())
    return out
