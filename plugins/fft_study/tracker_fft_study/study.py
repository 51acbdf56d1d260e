"""Numbers of the FFT study summaries, computed from ``tracker`` tables.

Each function takes the columnar tables of one run (``len(table)``,
``table["field"]``, ``table["step"]``) and returns rows of plain Python values,
one dict per row. The summarizers and the HTML report share them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tracker import Table

__all__ = [
    "DEFAULT_PRUNE_THRESHOLD",
    "gate_rows",
    "grid_argmin",
    "landscape_rows",
    "latest_by_model",
    "loss_curve_rows",
    "loss_curves",
    "model_ids",
    "model_rows",
    "param_breakdown_rows",
]

#: A gate below this value counts as pruned (its butterfly is mostly a pass-through).
DEFAULT_PRUNE_THRESHOLD = 0.5

Row = dict[str, Any]


def _num(value: Any) -> float | int | None:
    """A plain Python number (or None) from a numpy scalar."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return float(value)


def model_ids(*tables: Table | None) -> list[str]:
    """Model ids of the given tables in order of first appearance."""
    seen: dict[str, None] = {}
    for table in tables:
        if table is not None and len(table):
            for model in table["model_id"]:
                seen.setdefault(str(model), None)
    return list(seen)


def _positions(table: Table, model: str) -> np.ndarray:
    ids = table["model_id"]
    return np.array([i for i, m in enumerate(ids) if m == model], dtype=np.int64)


def latest_by_model(table: Table) -> dict[str, int]:
    """Row index of each model's latest record: largest step, then last logged."""
    out: dict[str, int] = {}
    if table is None or not len(table):
        return out
    steps = table["step"]
    for model in model_ids(table):
        pos = _positions(table, model)
        # lexsort sorts by the last key first: step, then position.
        out[model] = int(pos[np.lexsort((pos, steps[pos]))[-1]])
    return out


