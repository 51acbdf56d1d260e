"""``tracker get RUN NAME [-o PATH]``: copy an artifact out of the store, every hash checked."""

from __future__ import annotations

from pathlib import Path

import click

from tracker.cli import CliContext
from tracker.cli.options import handle_errors
from tracker.core.errors import TrackerError


def _default_dest(name: str) -> Path:
    # Names are free text: only a plain file name becomes a path by default.
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise TrackerError(f"artifact name {name!r} is not a plain file name; choose where to write it with -o PATH")
    return Path.cwd() / name


@click.command("get")
@click.argument("run")
@click.argument("name")
@click.option("-o", "--output", "output", metavar="PATH", type=click.Path(),
              help="Where to write the artifact (default: ./NAME).")
@click.option("--force", is_flag=True, help="Replace an existing file at PATH.")
@click.pass_obj
@handle_errors
def get_cmd(obj: CliContext, run: str, name: str, output: str | None, force: bool) -> None:
    """Copy artifact NAME of RUN (its latest version) to PATH, checking every sha256.

    The copy is written under a temporary name and renamed only when every
    hash matched: a damaged blob is an error naming it, and leaves nothing at PATH.

    \b
    Examples:
      tracker get 3f2a model.pt -o /tmp/model.pt
      tracker get 3f2a checkpoint        # a folder, written to ./checkpoint
    """
    view = obj.store.run(run)
    dest = Path(output) if output is not None else _default_dest(name)
    if dest.exists() and not (force and dest.is_file()):
        hint = "" if dest.is_dir() else " or pass --force"
        raise TrackerError(f"{dest} exists; choose another path with -o{hint}")
    out = view.copy_artifact(name, dest)
    click.echo(str(out))
