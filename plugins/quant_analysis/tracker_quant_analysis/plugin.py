"""The ``quant_analysis`` plugin: the ``quant.error`` schema and its summaries."""

from __future__ import annotations

from tracker import Schema, Summarizer, hookimpl

from .record import SCHEMA_NAME, ErrorRecord
from .summary import summarize_errors, summarize_granularity


@hookimpl
def tracker_schemas() -> list[Schema]:
    """Offer ``quant.error``."""
    return [Schema(SCHEMA_NAME, ErrorRecord, version=1,
                   description="quantisation error of one tensor: MSE, max error, SQNR, "
                               "outliers")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    """Offer the per-tensor error table and the per-tensor/per-channel comparison."""
    return [
        Summarizer("quant.errors", SCHEMA_NAME, summarize_errors,
                   description="per tensor: SQNR against theory, max error against its bound"),
        Summarizer("quant.granularity", SCHEMA_NAME, summarize_granularity,
                   description="per-tensor against per-channel error of the same tensor"),
    ]
