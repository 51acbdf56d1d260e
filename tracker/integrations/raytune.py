"""Ray Tune: ``tune.RunConfig(callbacks=[TrackerLoggerCallback(project="x")])``.

A real :class:`ray.tune.logger.LoggerCallback`, as Ray's own W&B and MLflow
logger callbacks are: each trial becomes a run of the store (made in the
driver process, where Tune calls its callbacks), its config the trial's
config, every numeric entry of each reported result logged at the result's
``training_iteration`` (nested dicts flattened with ``/``; Tune's bookkeeping
entries left out), tagged ``raytune:<experiment>``, ending ``finished`` or
``failed``.

Importing this module imports Ray Tune; without it, one ImportError line
says what to install (``tracker-core[raytune]``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from tracker.integrations._common import plain, require

require("ray.tune", "raytune", "tracker.integrations.raytune")

from ray.tune.logger import LoggerCallback  # noqa: E402 - after the clear ImportError

from tracker.write.api import Run, start_run  # noqa: E402

__all__ = ["TrackerLoggerCallback"]

#: Entries of a Tune result that describe the trial, not its metrics (as Ray's own loggers leave them out).
EXCLUDED = frozenset({"config", "trial_id", "experiment_id", "experiment_tag", "date", "timestamp", "pid",
                      "hostname", "node_ip", "done", "should_checkpoint", "checkpoint_dir_name", "training_iteration",
                      "time_since_restore", "iterations_since_restore", "timesteps_since_restore"})


def _numbers(result: Mapping[str, Any], prefix: str = "") -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    for key, value in result.items():
        name = f"{prefix}{key}"
        if not prefix and key in EXCLUDED:
            continue
        if isinstance(value, Mapping):
            out.update(_numbers(value, f"{name}/"))
        elif type(value) is bool:
            out[name] = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            v = float(value) if isinstance(value, float) else int(value)
            if isinstance(v, int) and abs(v) > 2**53:
                v = float(v)
            out[name] = v
        elif hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy scalars, 0-d tensors
            item = value.item()
            if isinstance(item, (int, float)):
                out[name] = item
    return out


class TrackerLoggerCallback(LoggerCallback):
    """Log each Ray Tune trial as a tracker run.

    :param project: the runs' project (default: the experiment's name).
    :param tags: extra tags; ``raytune:<experiment>`` is always added.
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param excludes: more result keys to leave out.
    """

    def __init__(self, project: str | None = None, *, tags: Sequence[str] = (),
                 store: str | os.PathLike[str] | None = None, excludes: Sequence[str] = ()) -> None:
        self.project = project
        self.tags = list(tags)
        self.store = store
        self.excludes = set(excludes)
        self._runs: dict[str, Run] = {}

    def _experiment(self, trial: Any) -> str:
        name = getattr(trial, "experiment_dir_name", None)  # RunConfig(name=...)
        if not name:
            name = os.path.basename(str(getattr(trial, "local_experiment_path", "") or "").rstrip("/"))
        return str(name or "tune")

    def log_trial_start(self, trial: Any) -> None:
        """Start the trial's run (again after a restore: a new run per start is not made twice)."""
        if trial.trial_id in self._runs:
            return
        experiment = self._experiment(trial)
        self._runs[trial.trial_id] = start_run(
            self.project or experiment, str(trial), config=plain(dict(trial.config)),
            tags=[f"raytune:{experiment}", *self.tags], store=self.store, system_metrics=False)

    def log_trial_result(self, iteration: int, trial: Any, result: dict[str, Any]) -> None:
        """Log the result's numbers at its ``training_iteration``."""
        run = self._runs.get(trial.trial_id)
        if run is None:
            self.log_trial_start(trial)
            run = self._runs[trial.trial_id]
        values = {k: v for k, v in _numbers(result).items() if k not in self.excludes}
        if values:
            step = result.get("training_iteration")
            run.log(values, step=int(step) if isinstance(step, int) else None)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        """Finish the trial's run: ``failed`` when the trial raised, with Tune's error text."""
        run = self._runs.pop(trial.trial_id, None)
        if run is None:
            return
        error = None
        if failed:
            error = {"type": "TrialError", "message": "the trial raised (see Ray Tune's log)", "traceback": ""}
            text = ""
            try:  # the text Tune wrote in the trial's folder (read as text, never unpickled)
                path = trial.error_file
                if path and os.path.isfile(path):
                    with open(path, encoding="utf-8", errors="replace") as f:
                        text = f.read()
            except Exception:  # noqa: BLE001 - no error text: the run still fails
                text = ""
            lines = [line for line in text.strip().splitlines() if line.strip()]
            if lines:
                last = lines[-1].strip()
                kind, sep, message = last.partition(": ")
                ok = sep and kind.replace(".", "").replace("_", "").isalnum()
                error = {"type": kind.rsplit(".", 1)[-1] if ok else "TrialError",
                         "message": (message if ok else last)[:2000], "traceback": text[-20000:]}
        run.finish("failed" if failed else "finished", error)
