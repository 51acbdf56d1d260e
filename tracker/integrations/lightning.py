"""PyTorch Lightning: ``Trainer(logger=TrackerLogger(project="x"))``.

A real :class:`lightning.pytorch.loggers.Logger`. The run starts when
training is about to begin (Lightning's ``log_graph`` call, or the first
metrics), so the hyperparameters Lightning logs first (``save_hyperparameters``,
a Namespace, nested dicts) become the run's config, with the model's class
and parameter count. ``finalize("success")`` finishes the run; a failed fit
(Lightning calls ``finalize("failed")``) marks it ``failed`` with the
exception. Under DDP only global rank zero logs, unless ``all_ranks=True``:
then every rank logs into the same run, each into its own segment.

Importing this module imports Lightning; without it, one ImportError line
says what to install.
"""

from __future__ import annotations

import os
import sys
import warnings
from argparse import Namespace
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracker.integrations._common import RunArgs, check_flags, new_run_id, plain, require, scalars

require("lightning.pytorch", "lightning", "tracker.integrations.lightning")

from lightning.fabric.utilities.logger import _add_prefix  # noqa: E402 - after the clear ImportError
from lightning.fabric.utilities.rank_zero import rank_zero_only  # noqa: E402
from lightning.pytorch import Trainer  # noqa: E402
from lightning.pytorch.loggers import Logger  # noqa: E402
from lightning.pytorch.loggers.logger import DummyExperiment  # noqa: E402

from tracker.host.bus import TrackerWarning  # noqa: E402
from tracker.write.api import Run  # noqa: E402

__all__ = ["TrackerLogger"]

# Lightning's finalize statuses: "success" after fit/validate/test, "finished" when a
# cluster signal ends training early, "failed" after an exception.
_FINISHED = frozenset({"success", "finished"})