def loss_curves(losses: Table) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``model_id -> (steps, total_loss)`` ordered by step (ties in log order)."""
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if losses is None or not len(losses):
        return curves
    steps, values = losses["step"], losses["total_loss"]
    for model in model_ids(losses):
        pos = _positions(losses, model)
        order = pos[np.argsort(steps[pos], kind="stable")]
        curves[model] = (steps[order], values[order])
    return curves


def _nan_argmin(values: np.ndarray) -> int | None:
    """Index of the smallest non-NaN value (first on ties), None if all are NaN.

    ``np.nanargmin`` cannot be used: it may return a NaN's index when the
    other values are all +Inf.
    """
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    valid = np.flatnonzero(~np.isnan(flat))
    if valid.size == 0:
        return None
    return int(valid[np.argmin(flat[valid])])


def _best(steps: np.ndarray, values: np.ndarray) -> tuple[float, int | None]:
    i = _nan_argmin(values)
    if i is None:
        return math.nan, None
    return float(values[i]), int(steps[i])


def loss_curve_rows(losses: Table) -> list[Row]:
    """First, best, last value and relative improvement of each model's total loss.

    ``improvement`` is ``(first - last) / |first|``: 0.9 means the loss fell by
    90 %; NaN when the first or last value is not finite or the first is 0.
    """
    rows = []
    for model, (steps, values) in loss_curves(losses).items():
        first, last = float(values[0]), float(values[-1])
        best, best_step = _best(steps, values)
        ok = math.isfinite(first) and math.isfinite(last) and first != 0
        rows.append({
            "model_id": model,
            "points": int(values.size),
            "first": first,
            "best": best,
            "best_step": best_step,
            "last": last,
            "last_step": int(steps[-1]),
            "improvement": (first - last) / abs(first) if ok else math.nan,
            "nan_points": int(np.isnan(values).sum()),
        })
    return rows


def model_rows(params: Table, losses: Table | None = None, traces: Table | None = None) -> list[Row]:
    """One row per model: parameters, memory, training length, best loss, final errors.

    The parameters come from the model's latest ``fft.params`` record; train
    steps and final errors from its latest ``fft.trace``, else the final errors
    from its last ``fft.loss_point``. A value the run does not hold is None.
    """
    latest_params, latest_trace = latest_by_model(params), latest_by_model(traces)
    curves = loss_curves(losses)
    last_loss = {}
    if losses is not None and len(losses):
        for model, idx in latest_by_model(losses).items():
            last_loss[model] = (losses["mel_err"][idx], losses["spec_err"][idx])
    rows = []
    for model in model_ids(params, traces, losses):
        row: Row = {"model_id": model}
        p, t = latest_params.get(model), latest_trace.get(model)
        source, idx = (params, p) if p is not None else (traces, t)
        row["variant"] = None if idx is None else str(source["variant"][idx])
        row["n_fft"] = None if idx is None else _num(source["n_fft"][idx])
        for field in ("total_params", "memory_bytes"):
            row[field] = None if p is None else _num(params[field][p])
        row["train_steps"] = None if t is None else _num(traces["train_steps"][t])
        if model in curves:
            row["best_total_loss"], row["best_step"] = _best(*curves[model])
        else:
            row["best_total_loss"], row["best_step"] = None, None
        if t is not None:
            mel, spec = traces["final_mel_err"][t], traces["final_spec_err"][t]
        else:
            mel, spec = last_loss.get(model, (None, None))
        row["final_mel_err"], row["final_spec_err"] = _num(mel), _num(spec)
        rows.append(row)
    return rows


PARAM_FIELDS = ("twiddles", "gates", "freq_mask", "denoiser", "unitary", "mel_filters",
                "q8_packed", "total_params")


def param_breakdown_rows(params: Table) -> list[Row]:
    """Per model, the parameter counts of its latest ``fft.params`` record, by component."""
    return [
        {"model_id": model, "variant": str(params["variant"][idx]),
         **{name: _num(params[name][idx]) for name in PARAM_FIELDS}}
        for model, idx in latest_by_model(params).items()
    ]


def gate_rows(heatmaps: Table, threshold: float = DEFAULT_PRUNE_THRESHOLD) -> list[Row]:
    """Per model and stage, from the model's latest heatmap: gate mean, min and pruned share.

    A gate below ``threshold`` counts as pruned.
    """
    rows = []
    for model, idx in latest_by_model(heatmaps).items():
        stages, butterflies = int(heatmaps["stages"][idx]), int(heatmaps["butterflies"][idx])
        grid = np.asarray(heatmaps["gates"][idx], dtype=np.float64).reshape(stages, butterflies)
        for stage, gates in enumerate(grid):
            pruned = int(np.sum(gates < threshold))
            rows.append({
                "model_id": model,
                "step": int(heatmaps["step"][idx]),
                "stage": stage,
                "butterflies": butterflies,
                "mean_gate": float(gates.mean()),
                "min_gate": float(gates.min()),
                "pruned": pruned,
                "pruned_share": pruned / butterflies,
            })
    return rows


def grid_argmin(z: np.ndarray) -> tuple[int, int] | None:
    """``(row, column)`` of the smallest non-NaN value of a 2-d grid; None if all are NaN."""
    k = _nan_argmin(z)
    if k is None:
        return None
    i, j = np.unravel_index(k, z.shape)
    return int(i), int(j)


def landscape_rows(landscapes: Table) -> list[Row]:
    """Per landscape record: its grid, the minimum loss and the (x, y) where it lies."""
    rows = []
    if landscapes is None or not len(landscapes):
        return rows
    for idx in range(len(landscapes)):
        x = np.asarray(landscapes["x"][idx], dtype=np.float64)
        y = np.asarray(landscapes["y"][idx], dtype=np.float64)
        z = np.asarray(landscapes["z"][idx], dtype=np.float64).reshape(y.size, x.size)
        at = grid_argmin(z)
        finite = z[np.isfinite(z)]
        rows.append({
            "model_id": str(landscapes["model_id"][idx]),
            "step": int(landscapes["step"][idx]),
            "x_label": str(landscapes["x_label"][idx]),
            "y_label": str(landscapes["y_label"][idx]),
            "grid": f"{y.size}x{x.size}",
            "min_loss": math.nan if at is None else float(z[at]),
            "x_at_min": None if at is None else float(x[at[1]]),
            "y_at_min": None if at is None else float(y[at[0]]),
            "max_finite_loss": float(finite.max()) if finite.size else math.nan,
        })
    return rows

