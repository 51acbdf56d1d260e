"""``tracker sync``: copy the store into the team database on PostgreSQL."""

from __future__ import annotations

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, format_option, handle_errors
from tracker.core.errors import TrackerError


@click.command("sync")
@click.argument("url", metavar="[URL]", required=False)
@click.option("-f", "--follow", is_flag=True,
              help="Keep copying new records of running runs (and new runs) until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True, metavar="SECONDS",
              help="With --follow: seconds between looks at the store.")
@click.option("--batch-size", type=click.IntRange(min=1), default=20_000, show_default=True, metavar="N",
              help="Events per transaction.")
@click.option("--status", is_flag=True, help="Copy nothing: show, per run, what is not in the database yet, "
                                             "and the store's follower.")
@click.option("--blobs", "blobs", metavar="BUCKET", default=None,
              help="Upload the runs' blobs to this bucket (s3://, gs://, az://, file://); "
                   "default: [team] blobs or TRACKER_TEAM_BLOBS.")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def sync_cmd(obj: CliContext, url: str | None, follow: bool, interval: float, batch_size: int, status: bool,
             blobs: str | None, fmt: str) -> None:
    """Copy every run of the store into a PostgreSQL database, or ship it to a tracker server (idempotent).

    Events are keyed by run, writer and sequence number: syncing again, or
    from several machines sharing one store folder, never stores one twice;
    a sync that was interrupted goes on where it stopped. Credentials come
    from the URL, the PG* environment variables or ~/.pgpass. Read the
    database with `tracker --store URL runs` (show, summary, compare, query).
    The URL defaults to tracker.toml's [team] url, else TRACKER_TEAM_URL,
    with which every run streams by itself (docs/team.md).

    With [team] blobs set (or --blobs), every blob a synced run references
    is uploaded to the bucket by its sha256, skipping what is there;
    credentials come from the client's environment (AWS_*, AWS_ENDPOINT_URL,
    GOOGLE_APPLICATION_CREDENTIALS, AZURE_*).

    With a tracker server's URL (https://..., docs/remote.md), each segment's
    complete lines go from where the server is (by offset: nothing twice,
    nothing missing) with the blobs they name, using the key of `tracker
    login` or TRACKER_API_KEY: what a follower did not ship (a killed client,
    a laptop that was offline).

    \b
    Examples:
      tracker sync https://lab.example:8443
      tracker sync postgresql://tracker@db.lab/experiments
      tracker sync postgresql://db.lab/experiments --follow
      tracker sync --status
      tracker sync postgresql://db.lab/experiments --blobs s3://lab-bucket/tracker
      tracker --store postgresql://db.lab/experiments runs
    """
    from tracker.core.urls import redact_url, team_url
    from tracker.team.database import is_team_url, mask_url
    from tracker.team.sync import sync

    if url is None:
        url = team_url(obj.config)
        if url is None:
            fail("no database URL: give one (tracker sync postgresql://...), or set [team] url in tracker.toml "
                 "or TRACKER_TEAM_URL", code=2)
    from tracker.remote.session import is_remote_url

    if is_remote_url(url):
        _ship(obj, url, follow=follow, interval=interval, status=status, fmt=fmt)
        return
    if not is_team_url(url):
        fail(f"expected a database URL starting with postgresql:// or a server URL starting with https://, "
             f"given {redact_url(url)!r}", code=2)
    if is_team_url(str(obj._store_path or "")):
        fail("tracker sync copies a store folder into the database: give the folder with --store, "
             "not a database URL", code=2)
    store = obj.store
    if status:
        _show_status(store, url, fmt)
        return
    if follow:
        click.echo(f"tracker: following {store.path} into {mask_url(url)} (Ctrl-C to stop)", err=True)
    shown = [0]

    def on_pass(rep) -> None:  # noqa: ANN001 - a SyncReport
        if follow and rep.events_read > shown[0]:
            click.echo(f"+{rep.events_read - shown[0]} events", err=True)
            shown[0] = rep.events_read

    from tracker.cli.terminal import progress

    rep = sync(store, url, follow=follow, interval=interval, batch=batch_size, on_pass=on_pass, blobs=blobs,
               blob_progress=lambda total, label: progress(total, label),
               on_lost=lambda message: click.echo(f"tracker: {message}", err=True))
    click.echo(f"synced {rep.runs} run{'s' if rep.runs != 1 else ''} ({rep.segments} segments) to {mask_url(url)}: "
               f"{rep.events_read} events read, {rep.events_new} new, in {rep.seconds:.1f}s "
               f"({rep.rate():.0f} events/s)" + (f"; {rep.problems} damaged lines skipped" if rep.problems else ""))
    if rep.blobs is not None:
        _report_blobs(rep.blobs)


