"""The ``ptq`` plugin: the ``ptq.layer`` schema, its summaries, and ``tracker ptq inspect``."""

from __future__ import annotations

import click
from tracker import Panel, Schema, Summarizer, hookimpl

from .cli import ptq_group
from .panel import PANELS
from .record import SCHEMAS
from .summary import SUMMARIZERS


@hookimpl
def tracker_schemas() -> list[Schema]:
    """Offer ``ptq.layer``."""
    return list(SCHEMAS)


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    """Offer the per-layer table and the totals per scheme."""
    return list(SUMMARIZERS)


@hookimpl
def tracker_commands(cli: click.Group) -> None:
    """Add the ``tracker ptq`` group (``tracker ptq inspect FILE``)."""
    cli.add_command(ptq_group)


@hookimpl
def tracker_panels() -> list[Panel]:
    """Dashboard panels (``tracker ui``) of this plugin's records."""
    return list(PANELS)
