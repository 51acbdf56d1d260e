"""Hugging Face Accelerate: ``Accelerator(log_with=TrackerTracker(project="x"))``.

A real :class:`accelerate.tracking.GeneralTracker`. ``accelerator.init_trackers(
"project", config={...})`` starts the run with that config (the run's
project is the tracker's own ``project``: Accelerate hands ``project_name``
only to its built-in trackers);
``accelerator.log({...}, step=...)`` logs the numeric values (Python
numbers, numpy scalars, one-element tensors) at the step;
``accelerator.end_training()`` finishes the run. Only the main process
logs, as with Accelerate's own trackers.

Importing this module imports Accelerate; without it, one ImportError line
says what to install.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tracker.integrations._common import RunArgs, close_run, plain, require, scalars

require("accelerate", "accelerate", "tracker.integrations.accelerate")

from accelerate.tracking import GeneralTracker, on_main_process  # noqa: E402 - after the clear ImportError

from tracker.write.api import Run  # noqa: E402

__all__ = ["TrackerTracker"]


class TrackerTracker(GeneralTracker):
    """Log an Accelerate training loop into a tracker run.

    Takes the arguments of :func:`tracker.start_run`.

    :param project: free-text project.
    :param name: free-text run name.
    :param config: extra config; it wins over the config given to ``init_trackers``.
    :param tags: free-text tags.
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param run_id: the run id; a fresh one by default.
    :param resume: attach to an existing run; ``None``: only when ``run_id`` is given.
    """

    name = "tracker"
    requires_logging_directory = False
    main_process_only = True

    def __init__(self, project: str | None = None, name: str | None = None, *,
                 config: Mapping[str, Any] | None = None, tags: list[str] | None = None,
                 store: str | os.PathLike[str] | None = None, run_id: str | None = None,
                 resume: bool | None = None) -> None:
        super().__init__()
        self._args = RunArgs(project, name, config, tags, store, run_id, resume)
        self._run: Run | None = None
        self._started = False

    @property
    def tracker(self) -> Run | None:
        """The run (``None`` before the first log or config, and on other processes)."""
        return self._run

    @property
    def run(self) -> Run | None:
        """The run, as :attr:`tracker`."""
        return self._run

    def start(self) -> None:
        """Called by ``init_trackers``: the run starts with the config that follows, or with the first log."""

    @on_main_process
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """The config given to ``init_trackers``: the run starts with it as its config."""
        self._ensure_run(plain(dict(values or {})))

    @on_main_process
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Log the numeric values of ``values`` at ``step`` (text values are left out)."""
        numbers = scalars(values)
        if numbers:
            self._ensure_run().log(numbers, step=None if step is None else int(step))

    @on_main_process
    def finish(self) -> None:
        """``accelerator.end_training()``: the run is finished."""
        close_run(self._run)

    def _ensure_run(self, config: Mapping[str, Any] | None = None) -> Run:
        run = self._run
        if run is not None and run.status == "running":
            if config:
                run.config.update({k: v for k, v in config.items() if k not in self._args.config})
            return run
        self._run = run = self._args.start(config, resume=self._started)
        self._started = True
        return run

