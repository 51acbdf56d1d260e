"""What the dashboard shows of named artifacts, as plain JSON-ready data (no web framework here).

``GET /api/artifacts`` lists names (type, versions, the latest, aliases);
``GET /api/artifact?ref=NAME`` gives a name's versions with their producers,
consumers and the alias history, ``?ref=NAME:VERSION`` one version with its
files and where to download each; ``GET /api/lineage?ref=RUN|NAME:VERSION``
the lineage graph the page draws (see :func:`tracker.read.lineage.lineage`).
Downloads are the producer run's blob URLs (``/api/runs/{id}/blobs/{sha}``),
which serve only blobs that run names, hash checked.
"""

from __future__ import annotations

from typing import Any

from tracker.core.errors import TrackerError


class NotFound(TrackerError):
    """An unknown name, version or run: the dashboard answers 404 with the message."""


def _infos(store: Any, registry: Any) -> dict[str, Any]:
    infos = getattr(registry, "infos", None)
    return infos if infos is not None else {i.id: i for i in store.runs()}


def _run(infos: dict[str, Any], run_id: str) -> dict[str, Any]:
    info = infos.get(run_id)
    if info is None:
        return {"id": run_id, "name": None, "status": "removed", "project": None}
    return {"id": run_id, "name": info.name, "status": info.status, "project": info.project}


def artifacts_doc(store: Any, type: str | None = None, project: str | None = None) -> dict[str, Any]:
    """Every named artifact (of one type, of one project): name, type, versions, latest, aliases, size."""
    registry = store.registry()
    out = []
    for c in registry.names(type=type, project=project):
        version, size, producer, _created = c.latest_summary()
        out.append({"project": c.project, "name": c.name, "qualified": c.qualified, "type": c.type,
                    "versions": c.count, "latest": version,
                    "aliases": {a: f"v{n}" for a, n in sorted(c.aliases.items())},
                    "size": size, "updated": c.last_logged, "producer": producer})
    types = sorted({c.type for c in registry.collections.values()})
    return {"artifacts": out, "types": types}


def _version(c: Any, v: Any, infos: dict[str, Any]) -> dict[str, Any]:
    return {"version": v.version, "number": v.number, "aliases": c.aliases_of(v.number), "size": v.size,
            "sha256": v.sha256, "kind": v.kind, "type": v.type, "folder": v.folder, "files": v.files,
            "stored": "reference" if v.reference else "copy", "reference": v.reference, "created": v.time,
            "step": v.step, "description": v.description, "producer": _run(infos, v.producer),
            "consumers": [_run(infos, r) for r in c.consumers.get(v.sha256, [])],
            "loggers": [_run(infos, r) for r in c.loggers.get(v.sha256, [])]}


def _history(c: Any, infos: dict[str, Any], only: str | None = None) -> list[dict[str, Any]]:
    return [{"time": h.time, "alias": h.alias, "op": h.op, "version": h.version, "user": h.user, "run": h.run,
             "run_info": _run(infos, h.run), "how": h.how} for h in c.history if only is None or h.version == only]


def _blob_url(run: str, sha: str) -> str:
    from urllib.parse import quote

    return f"/api/runs/{quote(run, safe='')}/blobs/{sha}?download=1"


def artifact_doc(store: Any, ref: str) -> dict[str, Any]:
    """A name's versions and alias history, or (``ref`` with a version or alias) one version with its files.

    :raises NotFound: an unknown name, version or alias (the message names what exists).
    """
    from tracker.read.registry import split_ref

    registry = store.registry()
    try:
        base, spec = split_ref(ref)
        c = registry.collection(base)
        v = c.pick(spec) if spec is not None else None
    except TrackerError as exc:
        raise NotFound(str(exc)) from None
    infos = _infos(store, registry)
    doc: dict[str, Any] = {"project": c.project, "name": c.name, "qualified": c.qualified, "type": c.type,
                           "count": c.count, "aliases": {a: f"v{n}" for a, n in sorted(c.aliases.items())},
                           "versions": [_version(c, x, infos) for x in c.versions], "history": _history(c, infos)}
    if v is None:
        return doc
    one = _version(c, v, infos)
    one["metadata"] = v.metadata
    one["asked"] = spec
    art = store.artifact(f"{c.qualified}:{v.version}")
    files = []
    try:
        for f in art.files():
            files.append({"path": f.path, "size": f.size, "sha256": f.sha256,
                          "download": None if v.reference else _blob_url(v.producer, f.sha256)})
        one["files"] = files
    except TrackerError as exc:  # a folder whose manifest cannot be read: the rest is still shown
        one["files"] = []
        one["files_error"] = str(exc)
    doc["version"] = one
    doc["history"] = _history(c, infos, v.version)
    return doc


def lineage_doc(store: Any, ref: str, depth: int) -> dict[str, Any]:
    """The lineage graph of a run or a version (``store.lineage``), for the page's boxes and arrows.

    :raises NotFound: ``ref`` is neither a run nor a version.
    """
    try:
        return store.lineage(ref, depth=depth)
    except TrackerError as exc:
        raise NotFound(str(exc)) from None


__all__ = ["NotFound", "artifact_doc", "artifacts_doc", "lineage_doc"]
