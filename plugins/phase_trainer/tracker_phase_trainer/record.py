"""The ``phase.step`` record: one finished step of a phase-trained loop.

Step and time are not fields: they live in the event, and the event's step
is the scheduler's ``total_step``.

Beyond DESIGN's fields (``phase``, ``phase_step``, ``cycle``, ``loss``,
``phase_changed``) the record carries two optional extension fields,
``full_steps`` and ``predict_steps``: the schedule lengths in force at that
step. They are written so that a summary can show how adaptive mode changed
the lengths from the records alone. Deriving the lengths from the phase
sequence instead is ambiguous: the CORRECT check comes before the end-of-
stretch check, so full 2 / predict 4 / correct every 2 and full 2 /
predict 5 / correct every 2 both end their predict stretch at
``phase_step`` 4; and a run that stops mid-cycle shows only part of its last
stretch. Records written without them (by another producer) read as 0,
"not recorded", and the summary says so.

Annotations here are real classes (no ``from __future__ import
annotations``) because the core reads the field types at run time.
"""

import attrs

from tracker import Schema
from tracker import validators as v

__all__ = ["PHASES", "SCHEMAS", "SCHEMA_NAME", "PhaseStep"]

#: Schema name of the records :meth:`PhaseScheduler.attach` writes.
SCHEMA_NAME = "phase.step"

#: The phase names, upper case as written in a record.
PHASES = ("FULL", "PREDICT", "CORRECT")


@attrs.frozen(kw_only=True)
class PhaseStep:
    """One finished step of a :class:`~tracker_phase_trainer.PhaseScheduler`.

    :ivar phase: ``"FULL"``, ``"PREDICT"`` or ``"CORRECT"``, upper case.
    :ivar phase_step: position in the FULL phase or the predict stretch, >= 0.
    :ivar cycle: completed returns to FULL before this step, >= 0.
    :ivar loss: the step's loss; NaN and infinities are data.
    :ivar phase_changed: whether this step's phase differs from the previous
        step's.
    :ivar full_steps: extension: FULL length in force, 0 when not recorded.
    :ivar predict_steps: extension: predict length in force, 0 when not
        recorded.
    """

    phase: str = attrs.field(validator=v.one_of(*PHASES))
    phase_step: int = attrs.field(validator=v.non_negative)
    cycle: int = attrs.field(validator=v.non_negative)
    loss: float
    phase_changed: bool = False
    full_steps: int = attrs.field(default=0, validator=v.non_negative)
    predict_steps: int = attrs.field(default=0, validator=v.non_negative)


#: The plugin's one schema.
SCHEMAS = [Schema(SCHEMA_NAME, PhaseStep, version=1,
                  description="one step of a phase-trained loop: FULL, PREDICT or CORRECT, "
                              "and its loss")]
