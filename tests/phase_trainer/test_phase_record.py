"""The phase.step record class and the [plugins.phase_trainer] options."""

import math

import attrs
import pytest
from tracker_phase_trainer import PhaseScheduler, PhaseStep
from tracker_phase_trainer.config import scheduler_options


def test_record_defaults_and_fields():
    record = PhaseStep(phase="PREDICT", phase_step=3, cycle=2, loss=math.nan)
    assert record.phase_changed is False
    assert (record.full_steps, record.predict_steps) == (0, 0)
    assert math.isnan(record.loss)
    assert [f.name for f in attrs.fields(PhaseStep)] == [
        "phase", "phase_step", "cycle", "loss", "phase_changed", "full_steps", "predict_steps"]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.loss = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("phase", ["FULL", "PREDICT", "CORRECT"])
def test_record_accepts_each_phase(phase):
    assert PhaseStep(phase=phase, phase_step=0, cycle=0, loss=0.5).phase == phase


@pytest.mark.parametrize(
    ("fields", "given"),
    [
        ({"phase": "full"}, "'full'"),  # upper case as written
        ({"phase": "WARMUP"}, "'WARMUP'"),
        ({"phase_step": -1}, "-1"),
        ({"cycle": -2}, "-2"),
        ({"full_steps": -5}, "-5"),
        ({"predict_steps": -1}, "-1"),
    ],
)
def test_record_validators_refuse(fields, given):
    values = {"phase": "FULL", "phase_step": 0, "cycle": 0, "loss": 1.0, **fields}
    with pytest.raises(ValueError, match="expected") as info:
        PhaseStep(**values)
    assert str(info.value).endswith(f"given {given}")


def test_options_from_table():
    table = {"full_steps": 3, "predict_steps": 9, "correct_every": 0, "adaptive": True,
             "loss_threshold": 0}
    options = scheduler_options(table)
    assert options == {"full_steps": 3, "predict_steps": 9, "correct_every": None,
                       "adaptive": True, "loss_threshold": 0}
    scheduler = PhaseScheduler(**options)
    assert scheduler.correct_every is None and scheduler.adaptive
    assert scheduler_options({}) == {}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"full_step": 3}, "unknown key [plugins.phase_trainer] full_step; allowed: full_steps"),
        ({"full_steps": 0}, "full_steps: expected an int >= 1, given 0"),
        ({"predict_steps": 2.0}, "predict_steps: expected an int >= 1, given 2.0"),
        ({"correct_every": -1}, "correct_every: expected an int >= 1, or 0 for never, given -1"),
        ({"adaptive": "yes"}, "adaptive: expected true or false, given 'yes'"),
        ({"loss_threshold": -0.5}, "loss_threshold: expected a finite number >= 0, given -0.5"),
        ({"loss_threshold": math.inf}, "loss_threshold: expected a finite number >= 0, given inf"),
        ({"loss_threshold": True}, "loss_threshold: expected a finite number >= 0, given True"),
    ],
)
def test_options_refuse_bad_tables(table, message):
    with pytest.raises(ValueError) as info:
        scheduler_options(table, "/cfg/tracker.toml")
    assert str(info.value).startswith("/cfg/tracker.toml: ")
    assert message in str(info.value)
