"""What the dashboard shows of sweeps, as plain JSON-ready data (no web framework here).

``GET /api/sweeps`` lists them; ``GET /api/sweeps/{id}`` gives one sweep's
facts, its trials best first, the best value so far per finished trial, and
Optuna's parameter importances. Nothing here writes: the study is only read.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tracker.core.errors import StoreUnavailable, TrackerError


def sweeps_doc(root: Path | None, storage: str | None = None) -> dict[str, Any]:
    """``{"sweeps": [...]}``: every sweep of the store, newest first, with its state and best value.

    :param storage: the team database (``postgresql://...``): its sweeps instead of a folder's.
    """
    from tracker.sweeps.catalog import list_db_sweeps, list_sweeps
    from tracker.sweeps.storage import storage_errors
    from tracker.sweeps.study import open_sweep

    if root is None and storage is None:
        return {"sweeps": []}
    out = []
    for s in list_db_sweeps(storage) if storage is not None else list_sweeps(root):
        try:
            with storage_errors(storage or s.get("storage")):
                info = open_sweep(root, s["id"], storage).info()
            info.pop("config", None)
            out.append(info)
        except StoreUnavailable:
            raise  # the database is out of reach: the page says so (503), not each sweep
        except TrackerError as exc:  # one sweep that cannot be read is named; the others still show
            out.append({**s, "error": str(exc)})
    return {"sweeps": out}


def sweep_doc(root: Path | None, sweep_id: str, storage: str | None = None) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, document)`` of one sweep: 400 for a bad id, 404 for an unknown one.

    :param storage: the team database (``postgresql://...``): the sweep is looked for there.
    """
    from tracker.sweeps.catalog import list_db_sweeps
    from tracker.sweeps.storage import check_sweep_id, storage_errors, sweeps_dir
    from tracker.sweeps.study import open_sweep

    try:
        sweep_id = check_sweep_id(sweep_id)
    except TrackerError as exc:
        return 400, {"error": str(exc)}
    if storage is not None:
        known = any(s["id"] == sweep_id for s in list_db_sweeps(storage))
    else:
        known = root is not None and (sweeps_dir(root) / sweep_id / "sweep.json").is_file()
    if not known:
        return 404, {"error": f"no sweep {sweep_id} in this store"}
    with storage_errors(storage):
        sweep = open_sweep(root, sweep_id, storage)
        return 200, {"sweep": sweep.info(), "trials": sweep.trials(), "best_so_far": sweep.best_so_far(),
                     "importances": sweep.importances()}


def sweep_summary(root: Path | None, sweep_id: str, storage: str | None = None) -> dict[str, Any]:
    """What a report says of a sweep: its facts and its best trial, as the sweep page shows them.

    ``best`` is the finished trial with the best value of the sweep's metric (``None`` before any finished):
    ``{"value", "trial" (its number), "run_id", "params"}``.

    :raises TrackerError: an unknown sweep, a storage that cannot be read, Optuna missing.
    """
    from tracker.sweeps.storage import storage_errors
    from tracker.sweeps.study import open_sweep

    with storage_errors(storage):
        sweep = open_sweep(root, sweep_id, storage)
        info, trials = sweep.info(), sweep.trials()
    best = None
    if info["metric"] is not None:
        # trials() puts the finished ones first, best first: the first with a number is the best.
        best = next((t for t in trials if t["state"] == "finished" and isinstance(t["metric"], (int, float))
                     and math.isfinite(t["metric"])), None)
    return {"id": info["id"], "name": info["name"], "metric": info["metric"], "goal": info["goal"],
            "method": info["method"], "trials": info["trials"],
            "best": None if best is None else {"value": best["metric"], "trial": best["number"],
                                               "run_id": best["run_id"], "params": best["params"]}}
