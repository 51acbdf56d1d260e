"""Optuna: ``study.optimize(objective, callbacks=[TrackerCallback(project="x")])``.

Each trial of a user's own study becomes a run, as optuna-integration's
MLflow and W&B callbacks make one: its parameters are the config, its
intermediate values are logged as the metric at their steps, its value (or
values, for several objectives) as the metric at the end; the run is tagged
``optuna:<study name>`` and ends ``finished``, ``stopped`` (pruned) or
``failed``. ``@callback.track_in_tracker()`` on the objective starts the
trial's run before the objective runs, so that ``tracker.log`` inside it
logs to that run live.

Importing this module imports Optuna; without it, one ImportError line says
what to install (``tracker-core[sweeps]``).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from tracker.integrations._common import plain, require

optuna = require("optuna", "sweeps", "tracker.integrations.optuna")

from tracker.write.api import Run, start_run  # noqa: E402 - after the clear ImportError

__all__ = ["TrackerCallback"]

_STATUS = {"COMPLETE": "finished", "PRUNED": "stopped", "FAIL": "failed"}


class TrackerCallback:
    """An Optuna callback that logs each finished trial of a study as a tracker run.

    :param metric_name: the name of the objective's value (W&B's and MLflow's
        callbacks use ``"value"``); one name per objective for a multi-objective study.
    :param project: the runs' project (default: the study's name).
    :param tags: extra tags; ``optuna:<study name>`` is always added.
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param log_intermediate: also log the trial's intermediate values at their steps.
    """

    def __init__(self, metric_name: str | Sequence[str] = "value", *, project: str | None = None,
                 tags: Sequence[str] = (), store: str | os.PathLike[str] | None = None,
                 log_intermediate: bool = True) -> None:
        self.metric_names = [metric_name] if isinstance(metric_name, str) else list(metric_name)
        self.project = project
        self.tags = list(tags)
        self.store = store
        self.log_intermediate = log_intermediate
        self._live: dict[tuple[str, int], Run] = {}
        self._errors: dict[tuple[str, int], BaseException] = {}
        self._lock = threading.Lock()

    def _start(self, study: Any, number: int, config: dict[str, Any] | None = None) -> Run:
        return start_run(self.project or study.study_name, f"trial-{number}", config=config or {},
                         tags=[f"optuna:{study.study_name}", *self.tags], store=self.store, system_metrics=False)

    def track_in_tracker(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorate the objective: its trial's run is open (and active) while it runs."""

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(func)
            def wrapper(trial: Any) -> Any:
                run = self._start(trial.study, trial.number)
                key = (trial.study.study_name, trial.number)
                with self._lock:
                    self._live[key] = run
                try:
                    return func(trial)
                except optuna.TrialPruned:
                    raise
                except BaseException as exc:  # the run keeps the error; Optuna decides what happens next
                    with self._lock:
                        self._errors[key] = exc
                    raise

            return wrapper

        return decorator

    def __call__(self, study: Any, trial: Any) -> None:
        """Log ``trial`` (an Optuna ``FrozenTrial`` that just finished) as a run of the store."""
        with self._lock:
            run = self._live.pop((study.study_name, trial.number), None)
            exc = self._errors.pop((study.study_name, trial.number), None)
        config = plain(dict(trial.params))
        if run is None:
            run = self._start(study, trial.number, config)
        elif config:
            run.config.update(config)
        name = self.metric_names[0]
        if self.log_intermediate:
            for step, value in sorted(trial.intermediate_values.items()):
                run.log({name: float(value)}, step=int(step))
        values = trial.values or []
        if values:
            names = self.metric_names if len(self.metric_names) == len(values) \
                else [f"{name}_{i}" for i in range(len(values))]
            run.log({n: float(v) for n, v in zip(names, values, strict=True)})
            if len(values) == 1:
                run.summary[names[0]] = float(values[0])
        status = _STATUS.get(trial.state.name, "failed")
        error: Any = None
        if status == "failed":
            # The objective's exception when track_in_tracker saw it; Optuna's callbacks do not get it.
            error = exc if exc is not None else {"type": "TrialFailed", "message": "the objective raised or returned "
                                                 "no valid value (see Optuna's log)", "traceback": ""}
        run.finish(status, error)