class TrackerLogger(Logger):
    """Log a Lightning ``Trainer`` into a tracker run.

    Takes the arguments of :func:`tracker.start_run`. With a ``run_id`` the
    logger resumes that run if it exists (``resume=None``, the default), so a
    fit resumed from a checkpoint (``trainer.fit(model, ckpt_path=...)``)
    with the same ``run_id`` continues the same run in a new segment.

    :param project: free-text project; also Lightning's experiment ``name``.
    :param name: free-text run name.
    :param config: extra config; it wins over the hyperparameters Lightning logs.
    :param tags: free-text tags.
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param run_id: the run id; a fresh one by default (``TRACKER_RUN_ID`` is honoured).
    :param resume: attach to an existing run; ``None``: only when ``run_id`` is given.
    :param all_ranks: under DDP every rank logs into the run (its own segment),
        instead of global rank zero only.
    :param save_dir: where Lightning puts checkpoints and other files
        (``save_dir/name/version/checkpoints``, and LightningCLI's
        ``config.yaml``); ``None``: Lightning's default, the Trainer's
        ``default_root_dir``. The store holds records only, unless
        ``log_checkpoints`` is set.
    :param prefix: put at the start of every metric name, joined with ``-``
        (``prefix="fold1"``: ``fold1-train/loss``), as Lightning's own loggers do.
    :param log_checkpoints: log the checkpoints a ``ModelCheckpoint`` saves
        (its best and last ones) as artifacts of kind ``checkpoint``, at the
        global step; a file logged before and unchanged since is not logged again.
    :param checkpoint_copy: copy the checkpoint's bytes into the store (the
        default); ``False`` records a reference (path, size, sha256) only.
    """

    def __init__(self, project: str | None = None, name: str | None = None, *,
                 config: Mapping[str, Any] | None = None, tags: list[str] | None = None,
                 store: str | os.PathLike[str] | None = None, run_id: str | None = None,
                 resume: bool | None = None, all_ranks: bool = False,
                 save_dir: str | os.PathLike[str] | None = None, log_checkpoints: bool = False,
                 checkpoint_copy: bool = True, prefix: str = "") -> None:
        super().__init__()
        if type(prefix) is not str:
            raise TypeError(f"TrackerLogger: prefix expects a str, given {type(prefix).__name__} {prefix!r}")
        check_flags("TrackerLogger", log_checkpoints=log_checkpoints, checkpoint_copy=checkpoint_copy)
        env_id = os.environ.get("TRACKER_RUN_ID")
        if run_id is None and env_id:
            run_id, resume = env_id, True
        self._args = RunArgs(project, name, config, tags, store, run_id, resume)
        # An id known before the run starts: Lightning asks for ``version`` while setting up.
        self._explicit_id = run_id is not None
        if self._args.run_id is None:
            self._args.run_id = new_run_id()
        self._all_ranks = bool(all_ranks)
        self._save_dir = None if save_dir is None else os.fspath(save_dir)
        self._prefix = prefix
        self._hparams: dict[str, Any] = {}
        self._run: Run | None = None
        self._started = False
        self._agreed = False
        self._log_checkpoints = log_checkpoints
        self._checkpoint_copy = checkpoint_copy
        # checkpoint path -> (size, mtime_ns) when it was logged
        self._logged_checkpoints: dict[str, tuple[int, int]] = {}

    # --- what Lightning asks ---------------------------------------------------------------

    @property
    def name(self) -> str:
        """Lightning's experiment name: the project (``lightning_logs`` without one)."""
        return self._args.project if self._args.project is not None else "lightning_logs"

    @property
    def version(self) -> str:
        """The run id."""
        return str(self._args.run_id)

    #: Lightning's loggers join ``prefix`` and a metric name with this.
    LOGGER_JOIN_CHAR = "-"

    @property
    def save_dir(self) -> str | None:
        """Where Lightning saves checkpoints (``save_dir/name/version/checkpoints``): the ``save_dir`` given.

        ``None`` when none was given, so that Lightning's own default applies:
        checkpoints under the Trainer's ``default_root_dir``, as without a
        logger. ``trainer.log_dir`` (where LightningCLI saves its
        ``config.yaml``) is then that ``default_root_dir`` too, as it is for a
        Trainer without loggers, instead of ``None``.
        """
        if self._save_dir is not None:
            return self._save_dir
        return _default_root_dir_for_log_dir(sys._getframe(1))

    @property
    def root_dir(self) -> str:
        """The store's ``runs`` folder, where every run has its folder."""
        return str(self._store_path() / "runs")

    @property
    def log_dir(self) -> str:
        """The run's folder in the store."""
        return str(self._store_path() / "runs" / self.version)

    @property
    def experiment(self) -> _RunHandle:
        """The run, as a handle that starts it on first use (``logger.experiment.log({...})``).

        Lightning touches this on every rank while setting up; with
        ``all_ranks=True`` and no ``run_id`` given, rank zero's run id is then
        broadcast, so that every rank logs into the same run.
        """
        if not self._logs_here():
            return DummyExperiment()  # as Lightning's own loggers on ranks other than zero
        if self._all_ranks and not self._agreed:
            self._agree_on_run_id()
        return _RunHandle(self)

    def log_hyperparams(self, params: dict[str, Any] | Namespace, *args: Any, **kwargs: Any) -> None:
        """Record hyperparameters (a dict, possibly nested, or a Namespace) as the run's config.

        Hyperparameters that arrive after the run started cannot join its
        config: a warning names them.
        """
        if not self._logs_here():
            return
        values = plain(params)
        if not isinstance(values, dict):
            raise TypeError(f"log_hyperparams: expected a dict or a Namespace, given {type(params).__name__}")
        if self._started:
            new = {k: v for k, v in values.items() if self._hparams.get(k, object()) != v}
            if new:
                warnings.warn(f"tracker: hyperparameters logged after run {self.version} started are not "
                              f"in its config: {sorted(new)}", TrackerWarning, stacklevel=2)
            return
        self._hparams.update(values)

    def log_graph(self, model: Any, input_array: Any = None) -> None:
        """Lightning calls this once a fit (or test) is set up: the run starts here.

        The model's class and parameter count join the config.
        """
        if not self._logs_here():
            return
        if not self._started:
            self._hparams.setdefault("model_class", f"{type(model).__module__}.{type(model).__qualname__}")
            params = getattr(model, "parameters", None)
            if callable(params):
                self._hparams.setdefault("num_parameters", sum(int(p.numel()) for p in params()))
        self._ensure_run()

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Log metrics at ``step`` (tensors, numpy scalars and numbers; other values are left out)."""
        if not self._logs_here():
            return
        values = scalars(_add_prefix(dict(metrics), self._prefix, self.LOGGER_JOIN_CHAR))
        if values:
            self._ensure_run().log(values, step=None if step is None else int(step))

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        """Lightning calls this after a ``ModelCheckpoint`` saved: with ``log_checkpoints``, log its files.

        The callback's best and last checkpoints that exist and changed since
        they were last logged become ``checkpoint`` artifacts named after
        their file, at the global step of the save.
        """
        if not self._log_checkpoints or not self._logs_here():
            return
        paths: list[str] = []
        for attr in ("best_model_path", "last_model_path"):
            value = getattr(checkpoint_callback, attr, None)
            if value and os.fspath(value) not in paths:
                paths.append(os.fspath(value))
        step = getattr(checkpoint_callback, "_last_global_step_saved", None)
        step = int(step) if isinstance(step, int) and step >= 0 else None
        run = self._ensure_run()
        for path in paths:
            try:
                st = os.stat(path)
            except OSError:
                continue  # removed since (a top-k checkpoint replaced by a better one)
            key = os.path.abspath(path)
            stamp = (st.st_size, st.st_mtime_ns)
            if self._logged_checkpoints.get(key) == stamp:
                continue
            run.log_artifact(path, os.path.basename(path), kind="checkpoint", copy=self._checkpoint_copy, step=step)
            self._logged_checkpoints[key] = stamp

    def save(self) -> None:
        """Nothing to do: every record is on disk when ``log_metrics`` returns."""

    def finalize(self, status: str) -> None:
        """Finish the run: ``success`` as ``finished``, ``failed`` as ``failed`` with the exception.

        A later fit, validation or test with this logger appends to the same run.
        """
        run = self._run
        if run is None or run.status != "running":
            return
        if status in _FINISHED:
            run.finish("finished")
        else:
            exc = sys.exc_info()[1]
            run.finish("failed", exc if exc is not None else {"type": "LightningError",
                                                              "message": f"Lightning finalized with {status!r}"})

    # --- the run ----------------------------------------------------------------------------

    def _logs_here(self) -> bool:
        return self._all_ranks or getattr(rank_zero_only, "rank", 0) == 0

    def _store_path(self) -> Path:
        if self._run is not None:
            return self._run.store
        from tracker.core.config import resolve_store_path
        from tracker.host.host import get_host

        return resolve_store_path(self._args.store, get_host().config).absolute()

    def _agree_on_run_id(self) -> None:
        """Take global rank zero's run id on every rank (a collective call, made by all ranks at once)."""
        self._agreed = True
        if self._explicit_id:
            return
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            box = [self._args.run_id]
            dist.broadcast_object_list(box, src=0)
            self._args.run_id = box[0]

    def _ensure_run(self) -> Run:
        run = self._run
        if run is not None and run.status == "running":
            return run
        # With all ranks logging, whichever rank comes first creates the run and the others attach.
        again = self._started or self._all_ranks
        self._run = run = self._args.start(self._hparams, resume=again)
        self._started = True
        return run

    def __getstate__(self) -> dict[str, Any]:
        # ddp_spawn pickles the logger into each process; a Run stays with its process.
        state = self.__dict__.copy()
        state["_run"] = None
        return state


