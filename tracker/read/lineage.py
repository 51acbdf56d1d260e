"""Lineage: which run made a version, which runs used it, and so on up and down, as a graph.

A run's *inputs* are the versions it used (``artifact_use`` records), its
*outputs* the versions it logged; a version's *producer* is the run that
logged its content first, its *consumers* the runs that used it. From a run
or a version, :func:`lineage` follows inputs to their producers (upstream)
and outputs to their consumers (downstream), ``depth`` versions each way,
and gives the nodes and edges that the CLI prints as a tree, JSON or
Graphviz and the dashboard draws as boxes and arrows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracker.read.registry import Collection, Registry, Version, qualified_name


def run_node_id(run: str) -> str:
    """The node id of run ``run``: ``run:<id>``."""
    return f"run:{run}"


def version_node_id(v: Version) -> str:
    """The node id of a version: ``artifact:project/name:v3``."""
    return f"artifact:{v.qualified}"


class _Graph:
    def __init__(self, registry: Registry, infos: Mapping[str, Any]) -> None:
        self.registry = registry
        self.infos = infos
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str], dict[str, Any]] = {}

    def run(self, run: str) -> str:
        nid = run_node_id(run)
        if nid not in self.nodes:
            info = self.infos.get(run)
            self.nodes[nid] = {"id": nid, "kind": "run", "run": run,
                               "name": getattr(info, "name", None), "project": getattr(info, "project", None),
                               "status": getattr(info, "status", None) if info is not None else "removed",
                               "created_at": getattr(info, "created_at", None)}
        return nid

    def version(self, c: Collection, v: Version) -> str:
        nid = version_node_id(v)
        if nid not in self.nodes:
            self.nodes[nid] = {"id": nid, "kind": "artifact", "project": v.project, "name": v.name,
                               "qualified": qualified_name(v.project, v.name), "version": v.version,
                               "type": v.type, "aliases": c.aliases_of(v.number), "sha256": v.sha256,
                               "size": v.size, "producer": v.producer, "time": v.time}
        return nid

    def edge(self, a: str, b: str, kind: str) -> None:
        self.edges.setdefault((a, b), {"from": a, "to": b, "kind": kind})

    def _cv(self, key: tuple[str | None, str], sha: str) -> tuple[Collection, Version] | None:
        c = self.registry.collections.get(key)
        v = c.version_of(sha) if c is not None else None
        return (c, v) if v is not None else None

    def up_from_run(self, run: str, depth: int, seen: set[str]) -> None:
        """Inputs of ``run``, their producers, their inputs... ``depth`` versions deep."""
        if depth <= 0 or run in seen:
            return
        seen.add(run)
        me = self.run(run)
        for key, sha, _alias in self.registry.inputs.get(run, ()):
            found = self._cv(key, sha)
            if found is None:
                continue
            c, v = found
            vid = self.version(c, v)
            self.edge(vid, me, "used")
            self.up_from_version(c, v, depth, seen)

    def up_from_version(self, c: Collection, v: Version, depth: int, seen: set[str]) -> None:
        vid = self.version(c, v)
        pid = self.run(v.producer)
        self.edge(pid, vid, "produced")
        self.up_from_run(v.producer, depth - 1, seen)

    def down_from_run(self, run: str, depth: int, seen: set[str]) -> None:
        """Outputs of ``run``, their consumers, their outputs... ``depth`` versions deep."""
        if depth <= 0 or run in seen:
            return
        seen.add(run)
        me = self.run(run)
        for key, sha in self.registry.outputs.get(run, ()):
            found = self._cv(key, sha)
            if found is None:
                continue
            c, v = found
            vid = self.version(c, v)
            self.edge(me, vid, "produced" if v.producer == run else "logged")
            self.down_from_version(c, v, depth, seen)

    def down_from_version(self, c: Collection, v: Version, depth: int, seen: set[str]) -> None:
        vid = self.version(c, v)
        for consumer in c.consumers.get(v.sha256, ()):
            self.edge(vid, self.run(consumer), "used")
            self.down_from_run(consumer, depth - 1, seen)


def lineage(registry: Registry, infos: Mapping[str, Any], *, run: str | None = None,
            version: tuple[Collection, Version] | None = None, depth: int = 3) -> dict[str, Any]:
    """The lineage graph around run ``run`` or version ``version``, ``depth`` versions up and down.

    :param infos: run id -> its :class:`tracker.RunInfo` (names and status of the runs shown; a run
        that is not there any more is shown by its id, status ``removed``).
    :returns: ``{"root": node id, "depth": depth, "nodes": [...], "edges": [...]}``; a run node has
        ``run``, ``name``, ``project``, ``status``; a version node ``qualified``, ``version``, ``type``,
        ``aliases``, ``sha256``, ``size``, ``producer``; an edge ``from``, ``to`` and ``kind``
        (``produced``: run -> version it logged first; ``logged``: logged again; ``used``: version -> run).
    """
    if depth < 1:
        raise ValueError(f"depth: expected 1 or more, given {depth}")
    g = _Graph(registry, infos)
    if run is not None:
        root = g.run(run)
        g.up_from_run(run, depth, set())
        g.down_from_run(run, depth, set())
    elif version is not None:
        c, v = version
        root = g.version(c, v)
        g.up_from_version(c, v, depth, set())
        g.down_from_version(c, v, depth, set())
    else:
        raise ValueError("lineage: give a run or a version")
    return {"root": root, "depth": depth, "nodes": list(g.nodes.values()), "edges": list(g.edges.values())}


__all__ = ["lineage", "run_node_id", "version_node_id"]
