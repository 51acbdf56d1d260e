"""Hugging Face Transformers: ``Trainer(..., callbacks=[TrackerCallback(project="x")])``.

A real :class:`transformers.TrainerCallback`. At the start of training the
run starts with the ``TrainingArguments`` (top-level keys, as
``args.to_dict()`` gives them) and the model's config (under ``model``) as
its config; every ``on_log`` logs at ``state.global_step``, training values
as ``train/<name>``, evaluation values as ``eval/<name>`` and test values
as ``test/<name>`` (``epoch`` as it is). The run finishes at the end of training and is marked
``failed`` when a training or evaluation step raises. Only the main process
(``state.is_world_process_zero``) logs.

Importing this module imports Transformers; without it, one ImportError
line says what to install.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from tracker.integrations._common import RunArgs, check_flags, close_run, on_exception, plain, require, scalars

transformers = require("transformers", "transformers", "tracker.integrations.transformers")

from tracker.write.api import Run  # noqa: E402 - after the clear ImportError

__all__ = ["TrackerCallback"]

# Trainer methods whose exceptions end training; wrapped while training runs (see on_train_begin).
_GUARDED = ("training_step", "evaluate")
_ABSENT = object()


def metric_name(key: str) -> str:
    """The name a Trainer log key is logged under: ``eval_loss`` -> ``eval/loss``, ``loss`` -> ``train/loss``.

    ``epoch`` stays ``epoch``.
    """
    if key == "epoch":
        return key
    for prefix in ("eval", "test"):
        if key.startswith(prefix + "_"):
            return f"{prefix}/{key[len(prefix) + 1:]}"
    return f"train/{key}"


class TrackerCallback(transformers.TrainerCallback):
    """Log a Transformers ``Trainer`` into a tracker run.

    Takes the arguments of :func:`tracker.start_run`. With a ``run_id`` the
    callback resumes that run if it exists (``resume=None``, the default), so
    ``trainer.train(resume_from_checkpoint=...)`` with the same ``run_id``
    continues the same run in a new segment.

    :param project: free-text project.
    :param name: free-text run name (default: ``args.run_name`` when set).
    :param config: extra config; it wins over the TrainingArguments and the model's config.
    :param tags: free-text tags.
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param run_id: the run id; a fresh one by default.
    :param resume: attach to an existing run; ``None``: only when ``run_id`` is given.
    :param log_checkpoints: on every Trainer save, log the checkpoint folder
        ``checkpoint-<global_step>`` under ``args.output_dir`` as one folder
        artifact of kind ``checkpoint`` at the global step.
    :param checkpoint_copy: copy the folder's files into the store (the
        default); ``False`` records a reference (paths, sizes, sha256) only.
    """

    def __init__(self, project: str | None = None, name: str | None = None, *,
                 config: Mapping[str, Any] | None = None, tags: list[str] | None = None,
                 store: str | os.PathLike[str] | None = None, run_id: str | None = None,
                 resume: bool | None = None, log_checkpoints: bool = False,
                 checkpoint_copy: bool = True) -> None:
        check_flags("TrackerCallback", log_checkpoints=log_checkpoints, checkpoint_copy=checkpoint_copy)
        self._log_checkpoints = log_checkpoints
        self._checkpoint_copy = checkpoint_copy
        self._args = RunArgs(project, name, config, tags, store, run_id, resume)
        self._run: Run | None = None
        self._started = False
        self._reopened = False
        self._guarded: list[tuple[Any, str, Any]] = []
        self._config: dict[str, Any] = {}

    @property
    def run(self) -> Run | None:
        """The run being logged, once training started on the main process."""
        return self._run

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        """Start the run with the TrainingArguments and the model's config as its config."""
        if not state.is_world_process_zero:
            return
        self._config = self._framework_config(args, model)
        if self._args.name is None and getattr(args, "run_name", None) and args.run_name != args.output_dir:
            self._args.name = str(args.run_name)
        self._close_if_open()
        self._run = self._args.start(self._config, resume=self._started)
        self._started = True
        self._reopened = False
        trainer = _find_trainer()
        if trainer is not None:
            for attr in _GUARDED:
                if callable(getattr(trainer, attr, None)):
                    self._guarded.append((trainer, attr, trainer.__dict__.get(attr, _ABSENT)))
                    setattr(trainer, attr, self._guard(getattr(trainer, attr)))

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        """Log the Trainer's logs at ``state.global_step``."""
        if not state.is_world_process_zero or not logs:
            return
        values = scalars({metric_name(str(k)): v for k, v in logs.items()})
        if not values:
            return
        run = self._run
        if run is None or run.status != "running":
            # An evaluation after training (trainer.evaluate()): appended to the same run.
            run = self._run = self._args.start(self._config, resume=self._started)
            self._started = self._reopened = True
        run.log(values, step=int(state.global_step))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """With ``log_checkpoints``: log ``<output_dir>/checkpoint-<global_step>`` as a ``checkpoint`` artifact."""
        if not self._log_checkpoints or not state.is_world_process_zero:
            return
        run = self._run
        if run is None or run.status != "running":
            return
        name = f"checkpoint-{int(state.global_step)}"
        folder = os.path.join(args.output_dir, name)
        if not os.path.isdir(folder):
            return  # nothing was written (e.g. a save skipped by the Trainer)
        run.log_artifact(folder, name, kind="checkpoint", copy=self._checkpoint_copy, step=int(state.global_step))

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """After a standalone evaluation that reopened the run, finish it again."""
        if self._reopened and state.is_world_process_zero:
            self._close_if_open()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Finish the run."""
        self._unguard()
        if state.is_world_process_zero:
            self._close_if_open()

    # --- helpers ----------------------------------------------------------------------------

    def _framework_config(self, args: Any, model: Any) -> dict[str, Any]:
        config: dict[str, Any] = {}
        to_dict = getattr(args, "to_dict", None)
        if callable(to_dict):
            config.update(plain(to_dict()))
            for key in ("train_batch_size", "eval_batch_size"):
                value = getattr(args, key, None)
                if value is not None:
                    config[key] = plain(value)
        if model is not None:
            model_config = getattr(model, "config", None)
            dump = getattr(model_config, "to_dict", None)
            if callable(dump):
                config["model"] = plain(dump())
            config["model_class"] = f"{type(model).__module__}.{type(model).__qualname__}"
            params = getattr(model, "parameters", None)
            if callable(params):
                config["num_parameters"] = sum(int(p.numel()) for p in params())
        return config

    def _close_if_open(self, exc: BaseException | None = None) -> None:
        close_run(self._run, exc)

    def _guard(self, method: Callable[..., Any]) -> Callable[..., Any]:
        return on_exception(method, self._fail)

    def _fail(self, exc: BaseException) -> None:
        self._unguard()
        self._close_if_open(exc)

    def _unguard(self) -> None:
        for trainer, attr, before in reversed(self._guarded):
            if before is _ABSENT:
                trainer.__dict__.pop(attr, None)
            else:
                trainer.__dict__[attr] = before
        self._guarded = []


def _find_trainer() -> Any:
    """The ``Trainer`` whose ``train()`` is calling the callbacks, from the caller's frames.

    TrainerCallback hooks are not given the Trainer; its training and
    evaluation steps are wrapped so that an exception marks the run failed
    before it propagates (Transformers has no exception hook).
    """
    frame = sys._getframe(1)
    for _ in range(24):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, transformers.Trainer):
            return candidate
        frame = frame.f_back
    return None


def _register_report_to() -> None:
    """``TrainingArguments(report_to="tracker")``: the Trainer then makes a ``TrackerCallback()`` itself."""
    try:
        from transformers.integrations import integration_utils
    except ImportError:  # an older layout: report_to="tracker" is not offered, callbacks=[...] still works
        return
    table = getattr(integration_utils, "INTEGRATION_TO_CALLBACK", None)
    if isinstance(table, dict):
        table.setdefault("tracker", TrackerCallback)


_register_report_to()
