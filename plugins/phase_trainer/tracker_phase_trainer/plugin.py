"""The ``phase_trainer`` plugin: the ``phase.step`` schema and its summarizers.

Registered through the entry point ``phase_trainer`` of group ``tracker``.
"""

from __future__ import annotations

from tracker import Config, Panel, Schema, Summarizer, hookimpl
from tracker_phase_trainer.config import PLUGIN_NAME, scheduler_options
from tracker_phase_trainer.panel import PANELS
from tracker_phase_trainer.record import SCHEMAS
from tracker_phase_trainer.summary import SUMMARIZERS


@hookimpl
def tracker_configure(config: Config) -> None:
    """Check the ``[plugins.phase_trainer]`` table as soon as tracker.toml loads,
    so a bad key is reported (``tracker plugins``) before a scheduler reads it."""
    scheduler_options(config.plugin_config(PLUGIN_NAME), str(config.file or "tracker.toml"))


@hookimpl
def tracker_schemas() -> list[Schema]:
    """Offer ``phase.step``."""
    return list(SCHEMAS)


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    """Offer the three ``phase.*`` summaries of ``phase.step`` records."""
    return list(SUMMARIZERS)


@hookimpl
def tracker_panels() -> list[Panel]:
    """Dashboard panels (``tracker ui``) of this plugin's records."""
    return list(PANELS)
