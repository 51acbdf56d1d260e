"""The sweeps a store or a database holds: a sweep created, its facts read, the sweeps listed.

``tracker sweep create`` makes the study (:mod:`tracker.sweeps.storage`
says where) and ``<store>/sweeps/<id>/sweep.json``, which names it; a sweep
made on another machine is found by its study's own attributes in the
database. Opening one to run or read its trials is
:func:`tracker.sweeps.study.open_sweep`.
"""

from __future__ import annotations

import json
import os
import secrets
import string
import time
from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError
from tracker.sweeps.config import SweepConfig
from tracker.sweeps.storage import (
    SWEEP_ID,
    check_sweep_id,
    existing_rdb_storage,
    open_storage,
    optuna,
    redact,
    storage_errors,
    sweeps_dir,
    without_password,
)

_ALPHABET = string.ascii_lowercase + string.digits


def new_sweep_id() -> str:
    """A fresh sweep id: eight lower-case letters and digits, as W&B's."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(8))


def create_sweep(config: SweepConfig, root: Path, *, project: str | None = None, storage: str | None = None,
                 seed: int | None = None, sweep_id: str | None = None) -> str:
    """Create the sweep's study and ``<store>/sweeps/<id>/sweep.json``; return the id.

    :param storage: an Optuna storage URL (``postgresql://...``); default: a journal file in the sweep's folder.
    :param seed: seeds the sampler of a lone agent (reproducible sweeps); agents started later offset it.
    """
    o = optuna()
    sweep_id = check_sweep_id(sweep_id) if sweep_id else new_sweep_id()
    folder = sweeps_dir(root) / sweep_id
    if folder.exists():
        raise TrackerError(f"sweep {sweep_id} exists already in {root}")
    try:
        folder.mkdir(parents=True)
    except OSError as exc:
        raise TrackerError(f"cannot create {folder}: {exc.strerror or exc}") from None
    meta = {"id": sweep_id, "created_at": time.time(), "project": project or config.project,
            "storage": without_password(storage), "seed": seed, "config": config.raw}
    study = o.create_study(study_name=sweep_id, storage=open_storage(storage, folder),
                           direction="maximize" if config.goal == "maximize" and config.metric else "minimize",
                           load_if_exists=False)
    study.set_user_attr("tracker", {k: v for k, v in meta.items() if k != "storage"})
    tmp = folder / "sweep.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, folder / "sweep.json")
    return sweep_id


def read_meta(root: Path | None, sweep_id: str, storage: str | None = None) -> dict[str, Any]:
    """The sweep's facts: from ``sweep.json`` in the store, else (``storage`` given) from the study itself.

    :param root: the store folder, or ``None`` for a sweep that only the database at ``storage`` holds.
    """
    sweep_id = check_sweep_id(sweep_id)
    path = sweeps_dir(root) / sweep_id / "sweep.json" if root is not None else None
    if path is not None and path.is_file():
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise TrackerError(f"{path}: cannot be read: {exc}") from None
        if storage is not None:
            meta["storage"] = storage
        return meta
    if storage is None:
        raise TrackerError(f"no sweep {sweep_id} in {root} (create one with `tracker sweep create FILE`; a sweep "
                           "in a database needs --storage URL)")
    o = optuna()
    try:
        study = o.load_study(study_name=sweep_id, storage=open_storage(storage, None))
    except KeyError:
        raise TrackerError(f"no sweep {sweep_id} in {redact(storage)}") from None
    meta = dict(study.user_attrs.get("tracker") or {})
    if "config" not in meta:
        raise TrackerError(f"study {sweep_id} in {redact(storage)} was not made by `tracker sweep create`")
    meta["storage"] = storage
    return meta


def list_db_sweeps(url: str) -> list[dict[str, Any]]:
    """Every sweep whose study is in the database at ``url`` (made by ``tracker sweep create``), newest first.

    A database that holds no Optuna tables (no sweep ever used it) has none; nothing is created in it.

    :raises TrackerError: the database cannot be reached (one line, the password masked).
    """
    storage = existing_rdb_storage(url)
    if storage is None:
        return []
    with storage_errors(url):
        studies = storage.get_all_studies()
    out = []
    for study in studies:
        meta = study.user_attrs.get("tracker")
        if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict) or \
                not SWEEP_ID.fullmatch(study.study_name):
            continue  # a study of someone's own Optuna code, in the same database
        out.append(_listed(study.study_name, meta, redact(url)))
    return sorted(out, key=lambda m: -(m.get("created_at") or 0))


def _listed(sweep_id: str, meta: dict[str, Any], storage: str) -> dict[str, Any]:
    cfg = meta.get("config") or {}
    metric = cfg.get("metric")
    return {"id": sweep_id, "name": cfg.get("name"), "project": meta.get("project"), "method": cfg.get("method"),
            "metric": metric.get("name") if isinstance(metric, dict) else metric,
            "created_at": meta.get("created_at"), "storage": storage}


def list_sweeps(root: Path) -> list[dict[str, Any]]:
    """Every sweep of the store (newest first), from the ``sweep.json`` files: id, name, project, method."""
    out = []
    folder = sweeps_dir(root)
    if not folder.is_dir():
        return out
    for d in folder.iterdir():
        path = d / "sweep.json"
        if not SWEEP_ID.fullmatch(d.name) or not path.is_file():
            continue
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.append(_listed(d.name, meta, redact(meta.get("storage")) or "journal"))
    return sorted(out, key=lambda m: -(m.get("created_at") or 0))


__all__ = ["create_sweep", "list_db_sweeps", "list_sweeps", "new_sweep_id", "read_meta"]
