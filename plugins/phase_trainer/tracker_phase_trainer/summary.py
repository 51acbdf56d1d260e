"""Summaries of a run's ``phase.step`` records.

Three summarizers read the same table:

- :func:`summarize_overview`: steps per phase, cycles and speedup;
- :func:`summarize_loss`: mean loss of each phase over its last 100 steps;
- :func:`summarize_schedule`: the schedule lengths over time (one row while
  they stay fixed, a row per change in adaptive mode).

Records are taken in the order they were logged, so "the last 100 steps of a
phase" are its 100 most recent records. Lengths come from the record's
``full_steps`` / ``predict_steps`` extension fields (see
:mod:`tracker_phase_trainer.record` for why they are recorded rather than
derived from the phase sequence).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tracker import Summarizer, Summary, Table
from tracker_phase_trainer.record import PHASES, SCHEMA_NAME

__all__ = [
    "LOSS_WINDOW",
    "SUMMARIZERS",
    "MAX_SCHEDULE_ROWS",
    "summarize_loss",
    "summarize_overview",
    "summarize_schedule",
]

#: Records of each phase averaged by :func:`summarize_loss`.
LOSS_WINDOW = 100

#: Rows :func:`summarize_schedule` shows at most: the first and last halves.
MAX_SCHEDULE_ROWS = 40


def _phases(table: Table) -> np.ndarray:
    return np.asarray(list(table["phase"]), dtype=str)


def _ints(table: Table, name: str) -> np.ndarray:
    """An int column; a value a record lacks (None) reads as 0, "not recorded"."""
    column = table[name]
    if isinstance(column, np.ndarray):
        return column.astype(np.int64)
    return np.asarray([0 if v is None else v for v in column], dtype=np.int64)


def _count_cycles(cycle: np.ndarray) -> int:
    """Cycles the records belong to: 1 + the number of times ``cycle`` changes.

    Counting changes rather than taking ``max + 1`` keeps a scheduler that
    was reset during the run (cycle back to 0) from hiding cycles.
    """
    if cycle.size == 0:
        return 0
    return 1 + int(np.count_nonzero(cycle[1:] != cycle[:-1]))


def summarize_overview(table: Table) -> Summary:
    """Steps per phase, cycles and speedup of a phase-trained run.

    The speedup is all steps over those that computed the full gradient
    (FULL and CORRECT), as in ``PhaseScheduler.speedup_ratio``.

    :param table: the run's ``phase.step`` records.
    :returns: one row: steps, full, predict, correct, cycles, speedup.
    """
    phases = _phases(table)
    counts = {name: int(np.count_nonzero(phases == name)) for name in PHASES}
    total = len(phases)
    expensive = counts["FULL"] + counts["CORRECT"]
    speedup = total / expensive if expensive else None
    row: dict[str, Any] = {
        "steps": total,
        "full": counts["FULL"],
        "predict": counts["PREDICT"],
        "correct": counts["CORRECT"],
        "cycles": _count_cycles(_ints(table, "cycle")),
        "speedup": speedup,
    }
    if not total:
        notes = ["no phase.step records"]
    elif speedup is None:
        notes = ["speedup: no FULL or CORRECT step recorded"]
    else:
        notes = [f"speedup = steps / (FULL + CORRECT) = {total} / {expensive} = {speedup:.3f}"]
    return Summary("Phase trainer: steps per phase", [row], notes=notes)


def summarize_loss(table: Table) -> Summary:
    """Mean loss of each phase over its last 100 records.

    NaN losses are data: they are counted in the ``nan`` column and left out
    of the mean (a window of NaN only has a NaN mean). A phase with no step
    has ``None`` for its loss columns.

    :param table: the run's ``phase.step`` records.
    :returns: a row per phase: phase, steps, window, loss_mean, loss_last, nan.
    """
    phases = _phases(table)
    loss = np.asarray(table["loss"], dtype=np.float64)
    rows = []
    for name in PHASES:
        index = np.flatnonzero(phases == name)
        window = loss[index[-LOSS_WINDOW:]]
        nan = np.isnan(window)
        if window.size == 0:
            mean = last = None
        else:
            kept = window[~nan]
            with warnings.catch_warnings():
                # +Inf and -Inf in one window make a NaN mean; that is the answer.
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = float(np.mean(kept)) if kept.size else float("nan")
            last = float(window[-1])
        rows.append(
            {
                "phase": name,
                "steps": int(index.size),
                "window": int(window.size),
                "loss_mean": mean,
                "loss_last": last,
                "nan": int(np.count_nonzero(nan)),
            }
        )
    notes = [f"loss_mean: mean over the last {LOSS_WINDOW} steps of each phase, NaN left out"]
    return Summary("Phase trainer: loss per phase", rows, notes=notes)


def summarize_schedule(table: Table) -> Summary:
    """The FULL and predict lengths over time, one row per stretch of steps
    during which they stayed the same.

    A fixed schedule gives one row; adaptive mode adds a row at each change.
    Past :data:`MAX_SCHEDULE_ROWS` rows (a noisy loss can change the lengths
    every cycle) the first and last halves are shown and a note says how
    many rows were left out.

    :param table: the run's ``phase.step`` records.
    :returns: rows of from_step, to_step, first_cycle, last_cycle,
        full_steps, predict_steps, steps.
    """
    full = _ints(table, "full_steps")
    predict = _ints(table, "predict_steps")
    steps = np.asarray(table["step"], dtype=np.int64)
    cycle = _ints(table, "cycle")
    title = "Phase trainer: schedule lengths over time"
    if full.size == 0:
        return Summary(title, [], notes=["no phase.step records"])
    if not (full.any() or predict.any()):
        return Summary(title, [], notes=["schedule lengths not recorded in these records"])
    change = np.flatnonzero((full[1:] != full[:-1]) | (predict[1:] != predict[:-1])) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [full.size]])
    rows = [
        {
            "from_step": int(steps[a]),
            "to_step": int(steps[b - 1]),
            "first_cycle": int(cycle[a]),
            "last_cycle": int(cycle[b - 1]),
            "full_steps": int(full[a]),
            "predict_steps": int(predict[a]),
            "steps": int(b - a),
        }
        for a, b in zip(starts, ends, strict=True)
    ]
    if len(rows) == 1:
        notes = ["lengths fixed for the whole run"]
    else:
        first, last = rows[0], rows[-1]
        notes = [
            f"{len(rows) - 1} change(s): full_steps {first['full_steps']} -> {last['full_steps']}, "
            f"predict_steps {first['predict_steps']} -> {last['predict_steps']}"
        ]
    if len(rows) > MAX_SCHEDULE_ROWS:
        half = MAX_SCHEDULE_ROWS // 2
        left_out = rows[half:-half]
        notes.append(
            f"{len(left_out)} rows left out (steps {left_out[0]['from_step']} to "
            f"{left_out[-1]['to_step']}); the records hold them all"
        )
        rows = rows[:half] + rows[-half:]
    return Summary(title, rows, notes=notes)


#: The summarizers the plugin offers.
SUMMARIZERS = [
    Summarizer("phase.overview", SCHEMA_NAME, summarize_overview,
               description="steps per phase, cycles and speedup"),
    Summarizer("phase.loss", SCHEMA_NAME, summarize_loss,
               description="mean loss of each phase over its last 100 steps"),
    Summarizer("phase.schedule", SCHEMA_NAME, summarize_schedule,
               description="FULL and predict lengths over time (changes in adaptive mode)"),
]
