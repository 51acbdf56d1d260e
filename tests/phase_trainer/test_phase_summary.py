"""The phase.* summaries, checked against numbers computed here independently."""

import math
import statistics

import numpy as np
import pytest
from tracker_phase_trainer import PhaseScheduler
from tracker_phase_trainer.summary import (
    MAX_SCHEDULE_ROWS,
    summarize_loss,
    summarize_overview,
    summarize_schedule,
)

import tracker


def logged_run(scheduler, losses, runs=None):
    """Drive ``scheduler`` over ``losses`` inside a run; return (run id, step infos)."""
    infos = []
    with tracker.start_run(project="phase", name="summary") as run:
        scheduler.attach(run)
        for loss in losses:
            infos.append(scheduler.begin_step())
            scheduler.end_step(loss)
    return run.id, infos


def summaries(run_id):
    view = tracker.open_store().run(run_id)
    return {s.summarizer: s for s in view.summarize("phase.step")}


def test_overview_counts_fixed_schedule(tracker_store):
    # full 2, predict 4, correct every 2: a cycle is F F P P C P C (7 steps).
    # 30 steps = 4 cycles + 2 FULL steps of a fifth.
    scheduler = PhaseScheduler(2, 4, 2)
    run_id, _ = logged_run(scheduler, [1.0] * 30)
    (row,) = summaries(run_id)["phase.overview"].rows
    assert row == {"steps": 30, "full": 4 * 2 + 2, "predict": 4 * 3, "correct": 4 * 2,
                   "cycles": 5, "speedup": 30 / 18}
    stats = scheduler.stats()
    assert (row["full"], row["predict"], row["correct"]) == (stats.full, stats.predict, stats.correct)
    assert (row["cycles"], row["speedup"]) == (stats.cycles, stats.speedup)


def test_loss_per_phase_last_100(tracker_store):
    # full 3, predict 130, correct every 7: PREDICT gets more than 100 steps
    # per run, so its window drops its oldest ones; NaN is sprinkled in.
    rng = np.random.default_rng(7)
    losses = list(rng.uniform(0.0, 5.0, size=420))
    for i in rng.choice(420, size=25, replace=False):
        losses[i] = math.nan
    run_id, infos = logged_run(PhaseScheduler(3, 130, 7), losses)
    rows = {r["phase"]: r for r in summaries(run_id)["phase.loss"].rows}
    assert list(rows) == ["FULL", "PREDICT", "CORRECT"]
    for phase in ("FULL", "PREDICT", "CORRECT"):
        mine = [loss for info, loss in zip(infos, losses, strict=True) if info.phase.value == phase]
        window = mine[-100:]
        kept = [x for x in window if not math.isnan(x)]
        row = rows[phase]
        assert row["steps"] == len(mine)
        assert row["window"] == len(window)
        assert row["nan"] == len(window) - len(kept)
        assert row["loss_mean"] == pytest.approx(statistics.fmean(kept), rel=1e-12)
        last = window[-1]
        assert row["loss_last"] == last or (math.isnan(row["loss_last"]) and math.isnan(last))
    assert rows["PREDICT"]["steps"] > 100 and rows["PREDICT"]["window"] == 100


def test_loss_phase_without_steps_and_all_nan_window(tracker_store):
    losses = [2.0] + [math.nan] * 3 + [4.0]  # FULL, then 3 PREDICT of NaN, FULL
    run_id, _ = logged_run(PhaseScheduler(1, 3, None), losses)
    rows = {r["phase"]: r for r in summaries(run_id)["phase.loss"].rows}
    assert rows["FULL"] == {"phase": "FULL", "steps": 2, "window": 2, "loss_mean": 3.0,
                            "loss_last": 4.0, "nan": 0}
    predict = rows["PREDICT"]
    assert (predict["steps"], predict["window"], predict["nan"]) == (3, 3, 3)
    assert math.isnan(predict["loss_mean"]) and math.isnan(predict["loss_last"])
    assert rows["CORRECT"] == {"phase": "CORRECT", "steps": 0, "window": 0, "loss_mean": None,
                               "loss_last": None, "nan": 0}


