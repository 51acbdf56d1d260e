"""``tracker runs``: list the runs of a store, newest first."""

from __future__ import annotations

from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import csv_text, dumps, encode_nonfinite_deep, table_text
from tracker.cli.terminal import STATUS_COLORS, is_terminal, use_color
from tracker.cli.warmup import warm_with_progress
from tracker.core.text import duration, human_bytes, human_cell, run_duration, when
from tracker.read.compare import key_metrics  # noqa: F401 - where the dashboard looked for it until 0.4

#: ``tracker runs --system``: column name and key of ``RunInfo.system`` (see tracker.capture.system).
SYSTEM_COLUMNS = [("cpu% mean", "cpu_percent_mean"), ("cpu% peak", "cpu_percent_peak"),
                  ("rss peak", "process_rss_peak_bytes"), ("gpu% mean", "gpu_utilization_mean"),
                  ("gpu mem peak", "gpu_memory_peak_bytes"), ("energy kWh", "gpu_energy_kwh")]
#: How many metrics the table shows when ``--metric`` is not given.
KEY_METRICS = 3
STATUSES = ("running", "finished", "failed", "crashed", "stopped")
#: A table on a terminal shows this many runs (the newest) unless --all or -n says otherwise.
TERMINAL_ROWS = 50


def column_value(info: Any, spec: str) -> Any:
    """The value of one ``--columns`` entry for a run.

    ``summary.KEY`` and ``config.KEY`` (dotted into nested dicts), ``tags``,
    ``notes``, ``metric.NAME``; anything else is the last value of that metric.
    """
    if spec == "tags":
        return ", ".join(info.tags)
    if spec == "notes":
        return info.notes
    head, _, rest = spec.partition(".")
    if head in ("summary", "config") and rest:
        value: Any = getattr(info, head)
        for part in rest.split("."):
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value
    if head == "metric" and rest:
        return info.last_metrics.get(rest)
    return info.last_metrics.get(spec)


@click.command("runs")
@click.option("--project", metavar="P", help="Only runs of this project.")
@click.option("--status", type=click.Choice(STATUSES), help="Only runs with this status.")
@click.option("--tag", "tags", metavar="T", multiple=True, help="Only runs with this tag (repeat: all of them).")
@click.option("--group", "group", metavar="G", help="Only runs of this group.")
@click.option("--job-type", "job_type", metavar="T", help="Only runs of this job type.")
@click.option("--group-by", "group_by", metavar="KEY",
              help="One row per group: group, job_type, project, tag or config.KEY; n runs and the mean ± std "
                   "of each metric's last value.")
@click.option("-m", "--metric", "metrics", metavar="NAME", multiple=True,
              help="Show the last value of this metric (repeatable; default: the most common ones).")
@click.option("-c", "--columns", "columns_opt", metavar="COLS", multiple=True,
              help="Extra columns, comma-separated: summary.KEY, config.KEY, tags, notes, or a metric name.")
@click.option("-n", "--limit", type=click.IntRange(min=1),
              help=f"Show at most this many runs (a table on a terminal: {TERMINAL_ROWS} unless --all).")
@click.option("--all", "show_all", is_flag=True, help="Show every run, also in a table on a terminal.")
@click.option("--system", "system", is_flag=True,
              help="Show system figures: mean and peak CPU, peak process memory, GPU utilization, memory, energy.")
@click.option("--trash", is_flag=True, help="List the runs in the trash instead (tracker rm, tracker restore).")
@format_option()
@click.pass_obj
@handle_errors
def runs_cmd(obj: CliContext, project: str | None, status: str | None, tags: tuple[str, ...],
             metrics: tuple[str, ...], columns_opt: tuple[str, ...], limit: int | None, trash: bool,
             fmt: str, system: bool = False, show_all: bool = False, group: str | None = None,
             job_type: str | None = None, group_by: str | None = None) -> None:
    """List runs, newest first: id, name, project, status, start, duration, last step, records, key metrics.

    Reads only the first line and the last few KiB of each run's segments, so
    it stays fast on a store of thousands of long runs. "step" is the
    largest step logged; the metrics are their last logged values. A table on
    a terminal shows the newest 50 runs and says how many more there are;
    piped, or as JSON or CSV, every run.

    \b
    Examples:
      tracker runs --project fft --status finished
      tracker runs --tag baseline -m loss -m accuracy
      tracker runs --columns summary.best_acc,config.lr
      tracker runs --trash
      tracker runs --system
      tracker runs --group-by config.lr -m loss -m acc
      tracker runs --format json
    """
    from tracker.read.index import gc_paused

    # Thousands of runs and no cycles: the collector's passes over them are time lost (see gc_paused).
    with gc_paused():
        _list_runs(obj, project, status, tags, metrics, columns_opt, limit, trash, fmt, system, show_all,
                   (group, job_type, group_by))


