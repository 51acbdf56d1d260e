"""The core commands of DESIGN.md, gathered from one module per group of commands."""

from __future__ import annotations

import click

from .options import duration, handle_errors, when

__all__ = ["add_core_commands", "duration", "handle_errors", "when"]


def add_core_commands(cli: click.Group) -> None:
    """Add ``runs``, ``show``, ``summary``, ``compare``, ``tail``, ``plugins``,
    ``schemas``, ``verify`` and ``export`` to ``cli``."""
    from .export import export_cmd
    from .integrity import verify_cmd
    from .listing import runs_cmd
    from .plugins import plugins_cmd, schemas_cmd
    from .summaries import compare_cmd, show_cmd, summary_cmd
    from .tail import tail_cmd

    for cmd in (runs_cmd, show_cmd, summary_cmd, compare_cmd, tail_cmd, plugins_cmd, schemas_cmd,
                verify_cmd, export_cmd):
        cli.add_command(cmd)
