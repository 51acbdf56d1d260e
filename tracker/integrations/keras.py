"""Keras 3: ``model.fit(..., callbacks=[TrackerCallback(project="x")])``.

A real :class:`keras.callbacks.Callback`, for any Keras 3 backend. The run
starts with the fit: the optimizer (class and config), the learning rate,
the epochs, the steps per epoch and the model's parameter count are its
config. Every ``log_every`` batches the batch logs are logged as
``batch/<name>``; at each epoch's end the epoch logs under Keras's own names
(``loss``, ``accuracy``, ``val_loss``...) with ``epoch``. The step is the
global batch: the number of batches trained so far. The run finishes at the
end of the fit and is marked ``failed`` when a training step raises.

Importing this module imports Keras; without it, one ImportError line says
what to install.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from tracker.integrations._common import RunArgs, close_run, on_exception, plain, require, scalars

keras = require("keras", "keras", "tracker.integrations.keras")

from tracker.write.api import Run  # noqa: E402 - after the clear ImportError

__all__ = ["TrackerCallback"]


class TrackerCallback(keras.callbacks.Callback):
    """Log a Keras ``fit`` into a tracker run.

    Takes the arguments of :func:`tracker.start_run`. A second ``fit`` with
    the same callback (or a ``run_id`` of an existing run) continues the run,
    its steps after the batches already logged.

    :param project: free-text project.
    :param name: free-text run name.
    :param config: extra config; it wins over what the callback reads from the model.
    :param tags: free-text tags.
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param run_id: the run id; a fresh one by default.
    :param resume: attach to an existing run; ``None``: only when ``run_id`` is given.
    :param log_every: log the batch metrics every this many batches; 0 logs epochs only.
    """

    def __init__(self, project: str | None = None, name: str | None = None, *,
                 config: Mapping[str, Any] | None = None, tags: list[str] | None = None,
                 store: str | os.PathLike[str] | None = None, run_id: str | None = None,
                 resume: bool | None = None, log_every: int = 1) -> None:
        super().__init__()
        if type(log_every) is not int or log_every < 0:
            raise ValueError(f"log_every: expected an int >= 0, given {log_every!r}")
        self._args = RunArgs(project, name, config, tags, store, run_id, resume)
        self.log_every = log_every
        self._run: Run | None = None
        self._started = False
        self._base = 0  # batches trained in earlier epochs (and fits)
        self._in_epoch = 0  # batches trained in the current epoch
        self._wrapped: tuple[Any, Any] | None = None

    @property
    def run(self) -> Run | None:
        """The run being logged, once a fit started."""
        return self._run

    @property
    def step(self) -> int:
        """The global batch: batches trained so far by fits with this callback."""
        return self._base + self._in_epoch

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        """Start (or continue) the run with the optimizer, learning rate, epochs and parameter count."""
        self._finish(None)
        self._run = self._args.start(self._framework_config(), resume=self._started)
        self._started = True
        self._in_epoch = 0
        model = self.model
        train = getattr(model, "train_function", None)
        if callable(train):
            self._wrapped = (model, train)
            model.train_function = self._guard(train)

    def on_epoch_begin(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        """Count this epoch's batches from zero."""
        self._in_epoch = 0

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        """Log the batch logs every ``log_every`` global batches."""
        before = self.step
        self._in_epoch = int(batch) + 1
        every = self.log_every
        run = self._run
        if not every or run is None or not logs:
            return
        # With steps_per_execution > 1 one call covers several batches: log if any was due.
        if self.step // every > before // every:
            values = scalars(logs, prefix="batch/")
            if values:
                run.log(values, step=self.step)

    def on_epoch_end(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        """Log the epoch logs (``val_*`` included) at the epoch's last global batch."""
        run = self._run
        step = self.step
        self._base, self._in_epoch = step, 0
        if run is None:
            return
        values = {"epoch": int(epoch), **scalars(logs or {})}
        run.log(values, step=step)

    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None:
        """Finish the run."""
        self._finish(None)

    # --- helpers ----------------------------------------------------------------------------

    def _framework_config(self) -> dict[str, Any]:
        model = self.model
        params = self.params or {}
        config: dict[str, Any] = {"epochs": params.get("epochs"), "steps_per_epoch": params.get("steps")}
        if model is None:
            return config
        config["model_name"] = getattr(model, "name", None)
        try:
            config["num_parameters"] = int(model.count_params())
        except Exception:  # noqa: BLE001 - an unbuilt model has no parameter count yet
            config["num_parameters"] = None
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None:
            config["optimizer"] = type(optimizer).__name__
            try:
                config["optimizer_config"] = plain(optimizer.get_config())
            except Exception:  # noqa: BLE001 - a custom optimizer without a config
                pass
            config["learning_rate"] = _learning_rate(optimizer)
        return config

    def _finish(self, exc: BaseException | None) -> None:
        if self._wrapped is not None:
            model, train = self._wrapped
            self._wrapped = None
            if getattr(model, "train_function", None) is not train:
                model.train_function = train
        close_run(self._run, exc)

    def _guard(self, train: Callable[..., Any]) -> Callable[..., Any]:
        # Keras has no exception hook: the training step is wrapped while fit runs,
        # so that an exception marks the run failed before it propagates.
        return on_exception(train, self._finish)


def _learning_rate(optimizer: Any) -> Any:
    """The optimizer's current learning rate as a float (a schedule: its config)."""
    lr = getattr(optimizer, "learning_rate", None)
    if lr is None:
        return None
    try:
        return float(keras.ops.convert_to_numpy(lr))
    except Exception:  # noqa: BLE001 - a schedule object
        return plain(lr)
