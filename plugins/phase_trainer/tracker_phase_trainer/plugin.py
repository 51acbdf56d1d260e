"""The ``phase_trainer`` plugin: the ``phase.step`` schema and its summarizers.

Registered through the entry point ``phase_trainer`` of group ``tracker``.
"""

from __future__ import annotations

from tracker import Config, Schema, Summarizer, hookimpl
from tracker_phase_trainer.config import PLUGIN_NAME, scheduler_options
from tracker_phase_trainer.record import PhaseStep
from tracker_phase_trainer.scheduler import SCHEMA_NAME
from tracker_phase_trainer.summary import summarize_loss, summarize_overview, summarize_schedule


@hookimpl
def tracker_configure(config: Config) -> None:
    """Check the ``[plugins.phase_trainer]`` table as soon as tracker.toml loads,
    so a bad key is reported (``tracker plugins``) before a scheduler reads it."""
    scheduler_options(config.plugin_config(PLUGIN_NAME), str(config.file or "tracker.toml"))


@hookimpl
def tracker_schemas() -> list[Schema]:
    """Offer ``phase.step``."""
    return [
        Schema(
            SCHEMA_NAME,
            PhaseStep,
            version=1,
            description="one step of a phase-trained loop: FULL, PREDICT or CORRECT, and its loss",
        )
    ]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    """Offer the three ``phase.*`` summaries of ``phase.step`` records."""
    return [
        Summarizer(
            "phase.overview",
            SCHEMA_NAME,
            summarize_overview,
            description="steps per phase, cycles and speedup",
        ),
        Summarizer(
            "phase.loss",
            SCHEMA_NAME,
            summarize_loss,
            description="mean loss of each phase over its last 100 steps",
        ),
        Summarizer(
            "phase.schedule",
            SCHEMA_NAME,
            summarize_schedule,
            description="FULL and predict lengths over time (changes in adaptive mode)",
        ),
    ]
