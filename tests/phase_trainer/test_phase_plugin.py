"""The plugin through the real core: entry point, records, validation, config, CLI."""

import importlib.metadata
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tracker_phase_trainer import PhaseScheduler, PhaseStep

import tracker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "phase_trainer.py"


def test_entry_point_is_declared():
    (ep,) = [
        ep for ep in importlib.metadata.entry_points(group="tracker") if ep.name == "phase_trainer"
    ]
    assert ep.value == "tracker_phase_trainer.plugin"
    assert ep.dist.name == "tracker-phase-trainer"
    names = {re.match(r"[A-Za-z0-9._-]+", r).group(0) for r in ep.dist.requires or []}
    assert names == {"tracker-core", "numpy", "attrs"}  # never the unrelated "tracker"


def test_plugin_loads_from_its_entry_point(tracker_store):
    (info,) = [p for p in tracker.list_plugins() if p.name == "phase_trainer"]
    assert info.status == "ok", info.error
    assert info.distribution == "tracker-phase-trainer"
    assert info.builtin is False
    assert info.schemas == ["phase.step"]
    assert info.summarizers == ["phase.overview", "phase.loss", "phase.schedule"]
    assert set(info.hooks) == {"tracker_configure", "tracker_schemas", "tracker_summarizers", "tracker_panels"}


def test_attach_logs_a_record_per_step(tracker_store):
    scheduler = PhaseScheduler(2, 4, 2)
    losses = [1.0, 0.5, math.nan, math.inf, 0.25, -math.inf, 2, 0.125]
    infos = []
    with tracker.start_run(project="phase", name="attach") as run:
        assert scheduler.attach(run) is scheduler
        for loss in losses:
            infos.append(scheduler.begin_step())
            scheduler.end_step(loss)
        scheduler.detach()
        scheduler.begin_step()
        scheduler.end_step(9.0)  # detached: not logged
    view = tracker.open_store(tracker_store).run(run.id[:6])
    records = list(view.records("phase.step"))
    assert [r.step for r in records] == list(range(8))
    for record, info, loss in zip(records, infos, losses, strict=True):
        data = dict(record.data)
        got = data.pop("loss")
        assert got == loss or (math.isnan(got) and math.isnan(loss))
        assert type(got) is float
        assert data == {
            "phase": info.phase.value, "phase_step": info.phase_step, "cycle": info.cycle,
            "phase_changed": info.phase_changed, "full_steps": 2, "predict_steps": 4,
        }
    rows = list(view.table("phase.step").rows())
    assert all(type(r) is PhaseStep for r in rows)
    assert [r.phase for r in rows] == ["FULL", "FULL", "PREDICT", "PREDICT", "CORRECT",
                                       "PREDICT", "CORRECT", "FULL"]
    assert [r.phase_changed for r in rows] == [i.phase_changed for i in infos]


def test_rows_give_bools_for_bool_fields(tracker_store):
    with tracker.start_run(project="phase") as run:
        run.log_record("phase.step", step=0, phase="FULL", phase_step=0, cycle=0, loss=1.0,
                       phase_changed=True)
    (row,) = tracker.open_store().run(run.id).table("phase.step").rows()
    assert row.phase_changed is True


def test_attach_refuses_a_non_run():
    with pytest.raises(TypeError, match="log_record"):
        PhaseScheduler().attach(object())


def test_summary_read_back_from_a_real_run(tracker_store):
    scheduler = PhaseScheduler(full_steps=1, predict_steps=3, correct_every=100)
    with tracker.start_run(project="phase", name="speedup") as run:
        scheduler.attach(run)
        for t in range(40):
            scheduler.begin_step()
            scheduler.end_step(1.0 / (t + 1))
    summaries = tracker.open_store().run(run.id).summarize("phase.step")
    by_name = {s.summarizer: s for s in summaries}
    assert list(by_name) == ["phase.overview", "phase.loss", "phase.schedule"]
    assert by_name["phase.overview"].rows == [
        {"steps": 40, "full": 10, "predict": 30, "correct": 0, "cycles": 10, "speedup": 4.0}
    ]
    assert "40 / 10 = 4.000" in by_name["phase.overview"].notes[0]
    assert by_name["phase.schedule"].rows == [
        {"from_step": 0, "to_step": 39, "first_cycle": 0, "last_cycle": 9,
         "full_steps": 1, "predict_steps": 3, "steps": 40}
    ]
    assert by_name["phase.schedule"].notes == ("lengths fixed for the whole run",)


