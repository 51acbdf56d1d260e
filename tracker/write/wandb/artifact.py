"""``tracker.Artifact``: W&B's ``Artifact(name, type, description, metadata)`` to fill and log, and what
``log_artifact``, ``use_artifact``, ``store.artifact`` and ``view.artifacts()`` return.

One class for both: a new artifact collects files (``add_file``, ``add_dir``,
``new_file``, ``add_reference`` with ``file://``) until ``run.log_artifact``
stores them; from then on, and for every artifact read from a store, it is a
*version* of a named artifact: ``version`` (``"v3"``), ``aliases``,
``producer`` and ``consumers`` are derived from the store's records when
asked (:mod:`tracker.read.registry`), and ``download``, ``file``, ``open``,
``files`` and ``get_path(name).download()`` read its bytes, every one checked
by SHA-256 (:mod:`tracker.capture.artifacts`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tracker.core.errors import TrackerError
from tracker.core.rules import check_artifact_name, check_artifact_type

#: The type of an artifact made without one (W&B requires one; tracker's default).
UNSPECIFIED = "unspecified"


def _unsupported(what: str, instead: str) -> TrackerError:
    from tracker.write.runstate import UnsupportedError

    return UnsupportedError(f"{what} is a W&B call that tracker does not offer: {instead} (see docs/artifacts.md)")


class ArtifactFile:
    """One file of an artifact version (W&B's manifest entry): ``path``, ``size``, ``sha256``; ``download()``."""

    def __init__(self, artifact: Artifact, path: str, size: int, sha256: str) -> None:
        self._artifact = artifact
        self.path = path
        self.size = size
        self.sha256 = sha256

    @property
    def name(self) -> str:
        """The file's path inside the artifact (W&B's ``name``)."""
        return self.path

    @property
    def digest(self) -> str:
        """The file's SHA-256 (W&B's ``digest``)."""
        return self.sha256

    def download(self, root: str | os.PathLike[str] | None = None) -> Path:
        """Copy this file under ``root`` (default: the artifact's download folder), its sha256 checked;
        returns the file's path there."""
        folder = self._artifact.download(root, only=[self.path])
        return folder.joinpath(*self.path.split("/"))

    def open(self) -> IO[bytes]:
        """A binary file over this file's bytes (size checked on opening, sha256 at the end)."""
        return self._artifact.open(self.path)

    def __repr__(self) -> str:
        return f"<ArtifactFile {self.path} {self.size} bytes {self.sha256[:12]}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArtifactFile) and (self.path, self.size, self.sha256) == \
            (other.path, other.size, other.sha256)

    def __hash__(self) -> int:
        return hash((self.path, self.sha256))


class Artifact:
    """An artifact: files a run logs under a name, and each distinct content of that name a version.

    Made by hand (W&B's constructor), it collects files until ``run.log_artifact(artifact,
    aliases=[...])`` stores them. Returned by ``log_artifact``, ``use_artifact``,
    ``store.artifact("name:alias")`` and ``view.artifacts()``, it is one version:

    :ivar name: the name (without version; ``qualified`` gives ``project/name:v3``).
    :ivar type: what it is (``model``, ``dataset``, default ``unspecified``); not ``kind``.
    :ivar kind: how the bytes are kept or what they are (``file``, ``folder``, ``checkpoint``...).
    :ivar sha256: the content's hash (a folder's: its manifest's).
    :ivar size: bytes (a folder's: the sum of its files).
    :ivar path: where the bytes are: the blob, the referenced file or folder, or a folder's manifest blob.
    :ivar step: the step of the record (``None`` for a version read from a store: its first record's step).
    :ivar time: when the record (or the version) was logged.
    :ivar folder: whether it is a folder.
    :ivar reference: whether the bytes stay outside the store (``copy=False``, ``add_reference``).
    :ivar file_count: how many files it holds.
    :ivar project: the project it is named in.
    """

    def __init__(self, name: str, type: str = UNSPECIFIED, description: str | None = None,
                 metadata: Mapping[str, Any] | None = None, incremental: bool = False, use_as: str | None = None,
                 **_options: Any) -> None:
        self.name = check_artifact_name(name)
        self._type: str | None = check_artifact_type(type) if type is not None else UNSPECIFIED
        if description is not None and not isinstance(description, str):
            raise TrackerError(f"Artifact {name!r}: description expected a str, given {description!r}")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise TrackerError(f"Artifact {name!r}: metadata expected a dict, given {metadata!r}")
        self.description = description
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.kind = "file"
        self.sha256: str | None = None
        self.size: int | None = None
        self.path: Path | None = None
        self.step: int | None = None
        self.time: float | None = None
        self.folder = False
        self.reference = False
        self.file_count = 0
        self.project: str | None = None
        self.filename: str | None = None
        #: Files added before logging: path inside the artifact -> local file.
        self._members: dict[str, Path] = {}
        self._ref: Path | None = None
        self._tmp: list[str] = []
        # Once logged or read: where it is read from, and what the registry says (resolved on demand).
        self._store: Any = None
        self._blobs: Any = None
        self._referenced: str | None = None
        self._version: Any = None
        self._run: str | None = None
        #: The alias or version it was asked for by (``use_artifact``, ``store.artifact``).
        self.asked: str | None = None

    # --- W&B: filling a new artifact --------------------------------------------------------------------

    def _check_new(self, what: str) -> None:
        if self._store is not None:
            raise TrackerError(f"artifact {self.name!r} is logged already ({self._label()}); {what} "
                               "goes to a new Artifact(...) (the same name makes the next version)")

    def add_file(self, local_path: str | os.PathLike[str], name: str | None = None, is_tmp: bool = False,
                 skip_cache: bool | None = None, policy: str | None = None, overwrite: bool = False) -> ArtifactFile:
        """Add file ``local_path`` as ``name`` (default: its file name) inside the artifact.

        :raises TrackerError: no such file, a name used twice (unless ``overwrite``), a name that leaves
            the artifact (``../x``).
        """
        self._check_new("add_file")
        from tracker.core.files import check_regular

        src = Path(local_path)
        try:
            st = check_regular(src, "add_file: ")
        except FileNotFoundError:
            raise TrackerError(f"add_file: no such file: {src}") from None
        rel = self._member_name(name if name is not None else src.name, "add_file")
        if rel in self._members and not overwrite:
            raise TrackerError(f"artifact {self.name!r} already has a file {rel!r} ({self._members[rel]}); "
                               "pass overwrite=True to replace it")
        if self._ref is not None:
            raise self._mixed()
        self._members[rel] = src
        return ArtifactFile(self, rel, st.st_size, "")

    def add_dir(self, local_path: str | os.PathLike[str], name: str | None = None, skip_cache: bool | None = None,
                policy: str | None = None, merge: bool = False) -> None:
        """Add every file under folder ``local_path``, under ``name/`` inside the artifact (default: at its top)."""
        self._check_new("add_dir")
        from tracker.capture.blobs import walk_files

        src = Path(local_path)
        if not src.is_dir():
            raise TrackerError(f"add_dir: {src} is not a folder")
        prefix = self._member_name(name, "add_dir") + "/" if name else ""
        if self._ref is not None:
            raise self._mixed()
        for rel, path in walk_files(src):
            key = prefix + rel
            if key in self._members and not merge:
                raise TrackerError(f"artifact {self.name!r} already has a file {key!r}; pass merge=True to replace it")
            self._members[key] = path

    @contextmanager
    def new_file(self, name: str, mode: str = "x", encoding: str | None = None) -> Iterator[IO[Any]]:
        """Write a new file ``name`` of the artifact: ``with art.new_file("notes.txt") as f: f.write(...)``."""
        self._check_new("new_file")
        rel = self._member_name(name, "new_file")
        folder = tempfile.mkdtemp(prefix="tracker-artifact-")
        self._tmp.append(folder)
        path = Path(folder) / rel.replace("/", "_")
        with open(path, mode.replace("x", "w"), encoding=encoding if "b" not in mode else None) as f:
            yield f
        self.add_file(path, rel, overwrite="x" not in mode)

    def add_reference(self, uri: str | os.PathLike[str], name: str | None = None, checksum: bool = True,
                      max_objects: int | None = None) -> None:
        """Record a ``file://`` URI (a file or a folder) by reference: hashed when logged, never copied.

        :raises UnsupportedError: another scheme (``s3://``, ``gs://``, ``http://``...): log a local copy instead.
        """
        self._check_new("add_reference")
        text = os.fspath(uri)
        if "://" in text and not text.startswith("file://"):
            scheme = text.split("://", 1)[0]
            raise _unsupported(f"Artifact.add_reference({text!r})",
                               f"only file:// references are kept ({scheme}:// is not read by tracker); download "
                               "the object and add_file() it, or reference a local path")
        path = Path(text[len("file://"):] if text.startswith("file://") else text)
        if not path.exists():
            raise TrackerError(f"add_reference: no such file or folder: {path}")
        if self._members or self._ref is not None:
            raise self._mixed()
        self._ref = path

    def _mixed(self) -> TrackerError:
        return TrackerError(f"artifact {self.name!r}: a reference is kept alone (tracker records one file or folder "
                            "by reference, or copies files); log references and copies as two artifacts")

    def _member_name(self, name: str, what: str) -> str:
        from tracker.capture.blobs import safe_relative

        rel = os.fspath(name).replace(os.sep, "/")
        if not safe_relative(rel):
            raise TrackerError(f"{what}: the name {name!r} inside artifact {self.name!r} must be a relative path "
                               "that stays inside it (no '..', no leading '/')")
        return rel

    def add(self, obj: Any, name: str) -> None:
        """W&B's ``add(obj, name)`` of media objects: not offered."""
        raise _unsupported("Artifact.add(obj, name)", "save the object to a file and add_file() it")

    def _payload(self) -> dict[str, Any]:
        """What ``run.log_artifact(artifact)`` stores: a reference, one file, or files as a folder."""
        if self._ref is not None:
            return {"path": self._ref, "copy": False}
        if not self._members:
            raise TrackerError(f"artifact {self.name!r} is empty: add_file(), add_dir() or add_reference() first")
        if len(self._members) == 1:
            ((rel, src),) = self._members.items()
            if "/" not in rel:
                return {"path": src, "filename": rel}
        return {"path": None, "members": sorted(self._members.items())}

    # --- a version: what the store says --------------------------------------------------------------------

    @classmethod
    def _read(cls, store: Any, blobs: Any, project: str | None, rec: Any, run: str | None = None,
              version: Any = None) -> Artifact:
        """An artifact of ``store`` from a :class:`tracker.capture.artifacts.Logged` record or a registry
        :class:`tracker.read.registry.Version` (``rec``)."""
        a = cls.__new__(cls)  # the fields __init__ sets, from the store
        a.name = rec.name
        a._type = rec.type
        a.description = rec.description
        a.metadata = dict(rec.metadata or {})
        a.kind = rec.kind
        a.sha256 = rec.sha256
        a.size = rec.size
        a.folder = bool(rec.folder)
        a.file_count = int(rec.files)
        a.project = project
        a.filename = rec.filename
        a._members, a._ref, a._tmp = {}, None, []
        a._store, a._blobs, a._run = store, blobs, run
        a.asked = None
        if version is not None or hasattr(rec, "number"):
            v = version if version is not None else rec
            a._version = v
            a.step, a.time = v.step, v.time
            a._referenced = v.reference
            a._run = run if run is not None else v.producer
        else:
            a._version = None
            a.step, a.time = rec.step, rec.time
            a._referenced = rec.referenced
        a.reference = a._referenced is not None
        a.path = a._where()
        return a

    def _where(self) -> Path | None:
        if self._referenced:
            return Path(self._referenced)
        if self.sha256 is None:
            return None
        from tracker.capture.blobs import BlobStore

        if isinstance(self._blobs, BlobStore):
            return self._blobs.path(self.sha256)
        return Path("sha256", self.sha256[:2], self.sha256[2:])  # the object's key in the team's bucket

    def _bind(self, store: Any, blobs: Any, project: str | None, rec: Any, run: str) -> Artifact:
        """This new artifact, logged as ``rec`` (a ``Logged`` record) by run ``run``."""
        self.kind, self.sha256, self.size = rec.kind, rec.sha256, rec.size
        self.folder, self.file_count, self.filename = rec.folder, rec.files, rec.filename
        self.step, self.time = rec.step, rec.time
        self.project = project
        self._type = rec.type or (self._type if self._type != UNSPECIFIED else None)
        self._store, self._blobs, self._run = store, blobs, run
        self._referenced = rec.referenced
        self.reference = rec.referenced is not None
        self._version = None
        self.path = self._where()
        for folder in self._tmp:
            shutil.rmtree(folder, ignore_errors=True)
        self._tmp = []
        return self

    def _logged(self) -> None:
        if self._store is None:
            raise TrackerError(f"artifact {self.name!r} is not logged yet: run.log_artifact(artifact) stores it")

    def _collection(self) -> Any:
        self._logged()
        registry = self._store.registry()
        c = registry.collections.get((self.project, self.name))
        if c is None or c.version_of(self.sha256) is None:
            raise TrackerError(f"artifact {self.name!r} ({self.sha256[:12]}) is not in the store's registry any "
                               "more (was the run that logged it removed?)")
        return c

    def _resolved(self) -> Any:
        if self._version is None:
            self._version = self._collection().version_of(self.sha256)
        return self._version

    def _label(self) -> str:
        try:
            return f"{self.qualified}"
        except TrackerError:
            return self.name

    @property
    def type(self) -> str:
        """What it is (``model``, ``dataset``...): as logged, else the name's type, else ``unspecified``."""
        if self._type is None:
            if self._store is None:
                return UNSPECIFIED
            try:
                self._type = self._collection().type
            except TrackerError:
                return UNSPECIFIED
        return self._type

    @type.setter
    def type(self, value: str) -> None:
        self._type = check_artifact_type(value)

    @property
    def version(self) -> str:
        """``"v3"``: the version of this content under the name (numbered by the order the records were written)."""
        return self._resolved().version

    @property
    def qualified(self) -> str:
        """``project/name:v3`` (``name:v3`` without a project)."""
        return self._resolved().qualified

    @property
    def source_name(self) -> str:
        """W&B's ``source_name``: ``name:v3``."""
        return f"{self.name}:{self.version}"

    @property
    def digest(self) -> str | None:
        """W&B's ``digest``: the content's SHA-256."""
        return self.sha256

    @property
    def aliases(self) -> list[str]:
        """The aliases naming this version now: ``latest`` (when it is the newest) first, then the others."""
        if self._store is None:
            return []
        v = self._resolved()
        return self._collection().aliases_of(v.number)

    @property
    def producer(self) -> str:
        """The id of the run that logged this content first under the name."""
        return self._resolved().producer

    @property
    def consumers(self) -> list[str]:
        """The ids of the runs that used this version (``use_artifact``), in the order they first did."""
        return list(self._collection().consumers.get(self.sha256, []))

    @property
    def history(self) -> list[Any]:
        """Every alias change of the name (:class:`tracker.read.registry.AliasChange`), in order."""
        return list(self._collection().history)

    def logged_by(self) -> Any:
        """W&B's ``logged_by()``: the producer's run view."""
        return self._store.run(self.producer)

    def used_by(self) -> list[Any]:
        """W&B's ``used_by()``: the consumers' run views."""
        return [self._store.run(r) for r in self.consumers]

    def wait(self, timeout: float | None = None) -> Artifact:
        """W&B's ``wait()``: the artifact (it is stored when ``log_artifact`` returns)."""
        self._logged()
        return self

    def save(self, *args: Any, **kwargs: Any) -> None:
        """W&B's ``save()``: nothing to do once logged."""
        self._logged()

    # --- the bytes ----------------------------------------------------------------------------------

    def _what(self) -> str:
        return f"artifact {self._label()!r}"

    def files(self) -> list[ArtifactFile]:
        """The files of this version: path inside the artifact, size and sha256, sorted by path."""
        from tracker.capture.artifacts import version_files

        self._logged()
        return [ArtifactFile(self, m.path, m.size, m.sha256) for m in version_files(self._blobs, self._view())]

    def get_path(self, name: str) -> ArtifactFile:
        """The file ``name`` of this version (W&B's ``get_path`` / ``get_entry``): ``.download(root)``, ``.open()``."""
        from tracker.capture.artifacts import member_of

        self._logged()
        m = member_of(self._blobs, self._view(), self._what(), name)
        return ArtifactFile(self, m.path, m.size, m.sha256)

    get_entry = get_path

    def open(self, name: str | None = None) -> IO[bytes]:
        """A binary file over one file of this version (``name``: which; a file artifact needs none).

        Its size is checked on opening and its sha256 when it is read to the end: damaged bytes raise
        :class:`tracker.StoreError` naming the artifact, version and blob.
        """
        from tracker.capture.artifacts import open_member

        self._logged()
        return open_member(self._blobs, self._view(), self._what(), name)

    def default_root(self) -> Path:
        """Where ``download()`` writes by default: ``./artifacts/<name>:<version>`` (W&B's place)."""
        safe = self.name.replace("/", "-")
        return Path.cwd() / "artifacts" / f"{safe}:{self.version}"

    def download(self, root: str | os.PathLike[str] | None = None, allow_missing_references: bool = False,
                 skip_cache: bool | None = None, path_prefix: str | None = None, multipart: bool | None = None,
                 *, only: list[str] | None = None) -> Path:
        """Copy this version's files into folder ``root`` (default ``./artifacts/<name>:<version>``).

        Written under temporary names and moved into place only when every sha256 matched: a damaged or
        missing blob is a :class:`tracker.StoreError` naming the artifact, version and blob, and leaves
        ``root`` as it was. Returns ``root``.
        """
        from tracker.capture.artifacts import download

        self._logged()
        out = Path(root) if root is not None else self.default_root()
        if path_prefix is not None and only is None:
            only = [f.path for f in self.files() if f.path.startswith(path_prefix)]
        return download(self._blobs, self._view(), self._what(), out, only)

    def file(self, root: str | os.PathLike[str] | None = None) -> Path:
        """Download this one-file version into ``root``; returns the file's path.

        :raises TrackerError: a version of several files (the message lists them; use ``download()``).
        """
        from tracker.capture.artifacts import member_of

        self._logged()
        m = member_of(self._blobs, self._view(), self._what(), None)
        return self.download(root, only=[m.path]).joinpath(*m.path.split("/"))

    def _view(self) -> Any:
        """What the version helpers read: name, sha256, size, folder, filename and the referenced path."""
        return _VersionView(self.name, self.sha256, self.size or 0, self.folder, self.filename, self._referenced)

    def __repr__(self) -> str:
        if self._store is None:
            return f"<Artifact {self.name} ({self.type}) new, {len(self._members)} files added>"
        try:
            v = self.version
        except TrackerError:
            v = "?"
        return f"<Artifact {self.name}:{v} ({self.type}) {self.size} bytes {self.sha256[:12]}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Artifact):
            return NotImplemented
        if self._store is None or other._store is None:
            return self is other
        return (self.project, self.name, self.sha256) == (other.project, other.name, other.sha256)

    def __hash__(self) -> int:
        return hash((self.project, self.name, self.sha256)) if self._store is not None else id(self)


class _VersionView:
    __slots__ = ("name", "sha256", "size", "folder", "filename", "reference")

    def __init__(self, name: str, sha256: str | None, size: int, folder: bool, filename: str | None,
                 reference: str | None) -> None:
        self.name, self.sha256, self.size, self.folder = name, sha256, size, folder
        self.filename, self.reference = filename, reference


class ArtifactCollection:
    """A named artifact: every version of one name in one project, and its aliases.

    :ivar name: the name; ``project`` the project; ``type`` the type of its newest record.
    :ivar versions: every version (:class:`Artifact`), ``v0`` first.
    :ivar aliases: alias -> version (``{"latest": "v3", "prod": "v2"}``).
    :ivar history: every alias change (:class:`tracker.read.registry.AliasChange`), in order.
    """

    def __init__(self, store: Any, blobs: Any, collection: Any) -> None:
        self.name = collection.name
        self.project = collection.project
        self.type = collection.type
        self.qualified = collection.qualified
        self.count = collection.count
        self.aliases = {a: f"v{n}" for a, n in sorted(collection.aliases.items())}
        self.history = list(collection.history)
        self._store, self._blobs, self._collection = store, blobs, collection
        self._versions: list[Artifact] | None = None

    @property
    def versions(self) -> list[Artifact]:
        """Every version, ``v0`` first (made when first asked for)."""
        if self._versions is None:
            c = self._collection
            self._versions = [Artifact._read(self._store, self._blobs, c.project, v) for v in c.versions]
        return self._versions

    @property
    def latest(self) -> Artifact:
        """The newest version."""
        c = self._collection
        return Artifact._read(self._store, self._blobs, c.project, c.latest)

    def __repr__(self) -> str:
        return f"<ArtifactCollection {self.qualified} ({self.type}) {self.count} versions>"


__all__ = ["UNSPECIFIED", "Artifact", "ArtifactCollection", "ArtifactFile"]
