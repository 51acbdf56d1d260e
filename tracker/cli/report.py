"""``tracker report``: one self-contained HTML file of chosen runs (or groups), to send to anyone."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import handle_errors
from tracker.core.errors import TrackerError


@click.command("report")
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@click.option("--group-by", "group_by", metavar="KEY",
              help="Group the runs: group, job_type, project, tag or config.KEY (a table of groups; one line and "
                   "band per group on each chart).")
@click.option("--sweep", "sweep", metavar="ID", help="The runs of this sweep (its trials).")
@click.option("--project", metavar="P", help="Only runs of this project.")
@click.option("-m", "--metric", "metrics", metavar="NAME", multiple=True,
              help="Chart and table this metric (repeatable; default: the metrics most runs logged).")
@click.option("--title", metavar="T", help="The report's title (default: how many runs, or the run's name).")
@click.option("--notes", "notes", metavar="FILE.md",
              help="Markdown shown under the title (HTML in it is shown as text).")
@click.option("--no-environment", "no_environment", is_flag=True,
              help="Leave out each run's recorded command, working directory, host and git commit.")
@click.option("--max-media-bytes", "max_media_bytes", metavar="BYTES", default="4MiB", show_default=True,
              help="Audio, video, 3D and HTML carried inline up to this many bytes (4194304, 4MiB, 512KiB, 0); "
                   "beyond, a video's first frame and a note.")
@click.option("-o", "--output", "output", metavar="FILE.html", required=True, help="Where to write the report.")
@click.pass_obj
@handle_errors
def report_cmd(obj: CliContext, runs: tuple[str, ...], group_by: str | None, sweep: str | None, project: str | None,
               metrics: tuple[str, ...], title: str | None, notes: str | None, no_environment: bool,
               max_media_bytes: str, output: str) -> None:
    """Write one HTML file of runs: notes, runs or groups, zoomable charts, config that differs, summaries.

    The file holds everything it shows (data, scripts, styles, the chart
    library) and makes no request: it opens from disk, offline, in any
    browser. Charts are downsampled keeping each bucket's min and max, so
    long runs stay small; audio, video, 3D and HTML go in inline up to
    --max-media-bytes. Without RUN, every run of the store (or of
    --project / --sweep). Nothing else of the store goes in.

    \b
    Examples:
      tracker report 3f2a 81c0 -o compare.html
      tracker report --project cifar --group-by config.lr -m loss -m acc --notes notes.md -o lab.html
      tracker report --sweep 7c1d --title "lr sweep" --no-environment -o sweep.html
    """
    from tracker.read.index import gc_paused
    from tracker.ui.report import build, check_output, read_notes, write
    from tracker.ui.reportmedia import parse_bytes

    media_bytes = parse_bytes(max_media_bytes)
    check_output(output)  # before anything is read: a folder that does not exist is one line at once
    text = read_notes(notes) if notes is not None else None
    store = obj.store
    with gc_paused():
        catalog = getattr(store, "catalog", None)
        entries = catalog() if catalog is not None else None
        listed = [e.info for e in entries] if entries is not None else store.runs()
        if runs:
            wanted = []
            for ref in runs:
                info = store.run(ref).info
                wanted.append(next((i for i in listed if i.id == info.id), info))
            chosen = list({i.id: i for i in wanted}.values())
        else:
            chosen = listed
        if project is not None:
            chosen = [i for i in chosen if i.project == project]
            if not chosen:
                projects = sorted({i.project for i in listed if i.project})
                raise TrackerError(f"--project {project}: no run of that project "
                                   f"(projects: {', '.join(projects[:20]) or 'none'})")
        if sweep is not None:
            tag = f"sweep:{sweep}"
            chosen = [i for i in chosen if tag in i.tags]
            if not chosen:
                sweeps = sorted({t[6:] for i in listed for t in i.tags if t.startswith("sweep:")})
                raise TrackerError(f"--sweep {sweep}: no run of that sweep (sweeps with runs: "
                                   f"{', '.join(sweeps[:20]) or 'none'})")
        if not chosen:
            raise TrackerError(f"no runs in {store.path}: nothing to report")
        facts = _sweep_facts(obj, sweep) if sweep is not None else None
        html = build(store, chosen, by=group_by, metrics=list(metrics) or None, title=title, notes=text,
                     environment=not no_environment, entries=entries, sweep=facts,
                     max_media_bytes=media_bytes)
    path = write(output, html)
    size = len(html.encode())
    click.echo(f"wrote {path} ({size / 1e6:.2f} MB, {len(chosen)} run{'s' if len(chosen) != 1 else ''}"
               + (f", grouped by {group_by}" if group_by else "") + ")", err=True)


def _sweep_facts(obj: CliContext, sweep_id: str) -> dict:
    """The sweep's metric, goal and best trial for the report (or the reason they cannot be read)."""
    from tracker.cli.sweep import _where
    from tracker.sweeps.web import sweep_summary

    try:
        root, storage = _where(obj, sweep_id, None)
        return sweep_summary(root, sweep_id, storage)
    except TrackerError as exc:  # the trials' runs are there but the study is not: the report says so
        return {"id": sweep_id, "error": str(exc)}
