"""Sweeps: hyperparameter search from W&B's sweep files, on Optuna; every trial is an ordinary run.
May import the core below it, and Optuna and PyYAML inside functions; only the edges (CLI, dashboard) import it.

``tracker.sweep(config)`` creates a sweep and returns its id; ``tracker.agent(id)``
runs its trials, here or in any number of other processes and machines that
share the store's folder (or a PostgreSQL storage): see docs/sweeps.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["agent", "sweep"]


def _root(store: str | os.PathLike[str] | None) -> Any:
    from tracker.core.config import resolve_store_path
    from tracker.host import get_host

    return resolve_store_path(store, get_host().config).absolute()


def sweep(sweep: Mapping[str, Any] | str | os.PathLike[str], entity: str | None = None, project: str | None = None,
          prior_runs: list[str] | None = None, *, store: str | os.PathLike[str] | None = None,
          storage: str | None = None, seed: int | None = None) -> str:
    """Create a sweep (W&B's ``wandb.sweep``) and return its id.

    :param sweep: the sweep configuration in W&B's format, as a dict or the path of a YAML/JSON file.
    :param entity: accepted for W&B scripts; there is no entity here.
    :param project: the project of the trials' runs (default: the configuration's ``project``).
    :param prior_runs: not offered (a TrackerError says so) when given.
    :param store: the store folder (default: TRACKER_STORE, tracker.toml, ./.tracker).
    :param storage: an Optuna storage URL (``postgresql://...``); default the team database when
        ``[team] url`` is set, else a journal file under the store.
    :param seed: seeds the sampler, for a reproducible sweep with one agent.
    :raises SweepConfigError: a bad configuration, one line naming the key.
    """
    from tracker.core.errors import TrackerError
    from tracker.sweeps.catalog import create_sweep
    from tracker.sweeps.config import check_sweep_config, load_sweep_file

    if prior_runs:
        raise TrackerError("sweep(prior_runs=...) is not offered: start the sweep and let its agents run trials")
    config = load_sweep_file(sweep) if isinstance(sweep, (str, os.PathLike)) else check_sweep_config(sweep)
    if storage is None:  # [team] url set: the team database holds the study
        from tracker.host import get_host
        from tracker.sweeps.storage import default_storage

        storage = default_storage(None, None, get_host().config)
    return create_sweep(config, _root(store), project=project, storage=storage, seed=seed)


def agent(sweep_id: str, function: Callable[[], Any] | None = None, entity: str | None = None,
          project: str | None = None, count: int | None = None, *, store: str | os.PathLike[str] | None = None,
          storage: str | None = None) -> int:
    """Run trials of a sweep (W&B's ``wandb.agent``) until it is done or ``count`` trials ran.

    With ``function``, each trial calls it in this process (its
    ``tracker.init()`` attaches to the trial's run and ``tracker.config`` holds the
    values); without, each trial runs the sweep's ``command`` as a child process.

    :returns: the number of trials run.
    :raises TrackerError: an unknown sweep, Optuna missing, a program that does not exist.
    """
    from tracker.sweeps.agent import run_agent
    from tracker.sweeps.study import open_sweep

    root = _root(store)
    if storage is None:  # the store's sweep.json says where; without one, the team database ([team] url)
        from tracker.host import get_host
        from tracker.sweeps.storage import default_storage

        storage = default_storage(root, sweep_id, get_host().config)
    sw = open_sweep(root, sweep_id, storage)
    if sw.meta.get("seed") is not None:  # later agents offset the seed, so they do not repeat the first
        sw = open_sweep(root, sweep_id, storage, seed_offset=len(sw.study.get_trials(deepcopy=False)))
    return run_agent(sw, count=count, function=function)
