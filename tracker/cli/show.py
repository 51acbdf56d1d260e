"""``tracker show``: a run's info, config, error and every summary."""

from __future__ import annotations

from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import cell, csv_text, dumps
from tracker.cli.summary import print_summaries
from tracker.cli.terminal import status_text, style
from tracker.cli.warmup import warm_with_progress
from tracker.core.text import duration, flatten, human_cell, run_duration, when

#: How many of the last lines of a failed run's traceback ``show`` prints.
TRACEBACK_LINES = 6


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
    if info.group is not None or info.job_type is not None:
        lines.append(line("group", (info.group or "-") + (f"  job type {info.job_type}" if info.job_type else "")))
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
    if info.notes:
        lines.append(style("notes", dim=True))
        lines += [f"  {t}" for t in info.notes.splitlines()]
    if info.config:
        lines.append(style("config", dim=True))
        lines += [f"  {k} = {cell(human_cell(k.rsplit('.', 1)[-1], v))}" for k, v in flatten(info.config)]
    if info.summary:
        lines.append(style("summary", dim=True))
        lines += [f"  {k} = {cell(human_cell(k.rsplit('.', 1)[-1], v))}" for k, v in flatten(info.summary)]
    return lines


def _show_csv(info: Any, summaries: list[Any]) -> str:
    rows: list[dict[str, Any]] = []
    for k, v in info.to_dict().items():
        if k not in ("config", "env", "last_metrics", "summary"):
            rows.append({"section": "info", "row": 0, "column": k, "value": v})
    rows += [{"section": "config", "row": 0, "column": k, "value": v} for k, v in flatten(info.config)]
    rows += [{"section": "summary", "row": 0, "column": k, "value": v} for k, v in flatten(info.summary)]
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
    """Show a run: info, tags, notes, config, summary values, the error of a failed run, every summary.

    --format csv gives one long table: section, row, column, value.

    \b
    Examples:
      tracker show 3f2a
      tracker show 3f2a --format json | jq .summaries
    """
    view = obj.store.run(run)
    info = view.info
    # A run never read before: its derived columns built with a progress line on a terminal (issue 35).
    warm_with_progress(obj.store, [view.id], label=f"reading run {obj.short(view.id)} for the first time")
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
