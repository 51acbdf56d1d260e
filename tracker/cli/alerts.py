"""``tracker alerts [RUN] [--follow]`` and ``tracker watch``: alerts read back, and the rules' watcher."""

from __future__ import annotations

import threading
import time
from typing import Any

import click

from tracker.alerts.record import store_alerts
from tracker.cli import CliContext
from tracker.cli.options import fail, format_option, handle_errors
from tracker.cli.render import dumps, dumps_line, table_text
from tracker.core.text import when

COLUMNS = ["time", "run", "level", "title", "sent", "condition", "text"]
FOLLOW_INTERVAL = 1.0


def _row(a: dict[str, Any]) -> dict[str, Any]:
    return {"time": when(a["time"]), "run": f"{a['run_name']} ({a['run_id']})" if a["run_name"] else a["run_id"],
            "level": a["level"], "title": a["title"], "sent": "suppressed" if a["suppressed"] else "sent",
            "condition": a["condition"] or "run.alert", "text": a["text"]}


@click.command("alerts")
@click.argument("run", required=False)
@click.option("-f", "--follow", is_flag=True, help="Keep printing alerts as they are recorded (Ctrl-C stops).")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def alerts_cmd(obj: CliContext, run: str | None, follow: bool, fmt: str) -> None:
    """List alerts (of one run, or of every run): time, run, level, title, sent or suppressed, condition.

    \b
    tracker alerts                 # every run's alerts, oldest first
    tracker alerts 3f2a --format json
    tracker alerts -f              # and the ones still to come
    """
    store = obj.store
    items = store_alerts(store, run)
    if not follow:
        if fmt == "json":
            click.echo(dumps({"alerts": items}))
        elif items:
            click.echo(table_text(COLUMNS, [_row(a) for a in items]))
        else:
            click.echo("no alerts" + (f" in run {run}" if run else ""), err=True)
        return
    seen = {(a["run_id"], a["time"], a["title"]) for a in items}

    def emit(batch: list[dict[str, Any]]) -> None:
        for a in batch:
            if fmt == "json":
                click.echo(dumps_line(a))  # JSON Lines while following: one alert per line
            else:
                r = _row(a)
                click.echo("  ".join(str(r[c]) for c in COLUMNS[:-1]) + f"  {r['text']}")

    emit(items)
    try:
        while True:
            time.sleep(FOLLOW_INTERVAL)
            new = [a for a in store_alerts(store, run) if (a["run_id"], a["time"], a["title"]) not in seen]
            seen.update((a["run_id"], a["time"], a["title"]) for a in new)
            emit(new)
            if run is not None and store.run(run).info.status != "running":
                return
    except KeyboardInterrupt:
        return


@click.command("watch")
@click.option("--once", is_flag=True, help="Check the rules once and exit (for cron or a script; see --since).")
@click.option("--since", metavar="DURATION", default=None,
              help="Also check runs that ended this long before the start (30s, 10m, 2h); by default only runs "
                   "that end while watching. A condition already recorded in a run is never sent again.")
@click.pass_obj
@handle_errors
def watch_cmd(obj: CliContext, once: bool, since: str | None) -> None:
    """Check the alert rules of tracker.toml against the store's runs and deliver what fires, until Ctrl-C.

    \b
    [[alerts.rules]]                 # in tracker.toml
    when = "loss is nan"             # "loss > 10", "run crashed", "no record for 10m", ...
    channels = ["slack"]
    """
    from tracker.alerts.record import flush
    from tracker.alerts.rules import parse_duration
    from tracker.alerts.watch import Watcher

    try:
        back = parse_duration(since) if since is not None else 0.0
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    from tracker.store import Store

    if str(obj.store_path).startswith(("postgresql://", "postgres://")):
        fail("tracker watch needs a folder store (it records its alerts in the runs' folders)")
    store = Store(obj.store_path, host=lambda: obj.host)  # a store not made yet is watched as empty
    host = obj.host
    watcher = Watcher(store, host, on_alert=_print_alert, since=back)
    if not watcher.rules:
        where = host.config.file or "tracker.toml (none found)"
        fail(f"{where}: no [[alerts.rules]] to check; see docs/alerts.md")
    from tracker.alerts.watch import WatchLock

    lock = WatchLock(store.path)
    try:
        if not lock.acquire():
            # Two watchers would both send each alert: the first keeps watching, this one has nothing to do.
            click.echo(lock.busy_message(store.path), err=True)
            return
    except OSError as exc:
        click.echo(f"tracker: warning: cannot take {lock.path} ({exc.strerror or exc}); watching without it",
                   err=True)
    click.echo(f"tracker: watching {store.path}: {len(watcher.rules)} rule{'s' if len(watcher.rules) > 1 else ''}, "
               f"channels {', '.join(watcher.channels) or 'none'}"
               + ("; once" if once else f"; every {watcher.interval:g} s (Ctrl-C stops)"), err=True)
    stop = threading.Event()
    try:
        if once:
            watcher.poll()
        else:
            watcher.run(stop)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        lock.release()
        if not flush():
            click.echo("tracker: warning: some alerts were still being delivered at exit", err=True)


def _print_alert(a: Any) -> None:
    click.echo(f"{when(a.time)}  {a.level:<5}  {a.title}  [{a.condition}]", nl=True)
