"""Named artifacts as users call them: ``run.log_artifact`` / ``use_artifact``, and on a store
``artifact``, ``artifacts``, ``lineage``, ``set_alias`` and ``remove_alias``.

Each of these first appends the run's id to the store's hints
(:func:`tracker.read.index.artifacts.note_change`), so that readers keeping the
registry warm look at that run again. Logging stores the bytes and appends an ``artifact`` record; using appends an
``artifact_use`` record; an alias change is an edit event in the edit
segment of the run that made the version (:mod:`tracker.write.edits`), or a
row of the team database's alias table. Nothing else is written: versions,
aliases and lineage are derived from these by every reader
(:mod:`tracker.read.registry`). :class:`~tracker.write.artifact_methods.ArtifactMethods` gives the folder
store and the team store the same methods over their own registries. A name
that a run's (or a folder's) store does not know is looked for in the stores
that plugins offer (``tracker_artifact_sources``: the team database when
``[team] url`` is set), through :func:`find_version`.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.core.errors import ArtifactNotFound, SchemaError, TrackerError
from tracker.core.rules import LATEST, VERSION_RE
from tracker.read.index.artifacts import note_change
from tracker.read.registry import UNSPECIFIED
from tracker.write.wandb.artifact import Artifact

if TYPE_CHECKING:
    from tracker.read.registry import Collection, Version

#: Files from this size on are hashed before they are copied when their name already holds a
#: version of that size logged after the file last changed (re-logging writes nothing).
PROBE_MIN = 1 << 24


def user() -> str | None:
    """Who is changing an alias (the login name), or ``None`` when it cannot be told."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        return None


# --- the run side ----------------------------------------------------------------------------------

_readers: dict[str, Any] = {}


def reader_of(run: Any) -> Any:
    """A reader of the run's store (kept per store in this process, so its registry stays warm)."""
    from tracker.read.reader import Store

    key = os.path.abspath(run.store)
    store = _readers.get(key)
    if store is None or store._host is not run._host:
        store = _readers[key] = Store(run.store, host=run._host)
    return store


def _blobs(run: Any) -> Any:
    from tracker.capture.blobs import BlobStore

    return BlobStore(run.store)


def log_artifact(run: Any, path: Any, name: str | None = None, type: str | None = None,
                 aliases: Iterable[str] | str | None = None, *, kind: str = "file", copy: bool = True,
                 step: int | None = None, description: str | None = None,
                 metadata: Mapping[str, Any] | None = None) -> Artifact:
    """``Run.log_artifact``: a path (file or folder) or a W&B-style :class:`Artifact`, stored and recorded.

    :raises SchemaError: a bad name, type, alias, description or metadata, or a type other than the
        name's; nothing is written.
    """
    from tracker.capture import log_artifact as capture_log

    art = path if isinstance(path, Artifact) else None
    more: dict[str, Any] = {}
    if art is not None:
        payload = art._payload()
        path = payload.pop("path")
        copy = payload.pop("copy", True)
        more.update(payload)
        name = name or art.name
        type = type if type is not None else art.type
        description = description if description is not None else art.description
        metadata = metadata if metadata is not None else (art.metadata or None)
        if payload.get("members") is not None:
            kind = "folder"
    if type == UNSPECIFIED:
        type = None
    if name is None and path is not None:
        name = Path(path).resolve().name or str(path)
    probe = _prior(run, name, type, path, more.get("members"))
    if probe is not None:
        more["probe_before"], more["probe_sizes"] = probe
    note_change(run.store, run.id)
    rec = capture_log(run, path, name, kind=kind, copy=copy, step=step, type=type, aliases=aliases,
                      description=description, metadata=metadata, **more)
    _remember(run, rec)
    store = reader_of(run)
    if art is not None:
        return art._bind(store, _blobs(run), run.project, rec, run.id)
    return Artifact._read(store, _blobs(run), run.project, rec, run=run.id)


