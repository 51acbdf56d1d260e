"""``group`` and ``job_type`` as run fields: start_run, W&B's init and variables, 0.4's tags, SQL, frames, the CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracker
from tracker.cli import make_cli


def cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(make_cli(), list(args))
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def labelled(tmp_store: Path) -> Path:
    for i, (group, job) in enumerate([("abl-a", "train"), ("abl-a", "train"), ("abl-b", "eval"), (None, None)]):
        with tracker.start_run(project="p", name=f"r{i}", config={"lr": [0.1, 0.1, 0.01, 0.5][i], "seed": i},
                               group=group, job_type=job) as run:
            for s in range(4):
                run.log({"loss": (i + 1) / (s + 1), "acc": s * 0.1 + i}, step=s)
            assert (run.group, run.job_type) == (group, job)
    with tracker.start_run(project="p", name="old", tags=["group:abl-b", "job_type:eval", "keep"]) as run:
        run.log({"loss": 3.0}, step=0)  # a run as 0.4's W&B init left it: group and job type as tags
    return tmp_store


def test_fields_are_stored_and_read_back(labelled: Path) -> None:
    infos = {i.name: i for i in tracker.open_store(labelled).runs()}
    assert (infos["r0"].group, infos["r0"].job_type) == ("abl-a", "train")
    assert (infos["r3"].group, infos["r3"].job_type) == (None, None)
    assert (infos["old"].group, infos["old"].job_type, infos["old"].tags) == \
        ("abl-b", "eval", ["group:abl-b", "job_type:eval", "keep"])
    assert infos["r2"].to_dict()["group"] == "abl-b"


def test_bad_groups_are_refused_before_anything_is_written(tmp_store: Path) -> None:
    with pytest.raises(TypeError, match="group: expected a str, given int"):
        tracker.start_run(group=3)
    with pytest.raises(tracker.TrackerError, match="job_type: must not be empty"):
        tracker.start_run(job_type="  ")
    with pytest.raises(tracker.TrackerError, match="group .* must be one line"):
        tracker.start_run(group="a\nb")
    assert not (tmp_store / "runs").exists() or not list((tmp_store / "runs").iterdir())


def test_wandb_init_and_its_variables_set_the_fields(tmp_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tracker.init(project="w", group="sweep-1", job_type="train", tags=["x"])
    run.log({"loss": 1.0})
    tracker.finish()
    monkeypatch.setenv("WANDB_RUN_GROUP", "from-env")
    monkeypatch.setenv("WANDB_JOB_TYPE", "eval")
    run2 = tracker.init(project="w")
    tracker.finish()
    store = tracker.open_store(tmp_store)
    a, b = store.run(run.id).info, store.run(run2.id).info
    assert (a.group, a.job_type, a.tags) == ("sweep-1", "train", ["x"])
    assert (b.group, b.job_type) == ("from-env", "eval")


def test_sql_view_and_frame_have_the_fields(labelled: Path) -> None:
    pytest.importorskip("duckdb")
    store = tracker.open_store(labelled)
    rows = store.sql('SELECT name, "group", job_type FROM runs ORDER BY name').fetchall()
    assert rows == [("old", "abl-b", "eval"), ("r0", "abl-a", "train"), ("r1", "abl-a", "train"),
                    ("r2", "abl-b", "eval"), ("r3", None, None)]
    assert store.sql('SELECT count(*) FROM runs WHERE "group" = \'abl-a\'').fetchall() == [(2,)]
    pytest.importorskip("pandas")
    frame = store.dataframe()
    assert list(frame.columns[:9]) == ["id", "name", "project", "status", "created_at", "ended_at", "tags", "group",
                                       "job_type"]
    assert sorted(frame["group"].dropna()) == ["abl-a", "abl-a", "abl-b", "abl-b"]


def test_cli_filters_and_shows_the_group(labelled: Path) -> None:
    code, out, _ = cli("runs", "--group", "abl-a", "--format", "json")
    assert code == 0 and sorted(r["name"] for r in json.loads(out)) == ["r0", "r1"]
    code, out, _ = cli("runs", "--job-type", "eval", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted((r["name"], r["group"]) for r in rows) == [("old", "abl-b"), ("r2", "abl-b")]
    code, out, _ = cli("runs", "--all")
    assert out.splitlines()[0].split()[:5] == ["id", "name", "project", "group", "status"]
    rid = tracker.open_store(labelled).runs()[-1].id
    code, out, _ = cli("show", rid)
    assert "group     abl-a  job type train" in out


def test_runs_group_by_gives_n_and_mean_std_per_group(labelled: Path) -> None:
    code, out, err = cli("runs", "--group-by", "group", "-m", "loss", "-m", "acc", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [(g["group"], g["n"]) for g in doc] == [("abl-a", 2), ("abl-b", 2), (None, 1)]
    a = doc[0]["metrics"]["loss"]
    assert a["mean"] == pytest.approx((1 / 4 + 2 / 4) / 2) and a["std"] == pytest.approx(0.125) and a["n"] == 2
    assert doc[1]["metrics"]["acc"]["n"] == 1  # the 0.4 run logged no acc
    code, out, _ = cli("runs", "--group-by", "config.lr", "-m", "loss", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["group"], r["n"]) for r in rows] == [("0.01", "1"), ("0.1", "2"), ("0.5", "1"), ("", "1")]
    assert list(rows[0]) == ["group", "n", "loss.mean", "loss.std", "loss.n"]
    code, out, _ = cli("runs", "--group-by", "group", "-m", "loss")
    lines = out.splitlines()
    assert lines[0].split() == ["group", "n", "loss"]
    assert lines[2].split() == ["abl-a", "2", "0.375", "±", "0.125"]
    assert lines[3].split() == ["abl-b", "2", "1.875", "±", "1.125"]
    assert lines[4].split()[:2] == ["(none)", "1"]  # the run without a group, named as the page and docs name it


def test_cli_group_by_errors_are_one_line(labelled: Path) -> None:
    code, _, err = cli("runs", "--group-by", "config.momentum")
    assert code == 1 and err.count("\n") == 1
    assert "no run has config key 'momentum' (the runs have: group, job_type, project, tag, config.lr, config.seed)" \
        in err
    code, _, err = cli("runs", "--group-by", "group", "-m", "los")
    assert code == 1 and "metric 'los': none of the 5 runs logged it (metrics logged: acc, loss)" in err
    code, _, err = cli("runs", "--group-by", "flavour")
    assert code == 1 and "expected one of group, job_type, project, tag, name or config.KEY" in err
