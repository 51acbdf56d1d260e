"""``tracker compare``: summaries of several runs side by side, one column per run, the best value per row.

Each summary's rows are matched across runs by their label columns (the
columns holding text, e.g. ``metric`` or ``model_id``, extended with the
leading int columns until every row of a run has its own key); every other
column becomes one comparison row per label. Whether lower or higher is better
is guessed from the names of the field, then of the row's labels, then of the
summary (``loss``, ``err`` and ``latency`` lower; ``acc``, ``f1`` and ``sqnr``
higher); rows with no clear direction, such as counts, steps and first values,
get no mark.
"""

from __future__ import annotations

from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, format_option, handle_errors
from tracker.cli.render import csv_text, dumps, table_text
from tracker.cli.terminal import style, use_color
from tracker.core.text import duration, when
from tracker.read.compare import best_of, better, compare_runs, compare_summaries  # noqa: F401 - their old home


def _run_header(obj: CliContext, info: Any) -> str:
    return obj.short(info.id) + (f" {info.name}" if info.name else "")


@click.command("compare")
@click.argument("runs", nargs=-1, required=True)
@format_option()
@click.pass_obj
@handle_errors
def compare_cmd(obj: CliContext, runs: tuple[str, ...], fmt: str) -> None:
    """Compare runs: their info, config and summaries side by side, one column per run.

    In the table, "*" marks the best value of a row where lower or higher is
    clearly better (loss, error, latency: lower; accuracy, f1, sqnr: higher). A
    run that lacks a schema shows "-" in that summary.

    \b
    Examples:
      tracker compare 3f2a 9c1e
      tracker compare baseline tuned --format json
    """
    if len(runs) < 2:
        raise click.UsageError("compare needs at least two runs")
    views = [obj.store.run(r) for r in runs]
    first: dict[str, str] = {}
    for given, view in zip(runs, views, strict=True):
        if view.id in first:
            same = f"{first[view.id]!r} and {given!r} are" if first[view.id] != given else f"{given!r} is given twice:"
            fail(f"{same} the same run {view.id}; compare needs different runs", 2)
        first[view.id] = given
    doc = compare_runs(views)
    if fmt == "json":
        click.echo(dumps(doc))
        return
    ids = [r["id"] for r in doc["runs"]]
    if fmt == "csv":
        rows = []
        for sec in doc["sections"]:
            for r in sec["rows"]:
                row = {"section": sec["summarizer"] or sec["title"],
                       "row": " / ".join("" if v is None else str(v) for v in r["labels"].values()),
                       "field": r["field"]}
                row.update(dict(zip(ids, r["values"], strict=True)))
                rows.append(row)
        click.echo(csv_text(["section", "row", "field", *ids], rows), nl=False)
        return
    headers = {f"run{i}": _run_header(obj, v.info) for i, v in enumerate(views)}
    color = use_color()
    for n, sec in enumerate(doc["sections"]):
        if n:
            click.echo()
        title = style(sec["title"], bold=True)
        if sec["summarizer"]:
            title += style(f"  ({sec['summarizer']})", dim=True)
        click.echo(title)
        labels = sec["labels"]
        columns = [*labels, "field", *headers]
        rows, marks = [], set()
        previous: tuple[Any, ...] | None = None
        for i, r in enumerate(sec["rows"]):
            shown = tuple(r["labels"].values())
            row = {c: (v if shown != previous else "") for c, v in r["labels"].items()}
            previous = shown
            row["field"] = r["field"]
            shown_values = r["values"]
            if r.get("unit") == "time":
                shown_values = [when(v) for v in shown_values]
            elif r.get("unit") == "seconds":
                shown_values = [duration(v) for v in shown_values]
            row.update({f"run{j}": v for j, v in enumerate(shown_values)})
            rows.append(row)
            marks.update((i, f"run{j}") for j in r["best"])
        click.echo(table_text(columns, rows, headers=headers, marks=marks, color=color) if rows else "(no rows)")
        for note in sec["notes"]:
            click.echo(f"  {note}")
    if any(r["best"] for sec in doc["sections"] for r in sec["rows"]):
        click.echo()
        click.echo(style("* best value of the row", dim=True))