def _prior(run: Any, name: Any, type: str | None, path: Any, members: Any) -> tuple[float, set[int]] | None:
    """Check ``type`` against the name's versions; for large content, when to hash before copying.

    A writing process reads no store as a reader does (nothing derived, nothing written under
    ``index/``): what the name holds comes from the run catalog as the last reader left it, and from
    what this process logged.
    """
    from tracker.core.files import check_regular

    if not isinstance(name, str) or not name:
        return None  # the capture layer names what is wrong
    big = members is not None
    if path is not None and not big:
        try:
            st = check_regular(Path(path), folder_ok=True)
            big = st.st_size >= PROBE_MIN or os.path.isdir(path)
        except (OSError, TrackerError):
            return None  # the capture layer names what is wrong
    if type is None and not big:
        return None
    import orjson

    from tracker.read.index.catalog import peek_artifacts
    from tracker.read.registry import Registry

    figs = peek_artifacts(Path(run.store), orjson.dumps(name))
    mine = _logged.get((os.path.abspath(run.store), run.id))
    if mine:
        had = figs.get(run.id) or {"p": run.project, "o": [], "u": [], "e": []}
        figs[run.id] = {**had, "o": list(had.get("o") or []) + mine}
    c = Registry(figs).collections.get((run.project, name))
    if c is None:
        return None
    if type is not None and c.type not in (UNSPECIFIED, type):
        raise SchemaError("artifact", [("type", f"artifact {c.qualified!r} is of type {c.type!r} ({c.describe()}), "
                                                f"given type {type!r}: a name keeps one type; log under another name")])
    return c.last_logged, c.sizes()


#: What this process logged, per (store, run): figure rows, for :func:`_prior` (runs this process writes).
_logged: dict[tuple[str, str], list[list[Any]]] = {}


def _remember(run: Any, rec: Any) -> None:
    row = [rec.name, rec.type, rec.sha256, rec.size, rec.time, run.writer_id, 0, rec.step, rec.kind, rec.folder,
           rec.files, rec.referenced, list(rec.aliases), rec.filename, None, None]
    _logged.setdefault((os.path.abspath(run.store), run.id), []).append(row)


def use_artifact(run: Any, ref: Any, type: str | None = None, aliases: Any = None, use_as: str | None = None
                 ) -> Artifact:
    """``Run.use_artifact``: resolve ``ref`` (``name``, ``name:v3``, ``name:prod``, ``project/name:alias``,
    ``entity/project/name:alias``, or an :class:`Artifact` read from a store), record an
    ``artifact_use`` record, and return the version.

    A name (or a version or alias of it) that the run's store does not know is looked for in the
    team database when ``[team] url`` is set (:func:`find_version`); the version returned then reads
    its bytes from the team's bucket, and the record is the same as for a version of the run's store.

    :raises ArtifactNotFound: an unknown name, version or alias (naming what exists);
        :class:`TrackerError`: a type other than asked, or a team database that could not be asked.
    """
    from tracker.capture import side_writer
    from tracker.capture.artifacts import use_record

    store = reader_of(run)
    if isinstance(ref, Artifact):
        if ref._store is None:
            raise TrackerError(f"use_artifact: artifact {ref.name!r} is not logged; log it first "
                               "(run.log_artifact(artifact)), or use it by name")
        # The version of the store it was read from (this run's, or the team database's), by its number there.
        owner, blobs = ref._store, ref._blobs
        ref = f"{ref.project}/{ref.name}:{ref.version}" if ref.project else f"{ref.name}:{ref.version}"
        c, v, spec = owner.registry().find(ref, run.project)
    elif isinstance(ref, str):
        owner, c, v, spec = find_version(store, run._host, ref, run.project)
        blobs = _blobs(run) if owner is store else source_blobs(owner)
    else:
        raise TrackerError(f"use_artifact: expected a name such as 'mnist-cnn:prod' or an Artifact, given {ref!r}")
    if type is not None and type != c.type:
        raise TrackerError(f"use_artifact({ref!r}): artifact {c.qualified!r} is of type {c.type!r}, not {type!r}")
    alias = LATEST if spec is None else (None if VERSION_RE.fullmatch(spec) else spec)
    note_change(run.store, run.id)
    side_writer(run)("artifact_use", use_record(c.project, c.name, v.version, v.sha256,
                                                None if c.type == UNSPECIFIED else c.type, alias), None)
    a = Artifact._read(owner, blobs, c.project, v)
    a.asked = spec
    return a


