"""The core commands: flat verbs on the reading API."""

from __future__ import annotations

import datetime as _dt
import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from ..errors import TrackerError
from . import CliContext
from .render import csv_text, dumps, format_option, table_text

KEY_METRICS = 3


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn tracker errors into one line on stderr and exit status 1, no traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TrackerError as exc:
            click.echo(f"tracker: {exc}", err=True)
            sys.exit(1)
        except BrokenPipeError:
            sys.exit(0)

    return wrapper


def when(ts: float | None) -> str:
    """A timestamp as local date and time."""
    if ts is None:
        return "-"
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float | None) -> str:
    """Seconds as ``1h02m``, ``3m05s`` or ``4.2s``."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def emit(fmt: str, doc: Any, columns: list[str], rows: list[dict[str, Any]]) -> None:
    """Print ``doc`` as JSON, or ``rows`` as a table or CSV."""
    if fmt == "json":
        click.echo(dumps(doc))
    elif fmt == "csv":
        click.echo(csv_text(columns, rows), nl=False)
    else:
        click.echo(table_text(columns, rows) if rows else "(none)")


def add_core_commands(cli: click.Group) -> None:
    """Add the commands of DESIGN.md to ``cli``."""

    @cli.command("runs")
    @click.option("--project", help="Only runs of this project.")
    @click.option("--status", type=click.Choice(["running", "finished", "failed", "crashed"]),
                  help="Only runs with this status.")
    @click.option("--tag", help="Only runs with this tag.")
    @format_option()
    @click.pass_obj
    @handle_errors
    def runs_cmd(obj: CliContext, project: str | None, status: str | None, tag: str | None, fmt: str) -> None:
        """List runs, newest first.

        \b
        Example:
          tracker runs --project fft --status finished
        """
        infos = obj.store.runs(project=project, status=status, tag=tag)
        keys: list[str] = []
        for info in infos:
            for k in info.last_metrics:
                if k not in keys:
                    keys.append(k)
        keys = keys[:KEY_METRICS]
        rows = []
        for info in infos:
            row = {"id": info.id[:8] if fmt == "table" else info.id, "name": info.name,
                   "project": info.project, "status": info.status,
                   "start": when(info.created_at) if fmt == "table" else info.created_at,
                   "duration": duration(info.duration) if fmt == "table" else info.duration,
                   "steps": None if info.last_step is None else info.last_step + 1, "records": info.records}
            row.update({k: info.last_metrics.get(k) for k in keys})
            rows.append(row)
        columns = ["id", "name", "project", "status", "start", "duration", "steps", "records", *keys]
        emit(fmt, [i.to_dict() for i in infos], columns, rows)

    @cli.command("summary")
    @click.argument("run")
    @click.option("--schema", help="Only the summaries of this schema.")
    @format_option()
    @click.pass_obj
    @handle_errors
    def summary_cmd(obj: CliContext, run: str, schema: str | None, fmt: str) -> None:
        """Print the summaries of a run.

        \b
        Example:
          tracker summary 3f2a --schema metrics --format csv
        """
        view = obj.store.run(run)
        if schema is not None:
            obj.host.schema(schema)
        summaries = view.summarize(schema)
        print_summaries(fmt, summaries, {"run": view.id})

    @cli.command("show")
    @click.argument("run")
    @format_option()
    @click.pass_obj
    @handle_errors
    def show_cmd(obj: CliContext, run: str, fmt: str) -> None:
        """Show a run: info, config, tags, error, and every summary.

        \b
        Example:
          tracker show 3f2a
        """
        view = obj.store.run(run)
        info = view.info
        summaries = view.summarize()
        if fmt == "json":
            click.echo(dumps({"info": info.to_dict(), "summaries": [s.to_dict() for s in summaries]}))
            return
        if fmt == "csv":
            print_summaries("csv", summaries, {"run": view.id})
            return
        lines = [f"run       {info.id}", f"name      {info.name or '-'}", f"project   {info.project or '-'}",
                 f"status    {info.status}", f"started   {when(info.created_at)}",
                 f"duration  {duration(info.duration)}", f"records   {info.records}",
                 f"tags      {', '.join(info.tags) or '-'}"]
        if info.env.get("git_commit"):
            lines.append(f"commit    {info.env['git_commit']}")
        if info.config:
            lines.append("config")
            lines += [f"  {k} = {v}" for k, v in _flatten(info.config)]
        if info.error:
            lines.append(f"error     {info.error.get('type')}: {info.error.get('message')}")
        click.echo("\n".join(lines))
        click.echo()
        print_summaries("table", summaries, {"run": view.id})

    @cli.command("plugins")
    @format_option()
    @click.pass_obj
    @handle_errors
    def plugins_cmd(obj: CliContext, fmt: str) -> None:
        """List plugins: distribution, version, schemas, summarizers, broken ones.

        \b
        Example:
          tracker plugins --format json
        """
        infos = obj.host.plugins()
        rows = [{"name": p.name + (" (built-in)" if p.builtin and fmt == "table" else ""),
                 "distribution": p.distribution, "version": p.version, "status": p.status,
                 "schemas": ", ".join(p.schemas), "summarizers": ", ".join(p.summarizers),
                 "error": p.error} for p in infos]
        emit(fmt, [p.to_dict() for p in infos], ["name", "distribution", "version", "status", "schemas",
                                                 "summarizers", "error"], rows)


def print_summaries(fmt: str, summaries: list[Any], meta: dict[str, Any]) -> None:
    """Print summaries one after another (tables), as one JSON document, or as CSV blocks."""
    if fmt == "json":
        click.echo(dumps({**meta, "summaries": [s.to_dict() for s in summaries]}))
        return
    if not summaries:
        click.echo("(no summaries: the run has no records with a summarizer)", err=fmt == "csv")
        return
    for i, s in enumerate(summaries):
        if i:
            click.echo()
        if fmt == "csv":
            click.echo(f"# {s.title}")
            click.echo(csv_text(s.column_names(), s.rows), nl=False)
            continue
        click.echo(click.style(s.title, bold=True) if sys.stdout.isatty() else s.title)
        click.echo(table_text(s.column_names(), s.rows) if s.rows else "(no rows)")
        for note in s.notes:
            click.echo(f"  {note}")


def _flatten(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out += _flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out
