"""``Store`` and ``RunView`` as users get them: the read core's reader plus the capabilities' methods.

The read core (:mod:`tracker.read.reader`, :mod:`tracker.read.index`, :mod:`tracker.read.segment`,
:mod:`tracker.core.format`) imports no capability folder. The methods users call on a
store that belong to a capability (editing and the trash in ``lifecycle``, SQL in
``query``, artifacts in ``capture``) are added here, each importing its
capability only when called, so that the arrows run one way: capabilities
import the core, and this module stands above both.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.core.records import RunInfo
from tracker.read import reader
from tracker.write.artifact_methods import ArtifactMethods

if TYPE_CHECKING:
    import duckdb

    from tracker.capture.blobs import BlobStore
    from tracker.remote.reading import RemoteStore
    from tracker.team.postgres import TeamStore


class RunView(reader.RunView):
    """One run of a store, read-only (see :class:`tracker.read.reader.RunView`), with its artifacts."""

    def artifacts(self) -> list[Any]:
        """Every :class:`tracker.Artifact` the run logged, in log order (one per record: a name logged
        twice appears twice); ``.version``, ``.aliases`` and the rest come from the store's registry."""
        from tracker.capture.artifacts import artifacts
        from tracker.capture.blobs import BlobStore
        from tracker.write.wandb.artifact import Artifact

        store = getattr(self, "parent", None) or Store(self.store, self._host, write_derived=self._writable.ok)
        blobs = BlobStore(self.store)
        project = self.info.project
        return [Artifact._read(store, blobs, project, rec, run=self.id) for rec in artifacts(self)]

    def open_artifact(self, name: str) -> Any:
        """A binary file object over the latest version of file artifact ``name``.

        :raises TrackerError: no such artifact, or a folder; :class:`StoreError`: its bytes are missing.
        """
        from tracker.capture.artifacts import open_artifact

        return open_artifact(self, name)

    def copy_artifact(self, name: str, dest: str | os.PathLike[str]) -> Path:
        """Copy artifact ``name`` (a file or a folder) to ``dest``, every hash checked; returns ``dest``.

        :raises StoreError: a missing or damaged blob or referenced file (nothing is left at ``dest``).
        """
        from tracker.capture.artifacts import copy_artifact

        return copy_artifact(self, name, dest)