@pytest.mark.parametrize(
    ("fields", "field", "expected", "given"),
    [
        ({"phase": "full"}, "phase", "one of 'FULL', 'PREDICT', 'CORRECT'", "'full'"),
        ({"phase": "WARMUP"}, "phase", "one of 'FULL', 'PREDICT', 'CORRECT'", "'WARMUP'"),
        ({"phase_step": -1}, "phase_step", "an int >= 0", "-1"),
        ({"cycle": -3}, "cycle", "an int >= 0", "-3"),
        ({"full_steps": -1}, "full_steps", "an int >= 0", "-1"),
        ({"predict_steps": -2}, "predict_steps", "an int >= 0", "-2"),
        # Type checks of the core, before the class is built:
        ({"phase_step": 1.0}, "phase_step", "an int", "float 1.0"),
        ({"phase": 1}, "phase", "a str", "int 1"),
        ({"loss": "0.5"}, "loss", "a float", "str '0.5'"),
        ({"phase_changed": 1}, "phase_changed", "a bool", "int 1"),
    ],
)
def test_bad_records_are_refused_with_schema_error(tracker_store, fields, field, expected, given):
    good = {"phase": "FULL", "phase_step": 0, "cycle": 0, "loss": 1.0}
    with tracker.start_run(project="phase") as run:
        run.log_record("phase.step", step=0, **good)
        with pytest.raises(tracker.SchemaError) as info:
            run.log_record("phase.step", step=1, **{**good, **fields})
        run.log_record("phase.step", step=2, **good)  # the run goes on
    message = str(info.value)
    assert "'phase.step'" in message
    assert f"{field}: expected {expected}, given {given}" in message
    assert [r.step for r in tracker.open_store().run(run.id).records("phase.step")] == [0, 2]


def test_record_without_extension_fields_is_valid(tracker_store):
    with tracker.start_run(project="phase") as run:
        run.log_record("phase.step", step=0, phase="FULL", phase_step=0, cycle=0, loss=1.0)
        run.log_record("phase.step", PhaseStep(phase="PREDICT", phase_step=0, cycle=0, loss=0.5),
                       step=1)
    rows = list(tracker.open_store().run(run.id).table("phase.step").rows())
    assert rows == [
        PhaseStep(phase="FULL", phase_step=0, cycle=0, loss=1.0),
        PhaseStep(phase="PREDICT", phase_step=0, cycle=0, loss=0.5),
    ]


def test_bad_plugin_table_reports_the_plugin_broken(tracker_store):
    config = tracker.Config(plugins={"phase_trainer": {"full_step": 3}})
    with pytest.warns(tracker.TrackerWarning, match="plugin 'phase_trainer' is broken"):
        host = tracker.Host(tracker.get_plugin_manager(), config)
    (info,) = [p for p in host.plugins() if p.name == "phase_trainer"]
    assert info.status == "broken"
    assert "unknown key [plugins.phase_trainer] full_step" in info.error
    assert "phase.step" not in host.schemas


def test_from_config_reads_the_plugin_table(tracker_store, tmp_path):
    config = tracker.Config(plugins={"phase_trainer": {"full_steps": 3, "correct_every": 0}})
    scheduler = PhaseScheduler.from_config(config, predict_steps=7)
    assert (scheduler.full_steps, scheduler.predict_steps, scheduler.correct_every) == (3, 7, None)
    assert PhaseScheduler.from_config({"adaptive": True}).adaptive is True
    (tmp_path / "tracker.toml").write_text(
        "[plugins.phase_trainer]\nfull_steps = 4\npredict_steps = 12\nadaptive = true\n"
    )
    scheduler = PhaseScheduler.from_config()  # the tracker.toml of the current folder
    assert (scheduler.full_steps, scheduler.predict_steps, scheduler.adaptive) == (4, 12, True)
    assert PhaseScheduler.from_config(full_steps=9).full_steps == 9
    (tmp_path / "tracker.toml").write_text("[plugins.phase_trainer]\nfull_steps = 0\n")
    with pytest.raises(ValueError, match=r"tracker\.toml: \[plugins\.phase_trainer\] full_steps"):
        PhaseScheduler.from_config()


def test_cli_summary_json(tracker_store):
    scheduler = PhaseScheduler(2, 4, 2)
    with tracker.start_run(project="phase") as run:
        scheduler.attach(run)
        for _ in range(14):
            scheduler.begin_step()
            scheduler.end_step(0.5)
    out = subprocess.run(
        [sys.executable, "-m", "tracker", "summary", run.id, "--schema", "phase.step",
         "--format", "json"],
        capture_output=True, text=True, check=True, env=os.environ.copy(),
    )
    doc = json.loads(out.stdout)
    summaries = doc["summaries"] if isinstance(doc, dict) else doc
    overview = next(s for s in summaries if s["summarizer"] == "phase.overview")
    assert overview["rows"] == [
        {"steps": 14, "full": 4, "predict": 6, "correct": 4, "cycles": 2, "speedup": 14 / 8}
    ]


def test_example_runs_and_prints_the_summary(tmp_path):
    env = {**os.environ, "TRACKER_STORE": str(tmp_path / "store")}
    env.pop("TRACKER_RUN_ID", None)
    env.pop("TRACKER_CONFIG", None)
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--steps", "200"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "Phase trainer: steps per phase" in out.stdout
    assert "Phase trainer: schedule lengths over time" in out.stdout
    (info,) = tracker.open_store(tmp_path / "store").runs()
    assert info.status == "finished"
    view = tracker.open_store(tmp_path / "store").run(info.id)
    assert len(view.table("phase.step")) == 200
    metrics = view.metrics()
    assert metrics["final_loss"][-1] < 0.05
    assert metrics["speedup"][-1] > 1.5
