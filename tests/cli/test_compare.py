"""``tracker compare``: summaries side by side, best values marked, runs lacking schemas."""

from __future__ import annotations

import csv
import io
import json

import pytest

import tracker
from tracker.read.compare import best_of, better


@pytest.fixture
def pair(store):
    with tracker.start_run(name="base", config={"lr": 0.1, "depth": 2}) as a:
        for s, (loss, acc) in enumerate(((1.0, 0.5), (0.6, 0.7), (0.5, 0.8))):
            a.log({"loss": loss, "acc": acc}, step=s)
        a.log_record("fft.loss_point", step=0, model_id="m", total_loss=0.9, mel_err=0.5, spec_err=0.2,
                     welch_err=0.1, mean_gate=0.5)
    with tracker.start_run(name="tuned", config={"lr": 0.3}) as b:
        for s, (loss, acc) in enumerate(((0.9, 0.6), (0.4, 0.9), (0.3, 0.85))):
            b.log({"loss": loss, "acc": acc}, step=s)
    return a, b


def _section(doc: dict, summarizer: str) -> dict:
    return next(s for s in doc["sections"] if (s["summarizer"] or s["title"]) == summarizer)


def _row(section: dict, field: str, **labels) -> dict:
    return next(r for r in section["rows"] if r["field"] == field and r["labels"] == labels)


def test_json_side_by_side(cli, pair):
    a, b = pair
    result = cli("compare", a.id, b.name, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["id"] for r in doc["runs"]] == [a.id, b.id]
    scalars = _section(doc, "metrics.scalars")
    assert scalars["labels"] == ["metric"]
    last_loss = _row(scalars, "last", metric="loss")
    assert last_loss["values"] == [0.5, 0.3] and last_loss["better"] == "min" and last_loss["best"] == [1]
    max_acc = _row(scalars, "max", metric="acc")
    assert max_acc["values"] == [0.8, 0.9] and max_acc["better"] == "max" and max_acc["best"] == [1]
    assert _row(scalars, "count", metric="loss")["best"] == []  # counts are not better or worse
    config = _section(doc, "Config")
    assert _row(config, "lr")["values"] == [0.1, 0.3]
    assert _row(config, "depth")["values"] == [2, None]
    # Only the first run has fft.loss_point records: the other's column is empty.
    curves = _section(doc, "fft.loss_curves")
    assert _row(curves, "best", model_id="m")["values"] == [0.9, None]
    assert _row(_section(doc, "Run"), "records")["values"] == [4, 3]


def test_table_marks_the_best_value(cli, pair):
    a, b = pair
    result = cli("compare", a.id, b.id)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"{a.id[:8]} base" in result.stdout and f"{b.id[:8]} tuned" in result.stdout
    loss_rows = lines[lines.index(next(line for line in lines if line.startswith("loss "))):]
    last = next(line for line in loss_rows if line.split()[0] == "last")
    assert last.split()[1:] == ["0.5", "0.3*"]
    curves = lines[next(i for i, line in enumerate(lines) if line.startswith("FFT loss curves")):]
    assert curves[3].split()[:2] == ["m", "points"]  # the label is shown once per group of rows
    best = next(line for line in curves if line.split()[0] == "best")
    assert best.split()[1:] == ["0.9", "-"]
    assert lines[-1] == "* best value of the row"


def test_csv_one_column_per_run(cli, pair):
    a, b = pair
    rows = list(csv.DictReader(io.StringIO(cli("compare", a.id, b.id, "--format", "csv").stdout)))
    assert list(rows[0]) == ["section", "row", "field", a.id, b.id]
    last = next(r for r in rows if r["section"] == "metrics.scalars" and r["row"] == "loss" and r["field"] == "last")
    assert (float(last[a.id]), float(last[b.id])) == (0.5, 0.3)


def test_needs_two_runs(cli, pair):
    result = cli("compare", pair[0].id)
    assert result.exit_code == 2 and "at least two runs" in result.stderr


@pytest.mark.parametrize(("field", "labels", "expected"), [
    ("mean", ["loss"], "min"),
    ("last", ["val/accuracy"], "max"),
    ("min", ["lr"], None),
    ("count", ["loss"], None),
    ("first", ["loss"], None),
    ("min_step", ["loss"], None),
    ("max_abs_err", [], "min"),
    ("sqnr_db", [], "max"),
    ("best", ["m1"], None),
])
def test_direction_from_names(field, labels, expected):
    assert better(field, labels) == expected


def test_direction_from_the_summary_title():
    assert better("best", ["m1"], ("FFT loss curves",)) == "min"


def test_best_of():
    assert best_of([0.5, 0.3, 0.3], "min") == [1, 2]
    assert best_of([0.5, float("nan"), None], "max") == []  # one comparable value: nothing to mark
    assert best_of([1.0, 1.0], "max") == []  # all equal
    assert best_of([1.0, float("inf")], "max") == [1]
    assert best_of([1.0, 2.0], None) == []


def test_numpy_values_and_rows_matched_by_labels():
    import numpy as np

    from tracker.read.compare import compare_summaries

    a = tracker.Summary("Layers", [{"layer": "fc1", "bits": 8, "mse": np.float64(0.5)},
                                   {"layer": "fc2", "bits": 8, "mse": np.float64(0.1)}])
    b = tracker.Summary("Layers", [{"layer": "fc2", "bits": 8, "mse": np.float64(0.2)},
                                   {"layer": "fc1", "bits": np.int64(4), "mse": np.float64(0.4)}])
    section = compare_summaries("Layers", "x.layers", "x.layer", [a, b, None])
    assert section["labels"] == ["layer"]
    fc1 = _row(section, "mse", layer="fc1")
    assert fc1["values"] == [0.5, 0.4, None] and fc1["best"] == [1] and type(fc1["values"][1]) is float
    assert _row(section, "mse", layer="fc2")["best"] == [0]
    assert _row(section, "bits", layer="fc1")["values"] == [8, 4, None]