def _list_runs(obj: CliContext, project: str | None, status: str | None, tags: tuple[str, ...],
               metrics: tuple[str, ...], columns_opt: tuple[str, ...], limit: int | None, trash: bool,
               fmt: str, system: bool, show_all: bool, groups: tuple[str | None, ...] = (None, None, None)) -> None:
    group, job_type, group_by = groups
    extra = [c.strip() for spec in columns_opt for c in spec.split(",") if c.strip()]
    store = obj.store
    if trash:
        from tracker.core.text import short_ids
        from tracker.lifecycle import trash_store

        store = trash_store(store)
        short = short_ids(store.run_ids())
    if limit is None and not show_all and fmt == "table" and is_terminal():
        limit = TERMINAL_ROWS
    if limit is not None and group_by is None and not trash:
        # A page: the store answers it (a folder from its catalog, PostgreSQL in SQL), costing the rows shown.
        _list_page(obj, store, (project, status, list(tags), group, job_type), limit, extra, metrics, fmt, system)
        return
    if not trash:
        short = obj.short_ids()
        # A store never read before: the runs' derived columns built with a progress line on a terminal.
        warm_with_progress(store)
    # A local store's catalog also says which infos hold NaN or infinities (a team store's listing does not).
    catalog = getattr(store, "catalog", None)
    tag = tags[0] if tags else None
    # (info, whether it holds no NaN or infinity) per run.
    listed = [(e.info, e.finite) for e in catalog(project=project, status=status, tag=tag)] \
        if catalog is not None else [(i, False) for i in store.runs(project=project, status=status, tag=tag)]
    if len(tags) > 1:
        listed = [(i, f) for i, f in listed if all(t in i.tags for t in tags)]
    if group is not None or job_type is not None:
        listed = [(i, f) for i, f in listed if (group is None or i.group == group)
                  and (job_type is None or i.job_type == job_type)]
    if group_by is not None:
        _list_groups(obj, [i for i, _ in listed], group_by, metrics, fmt)
        return
    total = len(listed)
    if limit is not None:
        listed = listed[:limit]
    _print_runs(obj, listed, total, short, extra, metrics, fmt, system, trash, bool(project or status or tags))


def _list_page(obj: CliContext, store: Any, filters: tuple[Any, ...], limit: int, extra: list[str],
               metrics: tuple[str, ...], fmt: str, system: bool) -> None:
    """The newest ``limit`` runs the filters keep, asked of the store as one page."""
    from tracker.core.text import short_ids_of
    from tracker.read.index.catalog import catalog_file

    project, status, tags, group, job_type = filters
    # A store never read before: its derived data built with a progress bar on a terminal (a read one: no scan).
    if hasattr(store, "runs_dir") and not catalog_file(store.path).exists():
        warm_with_progress(store)
    page = store.runs(project=project, status=status, tag=tags or None, group=group, job_type=job_type, limit=limit)
    short = short_ids_of(page.run_ids or store.run_ids(), [i.id for i in page])
    _print_runs(obj, [(i, False) for i in page], page.total, short, extra, metrics, fmt, system, False,
                bool(project or status or tags))


