"""Runs side by side: which value of a row is best (by the metric's name), summaries and configs aligned.

The data behind ``tracker compare`` and the dashboard's compare page (the read path: no printing here).
"""


from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tracker.core.text import flatten, run_duration

LOWER = frozenset({
    "loss", "losses", "err", "error", "errors", "mse", "mae", "rmse", "nll", "perplexity", "ppl", "wer", "cer",
    "latency", "bytes", "memory", "params", "outlier", "outliers", "nan",
    "regret", "cost", "distance", "divergence", "kl", "diverged",
})
HIGHER = frozenset({
    "acc", "accuracy", "f1", "precision", "recall", "auc", "auroc", "score", "sqnr", "snr", "psnr", "ssim",
    "bleu", "rouge", "reward", "rewards", "return", "returns", "iou", "map", "throughput", "improvement",
    "speedup", "r2", "correlation",
})
#: Field names that say which statistic of a value a row holds, not what the value is.
STATS = frozenset({"last", "min", "max", "mean", "median", "best", "final", "value", "avg", "average", "end"})
NEUTRAL = frozenset({"count", "records", "steps", "step", "std", "var", "cycle", "stage", "bits", "index",
                     "first", "start", "initial", "points"})


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[^a-z0-9]+", str(name).lower()) if t]


def _direction_of(tokens: list[str]) -> str | None:
    if not tokens or tokens[-1] == "step" or tokens[0] in NEUTRAL:
        return None
    for t in reversed(tokens):
        if t in LOWER:
            return "min"
        if t in HIGHER:
            return "max"
    return None


def better(field: str, labels: Sequence[Any] = (), context: Sequence[str] = ()) -> str | None:
    """``"min"`` or ``"max"`` when lower or higher values of ``field`` are better, else ``None``.

    :param field: the column name, e.g. ``"mean"`` or ``"best_total_loss"``.
    :param labels: the row's label values, e.g. ``["loss"]``; they decide for
        a plain statistic such as ``mean``.
    :param context: names that say what the whole summary is about (its title,
        summarizer and schema), tried last.
    """
    tokens = _tokens(field)
    if not tokens or tokens[0] in NEUTRAL or tokens[-1] == "step":
        return None
    if all(t in STATS for t in tokens):
        for name in [*labels, *context]:
            if isinstance(name, str):
                found = _direction_of(_tokens(name))
                if found:
                    return found
        return None
    return _direction_of(tokens)


def best_of(values: list[Any], direction: str | None) -> list[int]:
    """Indices of the best values (ties all), or none when fewer than two differ."""
    if direction is None:
        return []
    nums = [(i, float(v)) for i, v in enumerate(values)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(float(v))]
    if len(nums) < 2 or len({v for _, v in nums}) < 2:
        return []
    target = min(v for _, v in nums) if direction == "min" else max(v for _, v in nums)
    return [i for i, v in nums if v == target]


def _plain(v: Any) -> Any:
    # Summarizers may hand back numpy scalars; compare them as Python numbers.
    return v.item() if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0 else v


def _key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(v if isinstance(v, (str, int, float, bool, type(None))) else repr(v) for v in values)


def _label_columns(columns: list[str], tables: list[list[dict[str, Any]]]) -> list[str]:
    labels = [c for c in columns if any(isinstance(r.get(c), str) for rows in tables for r in rows)]

    def unique() -> bool:
        for rows in tables:
            keys = [_key(tuple(r.get(c) for c in labels)) for r in rows]
            if len(set(keys)) != len(keys):
                return False
        return True

    for c in columns:
        if unique():
            break
        if c not in labels and all(isinstance(r.get(c), (int, bool, type(None)))
                                   for rows in tables for r in rows):
            labels.append(c)
    return [c for c in columns if c in labels]


