"""The artifact registry's methods on a store (``artifact``, ``artifacts``, ``lineage``, ``set_alias``,
``remove_alias``), shared by the folder store and the team store; and the artifact methods of a run read from a
team database or a server (:class:`RunArtifactMethods`).

Kept apart from :mod:`tracker.write.artifacts` and light to import: opening a store to read its runs
imports none of the registry, the W&B ``Artifact`` class or the alias writing until one of these is called.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.core.errors import TrackerError

if TYPE_CHECKING:
    from tracker.read.registry import Collection, Registry, Version
    from tracker.write.wandb.artifact import Artifact, ArtifactCollection


class ArtifactMethods:
    """``artifact``, ``artifacts``, ``lineage``, ``set_alias``, ``remove_alias`` over a store's registry.

    A store gives ``registry()``, ``runs()``, ``blobs`` and ``_alias_edit(run_id, data)``.
    """

    def registry(self) -> Registry:  # pragma: no cover - provided by the store
        raise NotImplementedError

    def _alias_edit(self, run_id: str, data: dict[str, Any]) -> None:  # pragma: no cover - provided by the store
        raise NotImplementedError

    def _artifact_blobs(self) -> Any:
        return self.blobs  # type: ignore[attr-defined]

    def _sources_host(self) -> Any:
        """The host whose ``tracker_artifact_sources`` :meth:`artifact` asks for names this store does not
        know (``None``: none; the team database asks nowhere else)."""
        return None

    def artifact(self, ref: str, type: str | None = None) -> Artifact:
        """The version ``ref`` names: ``name`` (its latest), ``name:v3``, ``name:prod``; ``project/`` in front
        when two projects use one name. A folder store that does not know it asks the team database
        (``[team] url``; see :func:`find_version`).

        :raises ArtifactNotFound: an unknown name, version or alias, naming the ones that exist;
            :class:`TrackerError`: the team database could not be asked.
        """
        from tracker.write.artifacts import find_version, source_blobs
        from tracker.write.wandb.artifact import Artifact

        owner, c, v, spec = find_version(self, self._sources_host(), ref)
        if type is not None and type != c.type:
            raise TrackerError(f"artifact {c.qualified!r} is of type {c.type!r}, not {type!r}")
        a = Artifact._read(owner, self._artifact_blobs() if owner is self else source_blobs(owner), c.project, v)
        a.asked = spec
        return a

    def artifacts(self, type: str | None = None, project: str | None = None) -> list[ArtifactCollection]:
        """Every named artifact (of one type, of one project): versions, aliases and their history."""
        from tracker.write.wandb.artifact import ArtifactCollection

        blobs = self._artifact_blobs()
        return [ArtifactCollection(self, blobs, c) for c in self.registry().names(type=type, project=project)]

    def artifact_collection(self, ref: str) -> ArtifactCollection:
        """The named artifact ``ref`` (``name`` or ``project/name``): every version and alias."""
        from tracker.read.registry import split_ref
        from tracker.write.wandb.artifact import ArtifactCollection

        base, spec = split_ref(ref)
        if spec is not None:
            raise TrackerError(f"artifact {ref!r}: expected a name without a version here")
        return ArtifactCollection(self, self._artifact_blobs(), self.registry().collection(base))

    def lineage(self, ref: str, depth: int = 3) -> dict[str, Any]:
        """The lineage graph of a run (its id, a prefix or its name) or of a version (``name[:version]``).

        A ``ref`` that names a run is a run; otherwise a version (see :func:`tracker.read.lineage.lineage`).
        """
        from tracker.core.errors import RunNotFound
        from tracker.read.lineage import lineage

        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise TrackerError(f"lineage: depth expects a whole number of 1 or more, given {depth!r}")
        registry = self.registry()
        infos = registry.infos if registry.infos is not None else \
            {i.id: i for i in self.runs()}  # type: ignore[attr-defined]
        run_id = None
        if ":" not in ref:
            try:
                run_id = self.run(ref).id  # type: ignore[attr-defined]
            except RunNotFound:
                run_id = None
        if run_id is not None:
            return lineage(registry, infos, run=run_id, depth=depth)
        try:
            c, v, _ = registry.find(ref)
        except TrackerError as exc:
            if ":" in ref:
                raise
            raise TrackerError(f"{ref!r} is neither a run nor an artifact: {exc}") from None
        return lineage(registry, infos, version=(c, v), depth=depth)

    def set_alias(self, ref: str, alias: str) -> Artifact:
        """Point ``alias`` at the version ``ref`` names (moving it from the version it named); returns it.

        An edit event, appended: the alias's history keeps every change.

        :raises TrackerError: ``latest``, ``v<digits>`` or bad characters as the alias; an unknown version.
        """
        from tracker.core.rules import check_alias

        alias = check_alias(alias)
        c, v, _ = self.registry().find(ref)
        if c.aliases.get(alias) != v.number:
            self._alias_edit(v.producer, _alias_data("set", c, v, alias))
        return self.artifact(f"{c.qualified}:{v.version}")

    def remove_alias(self, ref: str, alias: str) -> None:
        """Remove ``alias`` from the name ``ref`` (``name`` or ``project/name``; ``name:v3`` when it must be
        on v3), as an appended edit event.

        :raises TrackerError: the name has no such alias (the message lists its aliases), or ``latest``.
        """
        from tracker.core.rules import check_alias
        from tracker.read.registry import split_ref

        alias = check_alias(alias)
        base, spec = split_ref(ref)
        registry = self.registry()
        c = registry.collection(base)
        number = c.aliases.get(alias)
        if number is None:
            raise TrackerError(f"artifact {c.qualified!r} has no alias {alias!r} ({c.describe()})")
        v = c.version(number)
        if spec is not None and c.pick(spec).number != number:
            raise TrackerError(f"alias {alias!r} of {c.qualified!r} names {v.version}, not {spec}; nothing changed")
        self._alias_edit(v.producer, _alias_data("remove", c, v, alias))


def _alias_data(op: str, c: Collection, v: Version, alias: str) -> dict[str, Any]:
    from tracker.read.registry import ALIAS_EDIT
    from tracker.write.artifacts import user

    return {ALIAS_EDIT: {"op": op, "project": c.project, "name": c.name, "alias": alias, "sha256": v.sha256,
                         "version": v.version, "user": user()}}


class RunArtifactMethods:
    """``artifacts``, ``open_artifact``, ``copy_artifact`` of a run whose store gives ``blobs`` (the team
    database's bucket, a server's blobs): those of :class:`tracker.RunView`, the bytes fetched from there."""

    def artifacts(self) -> list[Any]:
        """Every :class:`tracker.Artifact` the run logged, in log order (bytes in the store's blobs)."""
        from tracker.capture.artifacts import artifacts
        from tracker.write.wandb.artifact import Artifact

        project, blobs = self.info.project, self.store.blobs  # type: ignore[attr-defined]
        return [Artifact._read(self.store, blobs, project, rec, run=self.id)  # type: ignore[attr-defined]
                for rec in artifacts(self)]

    def open_artifact(self, name: str) -> Any:
        """A binary file over file artifact ``name``, fetched from the store's blobs (checked, cached)."""
        from tracker.capture.artifacts import open_artifact

        return open_artifact(self, name)

    def copy_artifact(self, name: str, dest: str | os.PathLike[str]) -> Path:
        """Copy artifact ``name`` (a file or a folder) from the store's blobs to ``dest``, every hash checked."""
        from tracker.capture.artifacts import copy_artifact

        return copy_artifact(self, name, dest)


__all__ = ["ArtifactMethods", "RunArtifactMethods"]