class Store(reader.Store, ArtifactMethods):
    """A store folder opened for reading (see :class:`tracker.read.reader.Store`), with SQL, editing and
    the artifact registry (``artifact``, ``artifacts``, ``lineage``, ``set_alias``, ``remove_alias``)."""

    view_class = RunView

    def _view(self, run_id: str, bounds: dict[str, int] | None = None) -> RunView:
        view = super()._view(run_id, bounds)
        view.parent = self  # its artifacts are read through this store's registry
        return view  # type: ignore[return-value]

    def _alias_edit(self, run_id: str, data: dict[str, Any]) -> None:
        from tracker.write.artifacts import folder_alias_edit

        folder_alias_edit(self, run_id, data)

    def _sources_host(self) -> Any:
        return self.host  # a name this folder does not know: the team database, when [team] url is set

    @property
    def blobs(self) -> BlobStore:
        """The store's blobs by SHA-256 (``<store>/blobs/sha256/``), read checked (the reading protocol)."""
        from tracker.capture.blobs import BlobStore

        return BlobStore(self.path)

    def sql(self, query: str, *, use_index: bool = True) -> duckdb.DuckDBPyRelation:
        """Run SQL over the views ``runs``, ``metrics``, ``records``, ``metric_stats`` and one per schema (DuckDB).

        :param use_index: read the store's derived columns (``<store>/index/``, kept up to date by
            every reader); ``False`` parses the JSONL (the same answers, slower).
        :raises QueryError: carrying DuckDB's message.
        :raises TrackerError: when DuckDB is not installed (``pip install "tracker-core[query]"``).
        """
        from tracker.query.sql import query as run_query

        return run_query(self, query, use_index=use_index)

    def aggregate(self, metric: str, by: str | None = "group", runs: Iterable[Any] | None = None,
                  stat: str = "mean", band: Any = "std", max_points: int = 1000) -> dict[Any, dict[str, Any]]:
        """Per group of runs, ``metric``'s mean (or median) and band on a common step grid.

        ``{group value: {"n", "step", "count", "mean"|"median", "std", "lo", "hi", "min", "max", "runs"}}``;
        see :func:`tracker.read.aggregate.aggregate` and docs/reports.md.

        :param by: ``group``, ``job_type``, ``project``, ``tag``, ``name`` or ``config.KEY`` (``None``: one group).
        :param runs: run ids, prefixes, names or RunInfos (default: every run).
        :param band: ``"std"``, ``"minmax"`` or a percentile pair such as ``(10, 90)``.
        :raises TrackerError: a ``by`` no run has, a metric no run logged, a bad argument (one line).
        """
        from tracker.read.aggregate import aggregate

        return aggregate(self, metric, by, runs, stat, band, max_points)

    # --- changes after the fact: appended events and whole-folder renames -----------

    def tag(self, runs: str | Iterable[str], add: Iterable[str] = (), remove: Iterable[str] = ()) -> list[RunInfo]:
        """Add and remove tags of runs (ids, prefixes or names); returns their infos after the edit.

        :raises RunNotFound: an unknown run; :raises TrackerError: a bad tag (nothing changes).
        """
        from tracker.lifecycle import tag_runs

        return tag_runs(self, runs, add, remove)

    def rename(self, run: str, name: str) -> RunInfo:
        """Give a run a new name (one line, not blank)."""
        from tracker.lifecycle import rename_run

        return rename_run(self, run, name)

    def note(self, run: str, text: str, *, append: bool = False) -> RunInfo:
        """Set a run's notes, or with ``append`` add ``text`` as a line after them."""
        from tracker.lifecycle import note_run

        return note_run(self, run, text, append=append)

    def update_config(self, run: str, values: dict[str, Any]) -> RunInfo:
        """Set top-level config keys of a run (appended; the start config is kept)."""
        from tracker.lifecycle import update_config

        return update_config(self, run, values)

    def update_summary(self, run: str, values: dict[str, Any]) -> RunInfo:
        """Set summary values of a run (appended; last write wins)."""
        from tracker.lifecycle import update_summary

        return update_summary(self, run, values)

    def remove(self, runs: str | Iterable[str] = (), *, project: str | None = None, status: str | None = None,
               older_than: float | str | None = None, tags: Iterable[str] = (), force: bool = False,
               dry_run: bool = False) -> list[RunInfo]:
        """Move runs to the trash (by id, or by selection); returns the runs moved (or, dry, to move).

        A named run whose writer is alive is refused unless ``force``; a
        selection skips such runs. ``older_than``: seconds, or text like ``"7d"``.
        """
        from tracker.lifecycle import parse_age, plan_removal, remove_runs

        age = parse_age(older_than) if isinstance(older_than, str) else older_than
        plan = plan_removal(self, runs, project=project, status=status, older_than=age, tags=tags, force=force)
        if dry_run:
            return plan.runs
        moved = set(remove_runs(self, plan))
        return [i for i in plan.runs if i.id in moved]

    def restore(self, runs: str | Iterable[str]) -> list[RunInfo]:
        """Move runs back from the trash; an id that exists again is refused (nothing moves)."""
        from tracker.lifecycle import restore_runs

        return restore_runs(self, runs)

    def trashed(self) -> list[RunInfo]:
        """The runs in the trash, newest first (``tracker runs --trash``)."""
        from tracker.lifecycle import trash_store

        return trash_store(self).runs()

    def gc(self, *, dry_run: bool = False) -> Any:
        """Empty the trash and remove blobs no run references (never one younger than an hour)."""
        from tracker.lifecycle import collect_garbage

        return collect_garbage(self, dry_run=dry_run)

    def du(self) -> dict[str, Any]:
        """Bytes per run and per project, largest first, and the total (see ``tracker du``)."""
        from tracker.lifecycle import disk_usage

        return disk_usage(self)


def _store_of(store: Any) -> Any:
    return store if hasattr(store, "set_alias") else open_store(store)


def set_alias(ref: str, alias: str, store: Any = None) -> Any:
    """Point ``alias`` (``prod``, ``best``...) at the version ``ref`` names (``mnist-cnn:v3``), moving it
    from the version it named; returns that version (:class:`tracker.Artifact`).

    :param store: a store, its folder or a ``postgresql://`` URL (default: as :func:`open_store`).
    :raises TrackerError: ``latest``, ``v<digits>`` or bad characters as the alias; an unknown version;
        a team database that this role may not write.
    """
    return _store_of(store).set_alias(ref, alias)


def remove_alias(ref: str, alias: str, store: Any = None) -> None:
    """Remove ``alias`` from the named artifact ``ref`` (an appended edit; its history is kept).

    :raises TrackerError: the name has no such alias (the message lists its aliases).
    """
    _store_of(store).remove_alias(ref, alias)


def open_store(path: str | os.PathLike[str] | None = None) -> Store | TeamStore | RemoteStore:
    """Open a store for reading (default: TRACKER_STORE, tracker.toml, ./.tracker).

    A ``postgresql://`` URL opens the team database with the same reading API; an ``https://`` URL
    (``http://`` to a loopback address) a ``tracker server``, read with a read key
    (``TRACKER_API_KEY`` or ``tracker login``).
    """
    target = path if path is not None else os.environ.get("TRACKER_STORE")
    if isinstance(target, str) and target.startswith(("postgresql://", "postgres://")):
        from tracker.team.postgres import open_team_store

        return open_team_store(target)
    if isinstance(target, str) and target.lower().startswith(("http://", "https://")):
        from tracker.remote.reading import open_remote_store

        return open_remote_store(target)
    return Store(path)


