"""``tracker show``, ``tracker summary`` and ``tracker compare``: a run's info and its summaries."""

from __future__ import annotations

from typing import Any

import click

from . import CliContext
from .compare import compare_runs
from .options import (
    duration,
    flatten,
    format_option,
    handle_errors,
    require_schema,
    run_duration,
    schema_option,
    status_text,
    style,
    use_color,
    when,
)
from .render import csv_text, dumps, table_text

#: How many of the last lines of a failed run's traceback ``show`` prints.
TRACEBACK_LINES = 6


def summaries_csv(summaries: list[Any]) -> str:
    """Every summary in one CSV: a ``summary`` column, then the union of their columns."""
    columns: dict[str, None] = {"summary": None}
    rows = []
    for s in summaries:
        for c in s.column_names():
            columns.setdefault(c, None)
        rows += [{"summary": s.summarizer or s.title, **r} for r in s.rows]
    return csv_text(list(columns), rows)


def print_summaries(fmt: str, summaries: list[Any], meta: dict[str, Any]) -> None:
    """Print summaries as aligned tables one after another, as one JSON document, or as one CSV."""
    if fmt == "json":
        click.echo(dumps({**meta, "summaries": [s.to_dict() for s in summaries]}))
        return
    if fmt == "csv":
        if summaries:
            click.echo(summaries_csv(summaries), nl=False)
        else:
            click.echo("tracker: no summaries: the run has no records with a summarizer", err=True)
        return
    if not summaries:
        click.echo("(no summaries: the run has no records with a summarizer)")
        return
    color = use_color()
    for i, s in enumerate(summaries):
        if i:
            click.echo()
        click.echo(style(s.title, bold=True) + style(f"  ({s.summarizer})", dim=True) if s.summarizer
                   else style(s.title, bold=True))
        click.echo(table_text(s.column_names(), s.rows, color=color) if s.rows else "(no rows)")
        for note in s.notes:
            click.echo(f"  {note}")


@click.command("summary")
@click.argument("run")
@schema_option("Only the summaries of this schema.")
@format_option()
@click.pass_obj
@handle_errors
def summary_cmd(obj: CliContext, run: str, schema: str | None, fmt: str) -> None:
    """Print the summaries of a run (every schema it holds, or one).

    RUN is an id, a unique prefix of one, or a run name.

    \b
    Examples:
      tracker summary 3f2a
      tracker summary 3f2a --schema metrics --format csv
    """
    view = obj.store.run(run)
    if schema is not None:
        require_schema(obj.host, schema)
    print_summaries(fmt, view.summarize(schema), {"run": view.id, "name": view.info.name})


def _info_lines(obj: CliContext, info: Any) -> list[str]:
    def line(key: str, value: Any) -> str:
        return f"{style(key.ljust(9), dim=True)} {value}"

    lines = [line("run", f"{info.id}  ({obj.short(info.id)})"), line("name", info.name or "-"),
             line("project", info.project or "-"), line("status", status_text(info.status)),
             line("started", when(info.created_at)), line("ended", when(info.ended_at)
                                                           if info.status != "running" else "-"),
             line("duration", duration(run_duration(info))),
             line("records", f"{info.records}  (last step {'-' if info.last_step is None else info.last_step}, "
                             f"{info.writers} writer{'s' if info.writers != 1 else ''})"),
             line("tags", ", ".join(info.tags) or "-")]
    env = info.env or {}
    if env.get("host") or env.get("git_commit"):
        lines.append(line("host", env.get("host") or "-") + (f"  commit {env['git_commit'][:12]}"
                                                             if env.get("git_commit") else ""))
    if env.get("argv"):
        lines.append(line("command", " ".join(str(a) for a in env["argv"])))
    if info.error:
        lines.append(line("error", style(f"{info.error.get('type')}: {info.error.get('message')}", fg="red")))
        trace = str(info.error.get("traceback") or "").rstrip().splitlines()
        lines += [f"  {t}" for t in trace[-TRACEBACK_LINES:]]
    if info.config:
        lines.append(style("config", dim=True))
        lines += [f"  {k} = {v}" for k, v in flatten(info.config)]
    return lines


def _show_csv(info: Any, summaries: list[Any]) -> str:
    rows: list[dict[str, Any]] = []
    for k, v in info.to_dict().items():
        if k not in ("config", "env", "last_metrics"):
            rows.append({"section": "info", "row": 0, "column": k, "value": v})
    rows += [{"section": "config", "row": 0, "column": k, "value": v} for k, v in flatten(info.config)]
    for s in summaries:
        for i, r in enumerate(s.rows):
            rows += [{"section": s.summarizer or s.title, "row": i, "column": k, "value": v} for k, v in r.items()]
    return csv_text(["section", "row", "column", "value"], rows)


@click.command("show")
@click.argument("run")
@format_option()
@click.pass_obj
@handle_errors
def show_cmd(obj: CliContext, run: str, fmt: str) -> None:
    """Show a run: info, config, tags, the error of a failed run, and every summary.

    --format csv gives one long table: section, row, column, value.

    \b
    Examples:
      tracker show 3f2a
      tracker show 3f2a --format json | jq .summaries
    """
    view = obj.store.run(run)
    info = view.info
    summaries = view.summarize()
    if fmt == "json":
        doc = info.to_dict()
        doc["short_id"] = obj.short(info.id)
        doc["duration"] = run_duration(info)
        click.echo(dumps({"info": doc, "summaries": [s.to_dict() for s in summaries]}))
        return
    if fmt == "csv":
        click.echo(_show_csv(info, summaries), nl=False)
        return
    click.echo("\n".join(_info_lines(obj, info)))
    click.echo()
    print_summaries("table", summaries, {"run": view.id})


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
