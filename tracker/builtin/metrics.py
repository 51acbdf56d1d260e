"""The core's ``metrics`` schema: free-form ``{name: number}`` records; and ``metric_axis``, the x-axes
that ``define_metric(name, step_metric=...)`` gives metrics.

Its summarizers give, per metric, the count, NaN count, first, last, min and
max (each with its step) and mean; and for the run, the steps and the wall
time from the first to the last record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from tracker import Schema, Summarizer, Summary, Table, hookimpl

if TYPE_CHECKING:
    import numpy as np


@attrs.frozen
class Metrics:
    """One ``run.log`` call: metric names to floats, ints (within ±2**53) or bools."""

    values: dict[str, float | int | bool]


@attrs.frozen(kw_only=True)
class MetricAxis:
    """``define_metric(name, step_metric=...)``: the metrics matching glob ``name`` are drawn against another."""

    name: str
    step_metric: str


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("metrics", Metrics, description="scalar metrics logged with run.log",
                   free_form=True),
            Schema("metric_axis", MetricAxis, description="define_metric's step_metric: the x-axis of metrics")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [
        Summarizer("metrics.scalars", "metrics", summarize_scalars,
                   "count, NaN count, first, last, min and max with their steps, mean"),
        Summarizer("metrics.run", "metrics", summarize_run, "steps and wall time of the run"),
    ]


def summarize_scalars(table: Table) -> Summary:
    """Per metric: count, NaN count, first, last, min (with step), mean, max (with step)."""
    import numpy as np  # here, not at the top: the CLI loads this plugin and must start without numpy

    steps = table["step"]
    rows = []
    for name, col in table.numeric_columns().items():
        held = table.present(name)  # a logged NaN is data; a metric absent from a record is not
        values, st = col[held], steps[held]
        ok = ~np.isnan(values)
        row = {"metric": name, "count": int(values.size), "nan": int((~ok).sum()),
               "first": float(values[0]) if values.size else None,
               "last": float(values[-1]) if values.size else None,
               "min": None, "min_step": None, "mean": None, "max": None, "max_step": None}
        if ok.any():
            vals, st = values[ok], st[ok]
            i_min, i_max = int(np.argmin(vals)), int(np.argmax(vals))
            row.update({"min": float(vals[i_min]), "min_step": int(st[i_min]), "mean": float(vals.mean()),
                        "max": float(vals[i_max]), "max_step": int(st[i_max])})
        rows.append(row)
    return Summary("Metrics", rows, columns=["metric", "count", "nan", "first", "last", "min",
                                             "min_step", "mean", "max", "max_step"])


def distinct(steps: np.ndarray) -> int:
    """How many different steps: one pass when they never go back (a training loop), else a sort."""
    import numpy as np

    if steps.size < 2:
        return int(steps.size)
    changes = np.diff(steps)
    if (changes >= 0).all():
        return 1 + int(np.count_nonzero(changes))
    return int(np.unique(steps).size)


def summarize_run(table: Table) -> Summary:
    """Steps (distinct, first, last) and wall time from the first to the last record."""

    steps, times = table["step"], table["time"]
    wall = float(times.max() - times.min()) if len(table) else 0.0
    rows = [{"records": len(table), "distinct_steps": distinct(steps),
             "first_step": int(steps.min()), "last_step": int(steps.max()), "wall_time_s": wall}]
    # The runs list and the run's header count differently; say what these count (issue 35).
    return Summary("Run", rows, notes=(
        "records: metrics records only (the runs list counts the records of every schema)",
        "wall_time_s: from the first to the last metrics record (the run's duration runs from its start "
        "to its end)"))

