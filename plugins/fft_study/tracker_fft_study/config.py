"""Options of the plugin, read from ``[plugins.fft_study]`` of tracker.toml."""

from __future__ import annotations

from typing import Any

from .study import DEFAULT_PRUNE_THRESHOLD

__all__ = ["SETTINGS", "Settings"]


class Settings:
    """The plugin's options; :meth:`update` checks and applies a config table.

    :ivar prune_threshold: a gate below it counts as pruned, in (0, 1].
    :ivar report_dpi: resolution of the report's figures, in [50, 600].
    """

    def __init__(self) -> None:
        self.prune_threshold: float = DEFAULT_PRUNE_THRESHOLD
        self.report_dpi: int = 110

    def update(self, table: dict[str, Any]) -> None:
        """Apply a ``[plugins.fft_study]`` table.

        :raises ValueError: naming the key, what is allowed and what was given;
            nothing is applied then.
        """
        allowed = {"prune_threshold", "report_dpi"}
        for key in table:
            if key not in allowed:
                raise ValueError(f"[plugins.fft_study] {key}: expected one of "
                                 f"{', '.join(sorted(allowed))}, given unknown key {key!r}")
        threshold = table.get("prune_threshold", self.prune_threshold)
        if type(threshold) not in (int, float) or not 0 < threshold <= 1:
            raise ValueError("[plugins.fft_study] prune_threshold: expected a number in (0, 1], "
                             f"given {threshold!r}")
        dpi = table.get("report_dpi", self.report_dpi)
        if type(dpi) is not int or not 50 <= dpi <= 600:
            raise ValueError(f"[plugins.fft_study] report_dpi: expected an int in [50, 600], "
                             f"given {dpi!r}")
        self.prune_threshold, self.report_dpi = float(threshold), dpi

    def load(self, table: dict[str, Any]) -> None:
        """Start from the defaults and apply ``table`` (see :meth:`update`)."""
        fresh = Settings()
        fresh.update(table)
        self.prune_threshold, self.report_dpi = fresh.prune_threshold, fresh.report_dpi


#: The options in force in this process (set by the ``tracker_configure`` hook).
SETTINGS = Settings()
