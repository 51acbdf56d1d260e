"""Phase trainer plugin for ``tracker``.

:class:`PhaseScheduler` decides whether each training step computes the full
gradient (FULL, CORRECT) or reuses the last one (PREDICT);
``scheduler.attach(run)`` logs a ``phase.step`` record per step, and the
plugin's summarizers report steps per phase, cycles, speedup, the loss of
each phase and the schedule lengths over time.
"""

from tracker_phase_trainer.record import PHASES, SCHEMA_NAME, PhaseStep
from tracker_phase_trainer.scheduler import (
    Adjustment,
    Phase,
    PhaseScheduler,
    RecordSink,
    SchedulerStats,
    StepInfo,
)

__all__ = [
    "PHASES",
    "SCHEMA_NAME",
    "Adjustment",
    "Phase",
    "PhaseScheduler",
    "PhaseStep",
    "RecordSink",
    "SchedulerStats",
    "StepInfo",
]