# --- names this store does not know: the sources plugins offer (the team database) ------------------

def artifact_sources(host: Any) -> list[tuple[str, Callable[[], Any]]]:
    """``(label, opener)`` of every store plugins offer to resolve names in (``tracker_artifact_sources``), in
    the order offered; a plugin offering something else is reported broken."""
    found: list[tuple[str, Callable[[], Any]]] = []

    def collect(_plugin: str, result: Any) -> None:
        if not isinstance(result, dict) or not all(isinstance(k, str) and callable(f) for k, f in result.items()):
            raise TypeError(f"tracker_artifact_sources returned {result!r}, expected a dict of label -> opener()")
        found.extend(result.items())

    host.call_each(host.pm.hook.tracker_artifact_sources, collect=collect, config=host.config)
    return found


def source_blobs(store: Any) -> Any:
    """The blobs of a store a source opened (the team database's bucket)."""
    blobs = getattr(store, "_artifact_blobs", None)
    return blobs() if callable(blobs) else store.blobs


def find_version(store: Any, host: Any, ref: str, project: str | None = None
                 ) -> tuple[Any, Collection, Version, str | None]:
    """The version ``ref`` names: in ``store`` when it knows the name and the version or alias asked, else in
    the first source that does (:func:`artifact_sources`: the team database when ``[team] url`` is set).

    The store itself wins whenever it knows what was asked (no network on that path; a name whose records
    are the same in both numbers the same). Nothing is opened when it does.

    :param host: the plugin host whose sources are asked (``None``: none).
    :returns: the store that answered, the collection, the version, and the alias or version asked.
    :raises ArtifactNotFound: nowhere (the message names what exists here and there);
        :class:`TrackerError`: a source could not be asked (one line, its password masked).
    """
    try:
        c, v, spec = store.registry().find(ref, project)
        return store, c, v, spec
    except ArtifactNotFound as exc:
        here = exc
    sources = artifact_sources(host) if host is not None else []
    if not sources:
        raise here
    missing, failed = [], []
    for label, opener in sources:
        other = None
        try:
            other = opener()
            c, v, spec = other.registry().find(ref, project)
        except ArtifactNotFound as exc:
            where = getattr(other, "path", None)  # the team store's: its URL, the password masked
            missing.append(f"{label} {where} ({exc})" if where else f"{label} ({exc})")
            continue
        except Exception as exc:  # noqa: BLE001 - an unreachable server, a broken source: one line, the next source
            text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
            failed.append(f"{label} could not be asked: {text}")
            continue
        return other, c, v, spec
    if failed:
        raise TrackerError(f"artifact {ref!r} is not in this store ({here}), and {'; '.join(failed)}"
                           + "".join(f"; nor in {m}" for m in missing))
    raise ArtifactNotFound(f"artifact {ref!r} is not in this store ({here}) nor in {'; nor in '.join(missing)}")


def folder_alias_edit(store: Any, run_id: str, data: dict[str, Any]) -> None:
    """An alias edit in a folder store: an edit event of run ``run_id`` (the version's producer)."""
    from tracker.write.edits import fsync_wanted, store_config, write_edit

    # The hint before and after: a reader that looked between the two sees the edit at its next question.
    note_change(store.path, run_id)
    write_edit(Path(store.path) / "runs" / run_id, data, fsync=fsync_wanted(store), config=store_config(store))
    note_change(store.path, run_id)


__all__ = ["PROBE_MIN", "artifact_sources", "find_version", "folder_alias_edit", "log_artifact",
           "reader_of", "source_blobs", "use_artifact", "user"]
