"""Per-metric figures of a run combined from its segments, and ``metrics`` records rebuilt from columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracker.core.summary import _MISSING_BITS
from tracker.read.index.build import KIND_BOOL

if TYPE_CHECKING:
    from tracker.read.index.segments import SchemaCols

_FIELDS = ("count", "first", "first_step", "last", "last_step", "min", "min_step", "max", "max_step")


def combine_stats(per_segment: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """One run's per-metric figures from its segments' (given in segment order).

    ``first`` and ``last`` follow log order across segments (each segment's
    running maximum of time, ties to the earlier segment), as ``metrics()``
    orders records; ``min`` and ``max`` keep the earliest in log order among equal values.
    Returns ``{name: {count, first, first_step, last, last_step, min, min_step, max, max_step}}``.
    """
    out: dict[str, dict[str, Any]] = {}
    for order, stats in enumerate(per_segment):
        for name, s in stats.items():
            cur = out.get(name)
            if cur is None:
                out[name] = {**s, "first_seg": order, "last_seg": order, "min_seg": order, "max_seg": order}
                continue
            cur["count"] += s["count"]
            if s["first_key"] < cur["first_key"]:
                cur.update(first=s["first"], first_step=s["first_step"], first_key=s["first_key"], first_seg=order)
            if s["last_key"] >= cur["last_key"]:
                cur.update(last=s["last"], last_step=s["last_step"], last_key=s["last_key"], last_seg=order)
            if s["min"] is not None and (cur["min"] is None or s["min"] < cur["min"]
                                         or (s["min"] == cur["min"] and s["min_key"] < cur["min_key"])):
                cur.update(min=s["min"], min_step=s["min_step"], min_key=s["min_key"], min_seg=order)
            if s["max"] is not None and (cur["max"] is None or s["max"] > cur["max"]
                                         or (s["max"] == cur["max"] and s["max_key"] < cur["max_key"])):
                cur.update(max=s["max"], max_step=s["max_step"], max_key=s["max_key"], max_seg=order)
    return {name: {f: s[f] for f in _FIELDS} for name, s in out.items()}


def metric_dicts(part: SchemaCols) -> list[dict[str, Any]]:
    """The data of each ``metrics`` record of a part, as logged: only the metrics it holds, ints and bools kept."""
    import numpy as np

    names = list(part.cols)
    values = []
    present = []
    complete = True
    for name in names:
        col = part.cols[name]
        vals = col.tolist()
        kinds = part.kinds.get(name)
        if kinds is not None and kinds.any():
            for i in kinds.nonzero()[0].tolist():
                vals[i] = bool(vals[i]) if kinds[i] == KIND_BOOL else int(vals[i])
        mask = col.view(np.uint64) != _MISSING_BITS
        if not mask.all():
            complete = False
        values.append(vals)
        present.append(mask.tolist())
    if not names:
        return [{} for _ in range(part.n)]
    if complete:
        return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
    out = []
    for i in range(part.n):
        out.append({n: v[i] for n, v, p in zip(names, values, present, strict=True) if p[i]})
    return out
