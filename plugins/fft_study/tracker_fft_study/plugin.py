"""Hook implementations of the FFT study plugin (entry point ``fft_study``).

Schemas ``fft.loss_point``, ``fft.params``, ``fft.heatmap``, ``fft.landscape``
and ``fft.trace``; one summarizer per question a study asks; and the
``tracker fft report`` command. Options come from ``[plugins.fft_study]`` of
tracker.toml:

- ``prune_threshold`` (float in (0, 1], default 0.5): a gate below it counts
  as pruned.
- ``report_dpi`` (int in [50, 600], default 110): resolution of report figures.

A bad option is a warning and the defaults apply; the plugin keeps working.
"""

from __future__ import annotations

import warnings

import click

from tracker import Config, Panel, Schema, Summarizer, TrackerWarning, hookimpl

from .cli import fft_group
from .config import SETTINGS
from .panel import PANELS
from .record import SCHEMAS
from .summary import SUMMARIZERS


@hookimpl
def tracker_configure(config: Config) -> None:
    """Read ``[plugins.fft_study]``.

    A bad key or value is warned about, naming the file, the key and what is
    allowed, and the defaults are used: a typo in a report option must not
    stop the fft.* schemas from logging.
    """
    try:
        SETTINGS.load(config.plugin_config("fft_study"))
    except ValueError as err:
        SETTINGS.load({})
        where = config.file or "tracker.toml"
        warnings.warn(f"tracker: plugin 'fft_study': {where}: {err}; using the defaults",
                      TrackerWarning, stacklevel=2)


@hookimpl
def tracker_schemas() -> list[Schema]:
    """The five ``fft.*`` schemas."""
    return list(SCHEMAS)


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    """Per-model table, loss-curve statistics, gates per stage, landscape minimum."""
    return list(SUMMARIZERS)


@hookimpl
def tracker_commands(cli: click.Group) -> None:
    """Add the ``tracker fft`` group (``tracker fft report``)."""
    cli.add_command(fft_group)


@hookimpl
def tracker_panels() -> list[Panel]:
    """Dashboard panels: loss per model (log scale), gate heatmaps with pruned gates marked, the landscape."""
    return list(PANELS)