def _default_root_dir_for_log_dir(caller: Any) -> str | None:
    """The Trainer's ``default_root_dir`` when ``caller`` is ``Trainer.log_dir``, else ``None``.

    ``Trainer.log_dir`` answers a logger's ``save_dir`` as it is, and
    LightningCLI's config callback asserts it is not ``None``; every other
    reader of ``save_dir`` (the checkpoint callback) falls back to
    ``default_root_dir`` on ``None`` by itself. So ``log_dir`` gets the
    folder it gives without loggers, and the others see ``None``.
    """
    if caller is None or caller.f_code is not _LOG_DIR_CODE:
        return None
    trainer = caller.f_locals.get("self")
    return trainer.default_root_dir if isinstance(trainer, Trainer) else None


# The code of the ``Trainer.log_dir`` property (None if a Lightning release made it something else).
_LOG_DIR_CODE = getattr(getattr(getattr(Trainer, "log_dir", None), "fget", None), "__code__", None)


class _RunHandle:
    """``logger.experiment``: forwards to the :class:`tracker.Run`, started on first use.

    On a rank that does not log, every method is a no-op.
    """

    def __init__(self, logger: TrackerLogger) -> None:
        self._logger = logger

    def __getattr__(self, attr: str) -> Any:
        if not self._logger._logs_here():
            return lambda *args, **kwargs: None
        return getattr(self._logger._ensure_run(), attr)

    def __repr__(self) -> str:
        return f"<TrackerLogger run {self._logger.version}>"
