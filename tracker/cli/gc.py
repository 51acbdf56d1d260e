"""``tracker gc``: empty the trash and remove blobs that no run references."""

from __future__ import annotations

from pathlib import Path

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="Only show what would be removed.")
@format_option(("table", "json"))
@click.pass_obj
@handle_errors
def gc_cmd(obj: CliContext, dry_run: bool, fmt: str) -> None:
    """Empty the trash for good, then remove blobs that no run in the store references.

    Also empties this machine's cache of blobs fetched from the team's bucket
    (over `--store postgresql://...`, that is all it does).

    Safe while other processes log: a blob younger than one hour is never
    removed, and a run that appears during gc keeps its blobs. Runs outside
    the trash are never touched.

    \b
    Examples:
      tracker gc --dry-run
      tracker gc
    """
    import attrs

    from tracker.lifecycle import collect_garbage, human_bytes
    from tracker.team.blobs import clear_cache

    if not isinstance(obj.store.path, Path):  # the team store: only this machine's cache of its bucket
        files, size = clear_cache(dry_run=dry_run)
        if fmt == "json":
            click.echo(dumps({"cache_blobs": files, "cache_bytes": size}))
        else:
            click.echo(f"blob cache: {'would remove' if dry_run else 'removed'} {files} "
                       f"blob{'s' if files != 1 else ''} ({human_bytes(size)})")
        return
    report = collect_garbage(obj.store, dry_run=dry_run)
    files, size = clear_cache(dry_run=dry_run)
    if fmt == "json":
        click.echo(dumps({**attrs.asdict(report), "cache_blobs": files, "cache_bytes": size}))
        return
    verb = "would remove" if dry_run else "removed"
    n = len(report.trash_runs)
    click.echo(f"trash: {verb} {n} run{'s' if n != 1 else ''} ({human_bytes(report.trash_bytes)})")
    if report.blobs_scanned:
        click.echo(f"blobs: {verb} {report.blobs} unreferenced blob{'s' if report.blobs != 1 else ''} "
                   f"({human_bytes(report.blob_bytes)}); kept {report.blobs_kept_young} younger than one hour")
    else:
        click.echo("blobs: none (this version stores no blobs)")
    if files:
        click.echo(f"blob cache: {verb} {files} fetched blob{'s' if files != 1 else ''} ({human_bytes(size)})")
