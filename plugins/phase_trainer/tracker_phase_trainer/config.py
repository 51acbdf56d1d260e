"""Scheduler defaults from the ``[plugins.phase_trainer]`` table of tracker.toml.

.. code-block:: toml

    [plugins.phase_trainer]
    full_steps = 10
    predict_steps = 40
    correct_every = 10      # 0: never correct (TOML has no null)
    adaptive = false
    loss_threshold = 0.05

Every key is optional; an unknown key or a bad value is an error naming the
key, what is allowed and what was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OPTION_KEYS", "PLUGIN_NAME", "scheduler_options"]

#: The plugin's name: its entry-point name and its tracker.toml table.
PLUGIN_NAME = "phase_trainer"

#: The keys ``[plugins.phase_trainer]`` may hold.
OPTION_KEYS = ("full_steps", "predict_steps", "correct_every", "adaptive", "loss_threshold")


def scheduler_options(table: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Check a ``[plugins.phase_trainer]`` table; return ``PhaseScheduler`` keywords.

    :param table: the table, as ``Config.plugin_config("phase_trainer")`` gives it.
    :param where: the file it came from, to start error messages with.
    :returns: the keywords the table sets (``correct_every = 0`` becomes None).
    :raises ValueError: an unknown key or a bad value.
    """
    prefix = f"{where}: " if where else ""

    def bad(key: str, allowed: str, given: Any) -> ValueError:
        return ValueError(
            f"{prefix}[plugins.{PLUGIN_NAME}] {key}: expected {allowed}, given {given!r}"
        )

    options: dict[str, Any] = {}
    for key, value in table.items():
        if key not in OPTION_KEYS:
            raise ValueError(
                f"{prefix}unknown key [plugins.{PLUGIN_NAME}] {key}; "
                f"allowed: {', '.join(OPTION_KEYS)}"
            )
        if key in ("full_steps", "predict_steps"):
            if type(value) is not int or value < 1:
                raise bad(key, "an int >= 1", value)
        elif key == "correct_every":
            if type(value) is not int or value < 0:
                raise bad(key, "an int >= 1, or 0 for never", value)
            value = value or None
        elif key == "adaptive":
            if type(value) is not bool:
                raise bad(key, "true or false", value)
        elif type(value) not in (int, float) or not 0 <= value < float("inf"):
            raise bad(key, "a finite number >= 0", value)
        options[key] = value
    return options