def _ship(obj: CliContext, url: str, *, follow: bool, interval: float, status: bool, fmt: str) -> None:
    """``tracker sync https://...``: ship the store's runs to a server (or, ``--status``, say what is behind)."""
    import time

    from tracker.cli.terminal import progress
    from tracker.core.urls import is_database_url
    from tracker.remote.session import Session
    from tracker.remote.shipper import Shipper, ship

    if is_database_url(str(obj._store_path or "")) or "://" in str(obj._store_path or ""):
        fail("tracker sync ships a store folder to the server: give the folder with --store", code=2)
    root = obj.store_path.absolute()
    with Session.from_config(url, obj.config) as session:
        if status:
            _show_remote_status(obj, root, session, fmt)
            return
        heartbeat = obj.config.heartbeat_timeout
        if not follow:
            rep = ship(root, session, heartbeat_timeout=heartbeat, blob_progress=lambda n, label: progress(n, label))
            _report_ship(rep, session.url)
            return
        click.echo(f"tracker: shipping {root} to {session.url} (Ctrl-C to stop)", err=True)
        shipper = Shipper(root, session, heartbeat_timeout=heartbeat)
        shipper.check_key()
        sent = 0
        try:
            while True:
                for rid in shipper.run_ids():
                    try:
                        shipper.ship_run(rid)
                    except TrackerError as exc:
                        if str(exc) not in shipper.report.errors:
                            click.echo(f"tracker: {exc}", err=True)
                        shipper.report.problem(str(exc))
                if shipper.report.bytes > sent:
                    click.echo(f"+{shipper.report.bytes - sent} bytes", err=True)
                    sent = shipper.report.bytes
                time.sleep(interval)
        except KeyboardInterrupt:
            pass
        _report_ship(shipper.report, session.url)


def _report_ship(rep, url: str) -> None:  # noqa: ANN001 - a tracker.remote.shipper.ShipReport
    from tracker.core.text import human_bytes

    click.echo(f"shipped {rep.runs} run{'s' if rep.runs != 1 else ''} ({rep.segments} segments) to {url}: "
               f"{human_bytes(rep.bytes)} in {rep.requests} requests; blobs: {rep.blobs} sent "
               f"({human_bytes(rep.blob_bytes)}), {rep.blobs_present} already there")
    if rep.errors:
        for message in rep.errors[:5]:
            click.echo(f"tracker: {message}", err=True)
        fail(f"{rep.problems} problem{'s' if rep.problems != 1 else ''}: what was refused stays local")


def _show_remote_status(obj: CliContext, root, session, fmt: str) -> None:  # noqa: ANN001
    """``--status`` for a server: the follower's line, then every run that is behind the server."""
    import time

    import attrs

    from tracker.cli.render import dumps, table_text
    from tracker.core.text import human_bytes
    from tracker.remote.shipper import runs_behind
    from tracker.team.status import describe_follower, follower_state

    now = time.time()
    follower = follower_state(root)
    try:
        runs = runs_behind(obj.store, session)
    except TrackerError as exc:
        if fmt == "table":
            click.echo(describe_follower(follower, now))
        fail(str(exc))
    doc = {"url": session.url, "store": str(root), "follower": follower, "time": now,
           "runs": [attrs.asdict(r) for r in runs],
           "behind": {"runs": sum(r.behind for r in runs), "bytes": sum(r.bytes_behind for r in runs),
                      "lines": sum(r.lines_behind for r in runs)}}
    if fmt == "json":
        click.echo(dumps(doc))
        return
    click.echo(describe_follower(follower, now))
    behind = [r for r in runs if r.behind]
    if behind:
        click.echo(table_text(["run", "status", "segments", "bytes behind", "lines behind"],
                              [{"run": r.run_id, "status": r.status, "segments": r.segments,
                                "bytes behind": human_bytes(r.bytes_behind), "lines behind": r.lines_behind}
                               for r in behind]))
    up = len(runs) - len(behind)
    click.echo(f"{up} run{'s' if up != 1 else ''} up to date in {session.url}"
               + (f"; {len(behind)} behind by {doc['behind']['lines']} lines" if behind else ""))


def _report_blobs(b) -> None:  # noqa: ANN001 - a tracker.team.blobsync.BlobReport
    from tracker.lifecycle import human_bytes

    click.echo(f"blobs: {b.uploaded} uploaded ({human_bytes(b.uploaded_bytes)}), {b.present} already in {b.url}"
               + (f", {b.not_local} not in this store (references to outside files)" if b.not_local else ""))
    if b.errors:
        for message in b.errors[:5]:
            click.echo(f"tracker: {message}", err=True)
        fail(f"the blobs of {b.pending} run{'s' if b.pending != 1 else ''} are not all in {b.url}; the local blobs "
             "are kept: run `tracker sync` again to upload what is missing")


def _show_status(store: object, url: str, fmt: str) -> None:
    """``--status``: the follower's line, then every run that is behind, then how many are not."""
    from tracker.cli.render import dumps, table_text
    from tracker.core.errors import TrackerError
    from tracker.core.text import human_bytes
    from tracker.team.status import describe_follower, follower_state, status_doc

    try:
        doc = status_doc(store, url)
    except TrackerError as exc:  # the database is out of reach: the follower's state is still worth seeing
        if fmt == "table":
            import time

            click.echo(describe_follower(follower_state(store.path), time.time()))
        fail(str(exc))
    if fmt == "json":
        click.echo(dumps(doc))
        return
    click.echo(describe_follower(doc["follower"], doc["time"]))
    behind = [r for r in doc["runs"] if r["bytes_behind"] > 0]
    if behind:
        click.echo(table_text(["run", "status", "segments", "bytes behind", "lines behind"],
                              [{"run": r["run_id"], "status": r["status"], "segments": r["segments"],
                                "bytes behind": human_bytes(r["bytes_behind"]), "lines behind": r["lines_behind"]}
                               for r in behind]))
    up = len(doc["runs"]) - len(behind)
    click.echo(f"{up} run{'s' if up != 1 else ''} up to date in {doc['url']}"
               + (f"; {len(behind)} behind by {doc['behind']['lines']} lines" if behind else ""))


__all__ = ["sync_cmd"]
