"""The trash: ``tracker rm`` moves run folders to ``<store>/trash/runs/``, ``tracker restore`` moves them back.

The trash is laid out like a store, so the ordinary reader lists it; each
move is one ``rename(2)``, so a run is always whole in one place or the other.
"""

from __future__ import annotations

import errno
import os
import re
import time as _time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from tracker.core.errors import StoreError, TrackerError
from tracker.write.edits import fsync_wanted, named_views
from tracker.write.writer import fsync_folder

if TYPE_CHECKING:
    from tracker.core.records import RunInfo
    from tracker.read.reader import Store

#: The trash: a store-shaped folder, ``<store>/trash/runs/<run_id>/``.
TRASH = "trash"


def folder_bytes(path: Path) -> int:
    """Apparent size of every file under ``path`` (0 when it is gone)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                continue
    return total


def trash_path(store: Store) -> Path:
    """``<store>/trash``: a store-shaped folder whose ``runs/`` holds removed runs."""
    return Path(store.path) / TRASH


def trash_store(store: Store) -> Store:
    """The trash opened as a store (its runs are the removed ones), read without derived data written.

    The trash is emptied by ``gc`` folder by folder: derived data kept there would outlive its runs.
    """
    from tracker.read.reader import Store

    return Store(trash_path(store), host=store._host, write_derived=False)


def parse_age(text: str) -> float:
    """``90s``, ``30m``, ``12h``, ``7d`` or ``2w`` as seconds.

    :raises TrackerError: naming the text and the forms allowed.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", str(text))
    if not m:
        raise TrackerError(f"age {text!r}: expected a number and a unit, e.g. 90s, 30m, 12h, 7d or 2w")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]


@attrs.frozen(kw_only=True)
class RemovalPlan:
    """What ``remove_runs`` would move: the runs, their bytes, and the live runs it skips."""

    runs: list[RunInfo]
    sizes: dict[str, int]
    skipped: list[RunInfo] = attrs.field(factory=list)

    @property
    def bytes(self) -> int:
        """The apparent bytes of the runs to move."""
        return sum(self.sizes.values())


def plan_removal(store: Store, refs: Iterable[str] = (), *, project: str | None = None,
                 status: str | None = None, older_than: float | None = None,
                 tags: Iterable[str] = (), force: bool = False, now: float | None = None) -> RemovalPlan:
    """The runs named by ``refs``, or else chosen by the filters, with their sizes.

    Named runs whose writer is alive are refused unless ``force``; a
    selection skips them (they are in ``skipped``).

    :param older_than: seconds: only runs started longer ago than that.
    :raises RunNotFound: for an unknown run.
    :raises TrackerError: for a live named run without ``force``, or no runs nor filters.
    """
    refs = [refs] if isinstance(refs, str) else list(refs)
    tags = [tags] if isinstance(tags, str) else list(tags)
    selecting = project is not None or status is not None or older_than is not None or bool(tags)
    if refs and selecting:
        raise TrackerError("give run ids or a selection (--project, --status, --older-than, --tag), not both")
    if not refs and not selecting:
        raise TrackerError("no runs given: name runs, or select them with --project, --status, "
                           "--older-than or --tag")
    skipped = []
    if refs:
        infos = [v.info for v in named_views(store, refs)]
        live = [i for i in infos if i.status == "running"]
        if live and not force:
            names = ", ".join(i.id + (f" ({i.name})" if i.name else "") for i in live)
            raise TrackerError(f"run {names} is running (its writer is alive); nothing was removed; "
                               "use --force to move it anyway")
    else:
        limit = None if older_than is None else (_time.time() if now is None else now) - older_than
        infos = []
        for info in store.runs(project=project, status=status):
            if any(t not in info.tags for t in tags):
                continue
            if limit is not None and (info.created_at is None or info.created_at >= limit):
                continue
            if info.status == "running" and not force:
                skipped.append(info)
                continue
            infos.append(info)
    sizes = {i.id: folder_bytes(Path(store.path) / "runs" / i.id) for i in infos}
    return RemovalPlan(runs=infos, sizes=sizes, skipped=skipped)


def remove_runs(store: Store, plan: RemovalPlan) -> list[str]:
    """Move the planned runs into the trash, one rename each; returns the ids moved.

    :raises TrackerError: when a run of that id is in the trash already
        (checked for every run before the first is moved).
    """
    runs_dir = Path(store.path) / "runs"
    dest = trash_path(store) / "runs"
    for info in plan.runs:
        if (dest / info.id).exists():
            raise TrackerError(f"run {info.id}: a run with this id is in the trash already; restore it "
                               "or empty the trash (tracker gc) first; nothing was removed")
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create {dest}: {exc.strerror}") from None
    fsync = fsync_wanted(store)
    moved = []
    for info in plan.runs:
        try:
            os.rename(runs_dir / info.id, dest / info.id)
        except FileNotFoundError:
            continue  # removed meanwhile by another process
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise TrackerError(f"run {info.id}: a run with this id is in the trash already") from None
            raise StoreError(f"cannot move {runs_dir / info.id} to {dest}: {exc.strerror}") from None
        moved.append(info.id)
    if fsync and moved:
        fsync_folder(runs_dir)
        fsync_folder(dest)
    return moved


def restore_runs(store: Store, refs: str | Iterable[str]) -> list[RunInfo]:
    """Move runs back from the trash; returns their infos.

    :raises RunNotFound: for a run that is not in the trash.
    :raises TrackerError: when a run of the same id exists in the store again
        (checked for every run before the first is moved: nothing changes).
    """
    trash = trash_store(store)
    views = named_views(trash, refs)
    runs_dir = Path(store.path) / "runs"
    for v in views:
        if (runs_dir / v.id).exists():
            raise TrackerError(f"run {v.id} exists in the store again; nothing was restored")
    runs_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for v in views:
        try:
            os.rename(v.path, runs_dir / v.id)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise TrackerError(f"run {v.id} exists in the store again; it stays in the trash") from None
            raise StoreError(f"cannot move {v.path} to {runs_dir}: {exc.strerror}") from None
        out.append(store.run(v.id).info)
    if fsync_wanted(store) and out:
        fsync_folder(runs_dir)
    return out


def human_bytes(n: int | None) -> str:
    """Bytes as ``512 B``, ``12.3 KiB``, ``4.0 MiB``, ``1.2 GiB``."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns
