"""The phase scheduler: when a training step computes a full gradient.

A phase trainer alternates three kinds of step:

``FULL``
    compute the full (expensive) gradient and remember it;
``PREDICT``
    reuse the last full gradient instead of computing one (cheap);
``CORRECT``
    a full computation inside the predict phase, refreshing the
    remembered gradient so predictions do not drift too far.

:class:`PhaseScheduler` decides the phase of every step; the training loop
asks it with :meth:`PhaseScheduler.begin_step`, does the work, and reports
the loss with :meth:`PhaseScheduler.end_step`. It has no dependency on the
training framework and none on a store: :meth:`PhaseScheduler.attach` makes
it log one ``phase.step`` record per step to a ``tracker`` run.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Mapping
from enum import Enum
from typing import Any, Protocol

import attrs

from tracker_phase_trainer.config import PLUGIN_NAME, scheduler_options
from tracker_phase_trainer.record import SCHEMA_NAME

__all__ = [
    "Adjustment",
    "Phase",
    "PhaseScheduler",
    "RecordSink",
    "SCHEMA_NAME",
    "SchedulerStats",
    "StepInfo",
]



class Phase(str, Enum):
    """The phase of a training step; its value is the upper-case name."""

    FULL = "FULL"
    PREDICT = "PREDICT"
    CORRECT = "CORRECT"

    def __str__(self) -> str:
        return self.value

    @property
    def computes_full(self) -> bool:
        """Whether a step of this phase computes the full gradient."""
        return self is not Phase.PREDICT


@attrs.frozen(kw_only=True)
class StepInfo:
    """What :meth:`PhaseScheduler.begin_step` tells the training loop.

    :ivar phase: the phase of this step.
    :ivar phase_step: position inside the current FULL phase, or inside the
        current predict stretch (PREDICT and CORRECT steps share one count).
    :ivar total_step: 0-based index of the step over the whole schedule; it is
        also the run step of the step's ``phase.step`` record.
    :ivar cycle: number of times the schedule has gone back to FULL; the
        first FULL phase is cycle 0.
    :ivar phase_changed: True when this step's phase differs from the previous
        step's (False for the very first step).
    :ivar full_steps: length of the FULL phase in force at this step.
    :ivar predict_steps: length of the predict stretch in force at this step.
    """

    phase: Phase
    phase_step: int
    total_step: int
    cycle: int
    phase_changed: bool
    full_steps: int
    predict_steps: int

    @property
    def compute_full(self) -> bool:
        """Whether this step must compute the full gradient (FULL or CORRECT)."""
        return self.phase.computes_full


@attrs.frozen(kw_only=True)
class Adjustment:
    """One change of the schedule lengths made in adaptive mode.

    :ivar total_step: the step that entered FULL and carried the change.
    :ivar cycle: the cycle that starts with that step.
    :ivar early: mean of the oldest 10 losses of the window.
    :ivar late: mean of the newest 10 losses of the window.
    :ivar full_steps: FULL length from then on.
    :ivar predict_steps: predict length from then on.
    """

    total_step: int
    cycle: int
    early: float
    late: float
    full_steps: int
    predict_steps: int


@attrs.frozen(kw_only=True)
class SchedulerStats:
    """Counts of the finished steps of a :class:`PhaseScheduler`.

    :ivar total_steps: finished steps (those :meth:`PhaseScheduler.end_step`
        was called for).
    :ivar full: finished FULL steps.
    :ivar predict: finished PREDICT steps.
    :ivar correct: finished CORRECT steps.
    :ivar cycles: cycles the finished steps belong to: the last finished
        step's ``cycle`` + 1, 0 before any step finished (a cycle counts
        from its first FULL step, finished or not).
    :ivar speedup: ``total_steps / (full + correct)``, 1.0 before any step.
    :ivar full_steps: FULL length now in force.
    :ivar predict_steps: predict length now in force.
    :ivar correct_every: the correction period (None: never).
    :ivar adaptive: whether the lengths adapt to the loss.
    :ivar adjustments: number of changes adaptive mode made.
    """

    total_steps: int
    full: int
    predict: int
    correct: int
    cycles: int
    speedup: float
    full_steps: int
    predict_steps: int
    correct_every: int | None
    adaptive: bool
    adjustments: int

    def as_dict(self) -> dict[str, Any]:
        """The stats as a dict of plain values (e.g. for ``run.log``)."""
        return attrs.asdict(self)


class RecordSink(Protocol):
    """What :meth:`PhaseScheduler.attach` needs: ``tracker.Run`` fits."""

    def log_record(
        self, schema: str, record: Any = None, *, step: int | None = None, **fields: Any
    ) -> Any:
        """Append one record of ``schema`` at ``step``."""


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name}: expected an int >= 1, given {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: expected an int >= 1, given {value!r}") from None
    if number < 1:
        raise ValueError(f"{name}: expected an int >= 1, given {number}")
    return number


def _number(name: str, value: Any) -> float:
    if isinstance(value, (str, bytes, bool)):
        raise TypeError(f"{name}: expected a number, given {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a number, given {value!r}") from None


class PhaseScheduler:
    """Decide, step by step, between FULL, PREDICT and CORRECT.

    The schedule is checked once at each :meth:`begin_step`, with
    ``phase_step`` counting the finished steps of the current stretch:

    - from FULL, go to PREDICT once ``phase_step >= full_steps``
      (``phase_step`` restarts at 0);
    - from PREDICT, go to CORRECT when ``phase_step > 0`` and
      ``phase_step % correct_every == 0``; otherwise go to FULL when
      ``phase_step >= predict_steps``; the CORRECT check comes first;
    - from CORRECT, go back to PREDICT while ``phase_step < predict_steps``,
      else to FULL. A CORRECT step does not restart ``phase_step``.

    Entering FULL restarts ``phase_step``, counts a cycle and, in adaptive
    mode, adjusts the lengths. :meth:`end_step` advances ``phase_step`` and
    ``total_step``. For example full 2, predict 4, correct every 2 repeats
    ``FULL FULL PREDICT PREDICT CORRECT PREDICT CORRECT`` (7 steps, 4 of
    them full computations, a speedup of 7/4). Since a CORRECT step always
    goes back to PREDICT (or FULL), ``correct_every=1`` alternates PREDICT
    and CORRECT.

    **Adaptive mode** keeps the last 100 losses (NaN losses are not kept:
    they would make both means NaN). When FULL is entered with at least 20
    losses kept, ``early`` is the mean of the oldest 10 and ``late`` the mean
    of the newest 10, and in this order:

    - if ``late > early * (1 + loss_threshold)`` (the loss is rising), FULL
      gets longer and the predict stretch shorter: ``full_steps += 5``
      (at most 50) and ``predict_steps -= 10`` (at least 10);
    - else if ``late < 0.95 * early`` (the loss is falling), the other way:
      ``full_steps -= 2`` (at least 5) and ``predict_steps += 5`` (at most 100).

    A bound only stops a change, it never moves a length the other way: a
    ``full_steps`` of 60 given by the user is not cut to 50 by a rising loss.
    The window is not cleared after a change, so a trend that lasts keeps
    moving the lengths one notch per cycle until the bounds. The rules
    assume losses >= 0.

    **Defaults**: ``full_steps=10``, ``predict_steps=40``,
    ``correct_every=10`` (``None`` means never correct), ``adaptive=False``,
    ``loss_threshold=0.05`` (a rise of more than 5% lengthens FULL, mirroring
    the fixed 5% fall that shortens it, with a dead band in between).

    The scheduler is not thread-safe; use one per training loop.

    :param full_steps: length of each FULL phase, >= 1.
    :param predict_steps: length of each predict stretch, >= 1.
    :param correct_every: a CORRECT step whenever the predict stretch's
        ``phase_step`` is a positive multiple of it (though never two in a
        row); ``None`` for never.
    :param adaptive: adapt the lengths to the loss trend (rules above).
    :param loss_threshold: relative rise of the loss that lengthens FULL, >= 0.
    :raises TypeError: a length that is not an int.
    :raises ValueError: a length < 1, or a negative or non-finite threshold.
    """

    #: Losses kept by adaptive mode.
    WINDOW = 100
    #: Losses needed before adaptive mode changes anything.
    MIN_LOSSES = 20
    #: Losses averaged at each end of the window.
    EDGE = 10

    def __init__(
        self,
        full_steps: int = 10,
        predict_steps: int = 40,
        correct_every: int | None = 10,
        adaptive: bool = False,
        loss_threshold: float = 0.05,
    ) -> None:
        self._initial_full = _positive_int("full_steps", full_steps)
        self._initial_predict = _positive_int("predict_steps", predict_steps)
        self._correct_every = (
            None if correct_every is None else _positive_int("correct_every", correct_every)
        )
        if not isinstance(adaptive, bool):
            raise TypeError(f"adaptive: expected a bool, given {adaptive!r}")
        self._adaptive = adaptive
        threshold = _number("loss_threshold", loss_threshold)
        if not (math.isfinite(threshold) and threshold >= 0):
            raise ValueError(f"loss_threshold: expected a finite number >= 0, given {threshold}")
        self._loss_threshold = threshold
        self._sink: RecordSink | None = None
        self.reset()

    @classmethod
    def from_config(cls, config: Any = None, **overrides: Any) -> PhaseScheduler:
        """A scheduler with the defaults of tracker.toml's ``[plugins.phase_trainer]``.

        :param config: a ``tracker.Config``, a plain mapping holding the
            table's keys, or None to load the tracker.toml that applies
            (``TRACKER_CONFIG``, else the nearest one upwards).
        :param overrides: keywords of the constructor; they win over the table.
        :raises ValueError: an unknown key or a bad value in the table.
        """
        if config is None:
            import tracker

            config = tracker.load_config()
        if isinstance(config, Mapping):
            table, where = config, ""
        else:
            table = config.plugin_config(PLUGIN_NAME)
            where = str(config.file) if config.file is not None else ""
        options = scheduler_options(table, where)
        options.update(overrides)
        return cls(**options)

    # -- configuration -----------------------------------------------------

    @property
    def full_steps(self) -> int:
        """Length of the FULL phase now in force."""
        return self._full_steps

    @property
    def predict_steps(self) -> int:
        """Length of the predict stretch now in force."""
        return self._predict_steps

    @property
    def correct_every(self) -> int | None:
        """The correction period; ``None`` when the schedule never corrects."""
        return self._correct_every

    @property
    def adaptive(self) -> bool:
        """Whether the lengths adapt to the loss trend."""
        return self._adaptive

    @property
    def loss_threshold(self) -> float:
        """Relative rise of the loss that lengthens FULL in adaptive mode."""
        return self._loss_threshold

    # -- state ---------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        """Phase of the pending step, or of the last step begun."""
        return self._phase

    @property
    def phase_step(self) -> int:
        """Finished steps of the current stretch."""
        return self._phase_step

    @property
    def total_step(self) -> int:
        """Finished steps over the whole schedule (the next step's index)."""
        return self._total_step

    @property
    def cycle(self) -> int:
        """Returns to FULL so far: the index of the current cycle, from 0."""
        return self._cycle

    @property
    def adjustments(self) -> tuple[Adjustment, ...]:
        """Every change adaptive mode made, oldest first."""
        return tuple(self._adjustments)

    @property
    def speedup_ratio(self) -> float:
        """All finished steps over those that computed the full gradient.

        1.0 before the first step finishes.
        """
        expensive = self._counts[Phase.FULL] + self._counts[Phase.CORRECT]
        if expensive == 0:
            return 1.0
        return self._total_step / expensive

    # -- the loop ------------------------------------------------------------

    def begin_step(self) -> StepInfo:
        """Start a step: apply the schedule and say what this step does.

        Calling it again before :meth:`end_step` returns the same pending
        step, so a step that raised can be retried.

        :returns: the phase and counters of the step.
        """
        if self._pending is not None:
            return self._pending
        previous = self._phase
        target = self._next_phase()
        if target is Phase.FULL and previous is not Phase.FULL:
            self._enter_full()
        elif target is Phase.PREDICT and previous is Phase.FULL:
            self._phase_step = 0
        self._phase = target
        self._pending = StepInfo(
            phase=target,
            phase_step=self._phase_step,
            total_step=self._total_step,
            cycle=self._cycle,
            phase_changed=target is not previous and self._total_step > 0,
            full_steps=self._full_steps,
            predict_steps=self._predict_steps,
        )
        return self._pending

    def end_step(self, loss: float) -> None:
        """Finish the pending step with its loss.

        Advances ``phase_step`` and ``total_step``, counts the step for its
        phase, keeps the loss for adaptive mode and, when attached, logs a
        ``phase.step`` record at step ``total_step`` of the finished step.

        :param loss: the step's loss; NaN and infinities are data (logged),
            though NaN is left out of the adaptive window.
        :raises RuntimeError: no step is pending.
        :raises TypeError: ``loss`` is not a number.
        """
        info = self._pending
        if info is None:
            raise RuntimeError("end_step() called without a pending begin_step()")
        value = _number("loss", loss)
        self._pending = None
        self._counts[info.phase] += 1
        self._cycles_seen = info.cycle + 1
        self._phase_step += 1
        self._total_step += 1
        if not math.isnan(value):
            self._losses.append(value)
        if self._sink is not None:
            self._sink.log_record(
                SCHEMA_NAME,
                step=info.total_step,
                phase=info.phase.value,
                phase_step=info.phase_step,
                cycle=info.cycle,
                loss=value,
                phase_changed=info.phase_changed,
                full_steps=info.full_steps,
                predict_steps=info.predict_steps,
            )

    def should_compute_full(self) -> bool:
        """Whether the pending step (or, with none pending, the next one)
        computes the full gradient. It changes no state."""
        if self._pending is not None:
            return self._pending.compute_full
        return self._next_phase().computes_full

    def stats(self) -> SchedulerStats:
        """Counts of the finished steps, cycles, speedup and current lengths."""
        return SchedulerStats(
            total_steps=self._total_step,
            full=self._counts[Phase.FULL],
            predict=self._counts[Phase.PREDICT],
            correct=self._counts[Phase.CORRECT],
            cycles=self._cycles_seen,
            speedup=self.speedup_ratio,
            full_steps=self._full_steps,
            predict_steps=self._predict_steps,
            correct_every=self._correct_every,
            adaptive=self._adaptive,
            adjustments=len(self._adjustments),
        )

    def reset(self) -> None:
        """Go back to the first FULL step with the lengths given at creation.

        Counts, losses, adjustments and any pending step are dropped; an
        attached run stays attached (its steps then start again at 0).
        """
        self._full_steps = self._initial_full
        self._predict_steps = self._initial_predict
        self._phase = Phase.FULL
        self._phase_step = 0
        self._total_step = 0
        self._cycle = 0
        self._cycles_seen = 0
        self._counts = {phase: 0 for phase in Phase}
        self._losses: deque[float] = deque(maxlen=self.WINDOW)
        self._adjustments: list[Adjustment] = []
        self._pending: StepInfo | None = None

    # -- logging -------------------------------------------------------------

    def attach(self, run: RecordSink) -> PhaseScheduler:
        """Log a ``phase.step`` record to ``run`` at every :meth:`end_step`.

        The record's step is the scheduler's ``total_step``; besides the
        fields of DESIGN's ``phase.step`` it carries the lengths in force
        (``full_steps``, ``predict_steps``), so a summary can show how they
        changed. Attaching again replaces the run.

        :param run: a ``tracker.Run`` (anything with its ``log_record``).
        :returns: the scheduler, for chaining.
        """
        if not callable(getattr(run, "log_record", None)):
            raise TypeError(f"attach: expected a run with log_record(), given {run!r}")
        self._sink = run
        return self

    def detach(self) -> None:
        """Stop logging records; the schedule itself goes on."""
        self._sink = None

    # -- internals -------------------------------------------------------------

    def _next_phase(self) -> Phase:
        """The phase the next :meth:`begin_step` moves to, without moving."""
        phase, step = self._phase, self._phase_step
        if phase is Phase.FULL:
            return Phase.PREDICT if step >= self._full_steps else Phase.FULL
        if phase is Phase.PREDICT:
            every = self._correct_every
            if every is not None and step > 0 and step % every == 0:
                return Phase.CORRECT
            return Phase.FULL if step >= self._predict_steps else Phase.PREDICT
        return Phase.PREDICT if step < self._predict_steps else Phase.FULL

    def _enter_full(self) -> None:
        self._phase_step = 0
        self._cycle += 1
        if self._adaptive:
            self._adapt()

    def _adapt(self) -> None:
        if len(self._losses) < self.MIN_LOSSES:
            return
        losses = list(self._losses)
        # sum(), not math.fsum(): fsum raises on inf + -inf where sum gives NaN.
        early = sum(losses[: self.EDGE]) / self.EDGE
        late = sum(losses[-self.EDGE :]) / self.EDGE
        full, predict = self._full_steps, self._predict_steps
        if late > early * (1 + self._loss_threshold):
            full = max(full, min(full + 5, 50))
            predict = min(predict, max(predict - 10, 10))
        elif late < 0.95 * early:
            full = min(full, max(full - 2, 5))
            predict = max(predict, min(predict + 5, 100))
        if (full, predict) != (self._full_steps, self._predict_steps):
            self._full_steps, self._predict_steps = full, predict
            self._adjustments.append(
                Adjustment(
                    total_step=self._total_step,
                    cycle=self._cycle,
                    early=early,
                    late=late,
                    full_steps=full,
                    predict_steps=predict,
                )
            )