def test_schedule_rows_follow_the_adjustments(tracker_store):
    # A rising loss in adaptive mode: the lengths change at several returns to FULL.
    scheduler = PhaseScheduler(10, 40, 10, adaptive=True)
    n = 400
    run_id, _ = logged_run(scheduler, np.exp(np.linspace(0.0, 8.0, n)))
    adjustments = scheduler.adjustments
    assert len(adjustments) >= 3
    starts = [0] + [a.total_step for a in adjustments]
    ends = [s - 1 for s in starts[1:]] + [n - 1]
    lengths = [(10, 40)] + [(a.full_steps, a.predict_steps) for a in adjustments]
    cycles = [0] + [a.cycle for a in adjustments]
    summary = summaries(run_id)["phase.schedule"]
    got = [(r["from_step"], r["to_step"], r["first_cycle"], r["full_steps"], r["predict_steps"],
            r["steps"]) for r in summary.rows]
    assert got == [(a, b, c, f, p, b - a + 1)
                   for a, b, c, (f, p) in zip(starts, ends, cycles, lengths, strict=True)]
    # Lengths change only on entering FULL, so each stretch here is one cycle.
    assert all(r["first_cycle"] == r["last_cycle"] for r in summary.rows[:-1])
    first, last = lengths[0], lengths[-1]
    assert summary.notes == (
        f"{len(adjustments)} change(s): full_steps {first[0]} -> {last[0]}, "
        f"predict_steps {first[1]} -> {last[1]}",
    )


def test_schedule_without_recorded_lengths(tracker_store):
    with tracker.start_run(project="phase") as run:
        for t, phase in enumerate(["FULL", "PREDICT", "PREDICT"]):
            run.log_record("phase.step", step=t, phase=phase, phase_step=max(t - 1, 0), cycle=0,
                           loss=1.0)
    by_name = summaries(run.id)
    assert by_name["phase.schedule"].rows == []
    assert by_name["phase.schedule"].notes == ("schedule lengths not recorded in these records",)
    assert by_name["phase.overview"].rows[0]["speedup"] == 3.0


def test_schedule_rows_are_capped(tracker_store):
    changes = MAX_SCHEDULE_ROWS + 5
    with tracker.start_run(project="phase") as run:
        for t in range(changes + 1):  # full_steps differs at every step
            run.log_record("phase.step", step=t, phase="FULL", phase_step=0, cycle=t, loss=1.0,
                           full_steps=t + 1, predict_steps=10)
    summary = summaries(run.id)["phase.schedule"]
    half = MAX_SCHEDULE_ROWS // 2
    assert [r["from_step"] for r in summary.rows] == (
        list(range(half)) + list(range(changes + 1 - half, changes + 1))
    )
    assert summary.notes == (
        f"{changes} change(s): full_steps 1 -> {changes + 1}, predict_steps 10 -> 10",
        f"{changes + 1 - MAX_SCHEDULE_ROWS} rows left out (steps {half} to "
        f"{changes - half}); the records hold them all",
    )


def test_cycles_after_reset_within_one_run(tracker_store):
    scheduler = PhaseScheduler(1, 3, None)
    infos = []
    with tracker.start_run(project="phase") as run:
        scheduler.attach(run)
        for n in (10, 5):  # cycles 0,0,0,0,1,1,1,1,2,2 then 0,0,0,0,1
            for _ in range(n):
                infos.append(scheduler.begin_step())
                scheduler.end_step(1.0)
            scheduler.reset()
    assert [i.cycle for i in infos] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 0, 0, 0, 1]
    (row,) = summaries(run.id)["phase.overview"].rows
    assert row["cycles"] == 3 + 2
    assert row["steps"] == 15


def test_summarizers_on_an_empty_table(tracker_store):
    with tracker.start_run(project="phase") as run:
        run.log({"loss": 1.0})
    table = tracker.open_store().run(run.id).table("phase.step")
    assert len(table) == 0
    overview = summarize_overview(table)
    assert overview.rows == [{"steps": 0, "full": 0, "predict": 0, "correct": 0, "cycles": 0,
                              "speedup": None}]
    assert overview.notes == ("no phase.step records",)
    assert [r["steps"] for r in summarize_loss(table).rows] == [0, 0, 0]
    assert summarize_schedule(table).rows == []
