"""Property tests: W&B's step and commit rules against a model of them; TensorBoard histograms read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracker

NAMES = st.sampled_from(["a", "b", "c"])
OPS = st.lists(st.tuples(st.dictionaries(NAMES, st.integers(-5, 5), max_size=2),
                         st.one_of(st.none(), st.integers(0, 12)),
                         st.sampled_from([None, True, False])), max_size=12)


def expected_rows(ops: list[tuple[dict, int | None, bool | None]]) -> list[tuple[int, dict]]:
    """The rows W&B's rules give (docs/wandb.md), steps kept as logged."""
    rows: list[tuple[int, dict]] = []
    state: dict[str, Any] = {"pending": {}, "step": None, "held": False, "next": 0}

    def write(data: dict, step: int | None) -> None:  # an empty dict too: a row, as run.log({}) writes
        at = state["next"] if step is None else step
        rows.append((at, dict(data)))
        state["next"] = max(state["next"], at + 1)

    def release() -> None:
        data, step = state["pending"], state["step"]
        state.update(pending={}, step=None, held=False)
        write(data, step)

    for values, step, commit in ops:
        if commit is False:
            if state["held"] and step is not None and step != state["step"]:
                release()
            if not state["held"]:
                state.update(step=step, held=True)
            state["pending"].update(values)
            continue
        if state["held"] and (step is None or step == state["step"]):
            state["pending"].update(values)
            release()
            continue
        if state["held"]:
            release()
        write(values, step)
    if state["held"]:
        release()
    return rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_log_follows_wandbs_step_and_commit_rules(tmp_store: Path, ops: list) -> None:
    run = tracker.init(project="rules")
    for values, step, commit in ops:
        tracker.log(dict(values), step=step, commit=commit)
    tracker.finish()
    got = [(r.step, r.data) for r in tracker.open_store(tmp_store).run(run.id).records(schema="metrics")]
    assert got == expected_rows(ops)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=200),
       bins=st.sampled_from([1, 5, 30, "auto"]))
def test_tensorboard_histograms_keep_count_range_and_order(values: list[float], bins: Any) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto.summary_pb2 import HistogramProto
    from torch.utils.tensorboard.summary import histogram

    from tracker.integrations.tbevents import histo_record

    summary = histogram("h", np.asarray(values), bins=bins)  # what SummaryWriter.add_histogram writes
    histo = summary.value[0].histo
    assert isinstance(histo, HistogramProto)
    record = histo_record(histo)
    assert record["count"] == len(values) == sum(record["counts"])
    assert len(record["edges"]) == len(record["counts"]) + 1
    assert all(a < b for a, b in zip(record["edges"], record["edges"][1:], strict=False))
    assert record["min"] == pytest.approx(min(values)) and record["max"] == pytest.approx(max(values))
    assert record["edges"][0] <= min(values) and record["edges"][-1] >= max(values) - 1e-9 * max(1.0, abs(max(values)))
