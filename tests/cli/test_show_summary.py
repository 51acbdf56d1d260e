"""``tracker show`` and ``tracker summary``: info and every summary, in every format."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

import tracker

LOSSES = [1.0, 0.5, 0.25, math.nan, 0.125]


def strict_json(text: str):
    """Parse one strict JSON document (no NaN or Infinity tokens)."""

    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def run(store):
    with tracker.start_run(project="fft", name="a", config={"lr": 0.1, "opt": {"name": "adam"}},
                           tags=["t1"]) as r:
        for s, loss in enumerate(LOSSES):
            r.log({"loss": loss, "acc": s / 4}, step=s)
        r.log({"grad": math.inf}, step=5)
        for step, total in ((0, 1.0), (10, 0.4), (20, 0.6)):
            r.log_record("fft.loss_point", step=step, model_id="m", total_loss=total, mel_err=0.5,
                         spec_err=0.2, welch_err=0.1, mean_gate=0.5)
    return r


def _summary(doc: dict, name: str) -> dict:
    found = [s for s in doc["summaries"] if s["summarizer"] == name]
    assert len(found) == 1, [s["summarizer"] for s in doc["summaries"]]
    return found[0]


def test_summary_json_numbers(cli, run):
    result = cli("summary", run.id, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = strict_json(result.stdout)
    assert doc["run"] == run.id
    rows = {r["metric"]: r for r in _summary(doc, "metrics.scalars")["rows"]}
    finite = [v for v in LOSSES if not math.isnan(v)]
    loss = rows["loss"]
    assert (loss["count"], loss["nan"], loss["first"], loss["last"]) == (5, 1, 1.0, 0.125)
    assert (loss["min"], loss["min_step"], loss["max"], loss["max_step"]) == (0.125, 4, 1.0, 0)
    assert loss["mean"] == pytest.approx(sum(finite) / len(finite))
    assert rows["acc"]["last"] == 1.0 and rows["acc"]["count"] == 5
    # Infinity is data, encoded as the store encodes it.
    assert rows["grad"]["last"] == "Infinity" and rows["grad"]["max"] == "Infinity"
    assert _summary(doc, "metrics.run")["rows"][0]["records"] == 6
    curves = _summary(doc, "fft.loss_curves")["rows"][0]
    assert (curves["points"], curves["best"], curves["best_step"], curves["last"]) == (3, 0.4, 10, 0.6)


def test_summary_schema_filter(cli, run):
    doc = strict_json(cli("summary", run.id[:6], "--schema", "fft.loss_point", "--format", "json").stdout)
    assert {s["schema"] for s in doc["summaries"]} == {"fft.loss_point"}


def test_summary_csv_is_one_table(cli, run):
    result = cli("summary", run.id, "--format", "csv")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["summary"] for r in rows} == {"metrics.scalars", "metrics.run", "fft.loss_curves"}
    loss = next(r for r in rows if r["summary"] == "metrics.scalars" and r["metric"] == "loss")
    assert float(loss["last"]) == 0.125 and int(loss["nan"]) == 1 and loss["records"] == ""
    grad = next(r for r in rows if r.get("metric") == "grad")
    assert grad["last"] == "inf"


def test_summary_table(cli, run):
    out = cli("summary", run.id).stdout
    assert "Metrics" in out and "FFT loss curves" in out
    loss_line = next(line for line in out.splitlines() if line.startswith("loss "))
    assert loss_line.split()[:5] == ["loss", "5", "1", "1", "0.125"]


def test_summary_of_a_schema_the_run_lacks(cli, run):
    result = cli("summary", run.id, "--schema", "ptq.layer")
    assert result.exit_code == 0 and "no summaries" in result.stdout
    doc = strict_json(cli("summary", run.id, "--schema", "ptq.layer", "--format", "json").stdout)
    assert doc["summaries"] == []


def test_show_table(cli, run):
    result = cli("show", run.name)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"run       {run.id}" in out and "status    finished" in out
    assert "project   fft" in out and "tags      t1" in out
    assert "  lr = 0.1" in out and "  opt.name = adam" in out
    assert "records   9  (last step 20, 1 writer)" in out
    assert "Metrics" in out and "FFT loss curves" in out


def test_show_json(cli, run):
    doc = strict_json(cli("show", run.id, "--format", "json").stdout)
    info = doc["info"]
    assert info["id"] == run.id and info["name"] == "a" and info["status"] == "finished"
    assert info["config"] == {"lr": 0.1, "opt": {"name": "adam"}} and info["tags"] == ["t1"]
    assert info["records"] == 9 and info["last_step"] == 20
    assert info["last_metrics"]["grad"] == "Infinity" and info["last_metrics"]["loss"] == 0.125
    assert _summary(doc, "metrics.scalars")["rows"][0]["metric"] == "loss"


def test_show_csv_long_form(cli, run):
    rows = list(csv.DictReader(io.StringIO(cli("show", run.id, "--format", "csv").stdout)))
    assert list(rows[0]) == ["section", "row", "column", "value"]
    cells = {(r["section"], r["row"], r["column"]): r["value"] for r in rows}
    assert cells[("info", "0", "status")] == "finished"
    assert cells[("config", "0", "opt.name")] == "adam"
    assert cells[("metrics.scalars", "0", "metric")] == "loss"
    assert float(cells[("metrics.scalars", "0", "last")]) == 0.125


def test_show_failed_run_has_its_error(cli, store):
    with pytest.raises(ZeroDivisionError), tracker.start_run(name="boom") as r:
        r.log({"loss": 1.0})
        1 / 0  # noqa: B018 - the failure under test
    out = cli("show", r.id).stdout
    assert "status    failed" in out
    assert "error     ZeroDivisionError: division by zero" in out
    assert "1 / 0" in out  # the end of the traceback
    info = strict_json(cli("show", r.id, "--format", "json").stdout)["info"]
    assert info["error"]["type"] == "ZeroDivisionError"