def compare_summaries(title: str, summarizer: str, schema: str, per_run: list[Any | None]) -> dict[str, Any]:
    """One comparison section from each run's summary (``None`` where a run lacks it)."""
    tables = [[{k: _plain(v) for k, v in r.items()} for r in s.rows] if s is not None else [] for s in per_run]
    columns: dict[str, None] = {}
    for s in per_run:
        if s is not None:
            for c in s.column_names():
                columns.setdefault(c, None)
    labels = _label_columns(list(columns), tables)
    fields = [c for c in columns if c not in labels]
    keyed: list[dict[tuple[Any, ...], dict[str, Any]]] = []
    order: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for rows in tables:
        seen: dict[tuple[Any, ...], int] = {}
        mine = {}
        for r in rows:
            shown = tuple(r.get(c) for c in labels)
            base = _key(shown)
            n = seen.get(base, 0)
            seen[base] = n + 1
            key = (*base, n)
            mine[key] = r
            order.setdefault(key, shown)
        keyed.append(mine)
    out_rows = []
    for key, shown in order.items():
        for field in fields:
            values = [rows[key].get(field) if key in rows else None for rows in keyed]
            if not any(key in rows and field in rows[key] for rows in keyed):
                continue
            direction = better(field, list(shown), (title, summarizer, schema))
            out_rows.append({"labels": dict(zip(labels, shown, strict=True)), "field": field, "values": values,
                             "better": direction, "best": best_of(values, direction)})
    notes = []
    for i, s in enumerate(per_run):
        if s is not None and not s.rows and s.notes:
            notes.append(f"run {i + 1}: " + "; ".join(s.notes))
    return {"title": title, "summarizer": summarizer, "schema": schema, "labels": labels, "rows": out_rows,
            "notes": notes}


def compare_runs(views: list[Any]) -> dict[str, Any]:
    """The whole comparison of ``views``: runs, their info and config, and every summary."""
    infos = [v.info for v in views]
    runs = [{"id": i.id, "name": i.name, "project": i.project, "status": i.status} for i in infos]
    info_rows = []
    for field, get, unit in (("project", lambda i: i.project, None), ("status", lambda i: i.status, None),
                             ("started", lambda i: i.created_at, "time"), ("duration", run_duration, "seconds"),
                             ("records", lambda i: i.records, None), ("last_step", lambda i: i.last_step, None),
                             ("tags", lambda i: ", ".join(i.tags) or None, None)):
        values = [get(i) for i in infos]
        row = {"labels": {}, "field": field, "values": values, "better": None, "best": []}
        if unit:
            row["unit"] = unit
        info_rows.append(row)
    sections = [{"title": "Run", "summarizer": "", "schema": "", "labels": [], "rows": info_rows, "notes": []}]
    flat = [dict(flatten(i.config)) for i in infos]
    keys: dict[str, None] = {}
    for f in flat:
        for k in f:
            keys.setdefault(k, None)
    if keys:
        rows = [{"labels": {}, "field": k, "values": [f.get(k) for f in flat], "better": None, "best": []}
                for k in keys]
        sections.append({"title": "Config", "summarizer": "", "schema": "", "labels": [], "rows": rows,
                         "notes": []})
    per_view = [v.summarize() for v in views]
    names: dict[str, tuple[str, str]] = {}
    for sums in per_view:
        for s in sums:
            names.setdefault(s.summarizer or s.title, (s.title, s.schema))
    for name, (title, schema) in names.items():
        per_run = [next((s for s in sums if (s.summarizer or s.title) == name), None) for sums in per_view]
        sections.append(compare_summaries(title, name, schema, per_run))
    return {"runs": runs, "sections": sections}


def key_metrics(infos: list[Any], limit: int = 3) -> list[str]:
    """The metric names most runs have a last value for (ties: first seen), at most ``limit``."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for info in infos:
        for name in info.last_metrics:
            counts[name] += 1
            first.setdefault(name, len(first))
    return sorted(counts, key=lambda n: (-counts[n], first[n]))[:limit]
