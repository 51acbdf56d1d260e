"""The ``ptq`` plugin: the ``ptq.layer`` schema, its summaries, and ``tracker ptq inspect``."""

from __future__ import annotations

import click
from tracker import Schema, Summarizer, hookimpl

from .cli import ptq_group
from .record import SCHEMA_NAME, LayerRecord
from .summary import summarize_layers, summarize_totals


@hookimpl
def tracker_schemas() -> list[Schema]:
    """Offer ``ptq.layer``."""
    return [Schema(SCHEMA_NAME, LayerRecord, version=1,
                   description="one layer after post-training INT8 quantisation: "
                               "scale, error, bytes")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    """Offer the per-layer table and the totals per scheme."""
    return [
        Summarizer("ptq.layers", SCHEMA_NAME, summarize_layers,
                   description="per layer: shape, scale, max error against scale/2, bytes"),
        Summarizer("ptq.totals", SCHEMA_NAME, summarize_totals,
                   description="per scheme: total bytes, compression ratio, "
                               "worst and flagged layers"),
    ]


@hookimpl
def tracker_commands(cli: click.Group) -> None:
    """Add the ``tracker ptq`` group (``tracker ptq inspect FILE``)."""
    cli.add_command(ptq_group)
