"""The ``quant_analysis`` plugin: the ``quant.error`` schema and its summaries."""

from __future__ import annotations

from tracker import Panel, Schema, Summarizer, hookimpl

from .panel import PANELS
from .record import SCHEMAS
from .summary import SUMMARIZERS


@hookimpl
def tracker_schemas() -> list[Schema]:
    """Offer ``quant.error``."""
    return list(SCHEMAS)


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    """Offer the per-tensor error table and the per-tensor/per-channel comparison."""
    return list(SUMMARIZERS)


@hookimpl
def tracker_panels() -> list[Panel]:
    """Dashboard panels (``tracker ui``) of this plugin's records."""
    return list(PANELS)
