"""The core commands of DESIGN.md, one module per command, named after it."""

from __future__ import annotations

import click


def add_core_commands(cli: click.Group) -> None:
    """Add ``runs``, ``show``, ``summary``, ``compare``, ``tail``, ``plugins``,
    ``schemas``, ``verify``, ``export``, ``artifacts``, ``get``, ``bench``, ``ui``, ``import``, ``query``,
    ``index`` and ``sync`` to ``cli``."""
    from .artifacts import artifacts_cmd
    from .bench import bench_cmd
    from .compare import compare_cmd
    from .export import export_cmd
    from .get import get_cmd
    from .importer import import_group
    from .index import index_cmd
    from .plugins import plugins_cmd
    from .query import query_cmd
    from .runs import runs_cmd
    from .schemas import schemas_cmd
    from .show import show_cmd
    from .summary import summary_cmd
    from .sync import sync_cmd
    from .tail import tail_cmd
    from .ui import ui_cmd
    from .verify import verify_cmd

    for cmd in (runs_cmd, show_cmd, summary_cmd, compare_cmd, tail_cmd, plugins_cmd, schemas_cmd,
                verify_cmd, export_cmd, artifacts_cmd, get_cmd, bench_cmd, ui_cmd, import_group,
                query_cmd, index_cmd, sync_cmd):
        cli.add_command(cmd)