def _print_runs(obj: CliContext, listed: list[tuple[Any, bool]], total: int, short: dict[str, str], extra: list[str],
                metrics: tuple[str, ...], fmt: str, system: bool, trash: bool, filtered: bool) -> None:
    """The runs as a table, JSON or CSV; a table says how many more runs there are."""
    infos = [i for i, _ in listed]
    if fmt == "json":
        docs = []
        for info, plain in listed:
            doc = info.to_dict(copy=False)
            doc["short_id"] = short.get(info.id, info.id)
            doc["duration"] = run_duration(info)
            doc.update({c: column_value(info, c) for c in extra})
            docs.append(doc if plain else encode_nonfinite_deep(doc))
        click.echo(dumps(docs, encoded=True))
        return
    keys = list(metrics) or key_metrics(infos)
    sys_cols = [(c, k) for c, k in SYSTEM_COLUMNS if any(k in i.system for i in infos)] if system else []
    rows = []
    for info in infos:
        row = {"id": short.get(info.id, info.id) if fmt == "table" else info.id, "name": info.name,
               "project": info.project, "group": info.group, "status": info.status,
               "start": when(info.created_at) if fmt == "table" else info.created_at,
               "duration": run_duration(info), "step": info.last_step, "records": info.records}
        row.update({k: info.last_metrics.get(k) for k in keys})
        row.update({c: info.system.get(k) for c, k in sys_cols})
        row.update({c: column_value(info, c) for c in extra})
        if fmt == "csv":
            row["tags"] = ";".join(info.tags)
        rows.append(row)
    keys = [k for k in keys if k not in extra]
    grouped = ["group"] if any(i.group is not None for i in infos) or fmt == "csv" else []
    columns = ["id", "name", "project", *grouped, "status", "start", "duration", "step", "records", *keys,
               *(c for c, _ in sys_cols), *extra]
    if fmt == "csv":
        click.echo(csv_text([*columns, "tags"], rows), nl=False)
        return
    if not rows:
        where = f"the trash of {obj.store.path}" if trash else str(obj.store.path)
        hint = None if trash else getattr(obj.store, "empty_hint", None)  # a team database no run reached yet
        click.echo(f"no runs in {where}" + (" match" if filtered else "")
                   + (f" yet: {hint}" if hint else ""), err=True)
        return
    for row in rows:
        row["duration"] = duration(row["duration"])
        row.update({c: human_cell(c.rsplit(".", 1)[-1], row[c]) for c in extra})
        for c, k in sys_cols:
            if k.endswith("_bytes") and row[c] is not None:
                row[c] = human_bytes(row[c])
    click.echo(table_text(columns, rows, color=use_color(),
                          styles=lambda i, c, v: {"fg": STATUS_COLORS.get(v)} if c == "status" else None))
    if total > len(rows):
        more = total - len(rows)
        click.echo(f"... {more} more run{'s' if more != 1 else ''} ({len(rows)} of {total} shown, newest first): "
                   "tracker runs --all shows every one, -n N the newest N")


def _list_groups(obj: CliContext, infos: list[Any], by: str, metrics: tuple[str, ...], fmt: str) -> None:
    """``tracker runs --group-by``: one row per group, n runs and each metric's mean ± std (of last values)."""
    from tracker.cli.render import cell
    from tracker.read.aggregate import NO_GROUP, group_table

    if not infos:
        click.echo(f"no runs in {obj.store.path} match", err=True)
        return
    keys = list(metrics) or key_metrics(infos)
    rows = group_table(infos, by, keys)
    if fmt == "json":
        click.echo(dumps([{"by": by, **row} for row in rows]))
        return
    if fmt == "csv":
        flat = []
        for row in rows:
            out = {"group": row["group"], "n": row["n"]}
            for m, f in row["metrics"].items():
                out.update({f"{m}.mean": f["mean"], f"{m}.std": f["std"], f"{m}.n": f["n"]})
            flat.append(out)
        columns = ["group", "n", *(f"{m}.{f}" for m in keys for f in ("mean", "std", "n"))]
        click.echo(csv_text(columns, flat), nl=False)
        return
    table = []
    for row in rows:
        out = {by: NO_GROUP if row["group"] is None else cell(row["group"]), "n": row["n"]}
        for m, f in row["metrics"].items():
            out[m] = "-" if f["mean"] is None else f"{cell(f['mean'])} ± {cell(f['std'])}" + \
                ("" if f["n"] == row["n"] else f" ({f['n']})")
        table.append(out)
    click.echo(table_text([by, "n", *keys], table, color=use_color()))
    click.echo(f"{len(infos)} runs in {len(rows)} groups; each metric: mean ± std of the runs' last values "
               "(in brackets: how many runs have one, where not all)", err=True)
