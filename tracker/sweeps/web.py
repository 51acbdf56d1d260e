"""What the dashboard shows of sweeps, as plain JSON-ready data (no web framework here).

``GET /api/sweeps`` lists them; ``GET /api/sweeps/{id}`` gives one sweep's
facts, its trials best first, the best value so far per finished trial, and
Optuna's parameter importances. Nothing here writes: the study is only read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError


def sweeps_doc(root: Path | None) -> dict[str, Any]:
    """``{"sweeps": [...]}``: every sweep of the store, newest first, with its state and best value."""
    from tracker.sweeps.study import list_sweeps, open_sweep

    if root is None:
        return {"sweeps": []}
    out = []
    for s in list_sweeps(root):
        try:
            info = open_sweep(root, s["id"]).info()
            info.pop("config", None)
            out.append(info)
        except TrackerError as exc:  # one sweep that cannot be read is named; the others still show
            out.append({**s, "error": str(exc)})
    return {"sweeps": out}


def sweep_doc(root: Path | None, sweep_id: str) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, document)`` of one sweep: 400 for a bad id, 404 for an unknown one."""
    from tracker.sweeps.study import check_sweep_id, open_sweep, sweeps_dir

    try:
        sweep_id = check_sweep_id(sweep_id)
    except TrackerError as exc:
        return 400, {"error": str(exc)}
    if root is None or not (sweeps_dir(root) / sweep_id / "sweep.json").is_file():
        return 404, {"error": f"no sweep {sweep_id} in this store"}
    sweep = open_sweep(root, sweep_id)
    return 200, {"sweep": sweep.info(), "trials": sweep.trials(), "best_so_far": sweep.best_so_far(),
                 "importances": sweep.importances()}
