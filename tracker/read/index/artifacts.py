"""The artifact registry kept warm in memory: a store's answers about names, versions and aliases without
checking every run's files at every question.

A full build reads every run's artifact figures from the run catalog
(:mod:`tracker.read.index.catalog`). After it, only three things can change
what the registry derives, and each is watched at a cost that does not grow
with the store:

- a run added or removed: the ``runs/`` folder's time (then only the runs
  that came or went are read);
- a run whose writer is alive (or was at the build): its segments grow, and
  only the bytes appended since are scanned for an ``artifact`` or
  ``artifact_use`` record or its ``run_finished``;
- anything else (a run resumed by a new writer, an alias edit): the writer
  or editor first appends the run's id to ``<store>/registry-changes``
  (:func:`note_change`), and the reader looks at the runs named by the lines
  added since, for a few seconds after each (an editor appends again after
  its edit).

A full build keeps what it derived under ``index/registry.idx``, with a
fingerprint of the figures it came from: the next process whose catalog
gives the same figures reads it back instead of deriving it again, each
name decoded only when asked for.

The hints file is a hint only: deleting it changes no answer (a reader that
finds it gone or shorter builds again), and a full build every
:data:`MAX_AGE` seconds bounds what a writer killed between its hint and
its record could hide. Deleting ``<store>/index/`` changes no answer either.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from tracker.core.format import RECORD_SCHEMA_MARK, SEGMENT_SUFFIX
from tracker.read.index.segments import INDEX_DIR

#: The file of change hints at the top of a store.
HINTS = "registry-changes"
#: Seconds a run named by a hint is looked at again at every question.
GRACE = 5.0
#: Seconds after which a warm registry is built again from the catalog whatever the hints say.
MAX_AGE = 300.0
_ARTIFACT_MARK = RECORD_SCHEMA_MARK + b"artifact"
_FINISH_MARK = b'"kind":"run_finished"'


def note_change(store: str | os.PathLike[str], run_id: str) -> None:
    """Tell readers that run ``run_id`` is about to log, use or re-alias an artifact (one appended line).

    Never raises: a store that cannot take the line is read without hints (readers check every run).
    """
    try:
        fd = os.open(os.path.join(store, HINTS), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        os.write(fd, f"{run_id}\n".encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def _key(st: os.stat_result) -> tuple[int, int]:
    return st.st_ino, st.st_mtime_ns


class Warm:
    """One store's registry as last derived, and what tells whether it still holds."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.path = Path(store.path)
        self._figs: dict[str, dict[str, Any]] | None = {}
        self._texts: dict[str, bytes] = {}
        self.infos: dict[str, Any] = {}
        #: Runs whose files are watched at every question: run id -> {file: [inode, size]}.
        self.live: dict[str, dict[str, list[int]]] = {}
        #: Runs named by a hint: run id -> until when (monotonic) they are looked at.
        self.watch: dict[str, float] = {}
        self.registry: Any = None
        self.built = 0.0
        self.runs_key: tuple[int, int] | None = None
        self.ids: set[str] = set()
        self.hints: tuple[int, int] | None = None
        self.lock = threading.Lock()

    # --- building ----------------------------------------------------------------------------------

    def build(self) -> Any:
        from tracker.read.registry import Registry

        self.runs_key = self._runs_key()
        self.hints = self._hints_end()
        entries = self.store.catalog()
        texts = {e.info.id: e.artifacts_text() for e in entries}
        self.infos = {e.info.id: e.info for e in entries}
        self.ids = set(self.infos)  # a run made during the build moved the runs folder's time: seen next
        self.live = {}
        for e in entries:
            if e.info.status == "running":
                self.live[e.info.id] = self._stamp(e.info.id)
        self.watch = {}
        # The registry as the last build of these very figures left it, else derived again (and kept).
        fp = fingerprint(texts)
        registry = load_registry(self.path, fp)
        if registry is None:
            self._figs = {rid: orjson.loads(t) for rid, t in texts.items() if t}
            registry = Registry(self._figs)
            save_registry(self.path, fp, registry, self.store._writable)
        else:
            self._figs, self._texts = None, texts
        self.registry = registry
        self.registry.infos = self.infos
        self.built = time.monotonic()
        return self.registry

    @property
    def figs(self) -> dict[str, dict[str, Any]]:
        """Every run's artifact figures (parsed when first needed: a registry read back needs none)."""
        if self._figs is None:
            self._figs = {rid: orjson.loads(t) for rid, t in self._texts.items() if t}
        return self._figs

    def _runs_key(self) -> tuple[int, int] | None:
        try:
            return _key(os.stat(self.path / "runs"))
        except OSError:
            return None

    def _hints_end(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path / HINTS)
        except OSError:
            return None
        return st.st_ino, st.st_size

    def _stamp(self, run_id: str) -> dict[str, list[int]]:
        """``{file: [inode, size]}`` of the run's segments and edit segments."""
        out: dict[str, list[int]] = {}
        base = self.path / "runs" / run_id
        for folder in (base, base / "edits"):
            try:
                with os.scandir(folder) as it:
                    for e in it:
                        if e.name.endswith(SEGMENT_SUFFIX) and e.name[0] != ".":
                            st = e.stat()
                            out[e.path] = [st.st_ino, st.st_size]
            except OSError:
                continue
        return out

    # --- answering ---------------------------------------------------------------------------------

    def current(self) -> Any:
        """The registry, derived again where something changed (see the module's docstring)."""
        if self.registry is None or time.monotonic() - self.built > MAX_AGE:
            return self.build()
        changed: set[str] = set()
        key = self._runs_key()
        if key != self.runs_key:
            ids = set(self.store.run_ids())
            for gone in self.ids - ids:
                self.figs.pop(gone, None)
                self.infos.pop(gone, None)
                self.live.pop(gone, None)
                self.watch.pop(gone, None)
                changed.add(gone)
            changed |= ids - self.ids
            self.ids, self.runs_key = ids, key
        hinted = self._read_hints()
        if hinted is None:
            return self.build()
        now = time.monotonic()
        for rid in hinted:
            if rid in self.ids:
                self.watch[rid] = now + GRACE
                changed.add(rid)
        for rid, until in list(self.watch.items()):
            if until < now:
                del self.watch[rid]
            changed.add(rid)  # looked at once more after its grace, then left
        for rid, stamp in list(self.live.items()):
            if self._grew(rid, stamp):
                changed.add(rid)
        if not changed:
            return self.registry
        moved = False
        for rid in changed:
            if rid not in self.ids:
                continue
            moved |= self._derive(rid)
        if moved or any(r not in self.ids for r in changed):
            from tracker.read.registry import Registry

            self.registry = Registry(self.figs)
            self.registry.infos = self.infos
        return self.registry

    def _read_hints(self) -> list[str] | None:
        """Run ids hinted since the last look (``None``: the file was replaced or cut: build again)."""
        end = self._hints_end()
        if end == self.hints:
            return []
        if end is None:
            return None  # removed: what it said since the last look is lost
        if self.hints is None:
            start = 0
        else:
            if end[0] != self.hints[0] or end[1] < self.hints[1]:
                return None
            start = self.hints[1]
        try:
            with open(self.path / HINTS, "rb") as f:
                f.seek(start)
                data = f.read(end[1] - start)
        except OSError:
            return None
        cut = data.rfind(b"\n") + 1  # a line in progress is read with the next look
        self.hints = (end[0], start + cut)
        return [line.decode("utf-8", "replace") for line in data[:cut].split(b"\n") if line]

    def _grew(self, run_id: str, stamp: dict[str, list[int]]) -> bool:
        """Whether a watched run's files changed in a way the registry may see (new files, edits, an
        artifact record or the writer's finish in the bytes appended); updates the stamp."""
        now = self._stamp(run_id)
        relevant = False
        for path, (ino, size) in now.items():
            old = stamp.get(path)
            if old is None or old[0] != ino or size < old[1]:
                relevant = True
            elif size > old[1]:
                if os.sep + "edits" + os.sep in path:
                    relevant = True
                else:
                    relevant |= self._mentions(path, old[1], size)
        if set(stamp) - set(now):
            relevant = True
        self.live[run_id] = now
        return relevant

    @staticmethod
    def _mentions(path: str, start: int, end: int) -> bool:
        try:
            with open(path, "rb") as f:
                f.seek(max(0, start - len(_ARTIFACT_MARK)))
                data = f.read(end - start + len(_ARTIFACT_MARK))
        except OSError:
            return True
        return _ARTIFACT_MARK in data or _FINISH_MARK in data

    def _derive(self, run_id: str) -> bool:
        """Derive run ``run_id``'s figures again; whether they changed."""
        from tracker.core.errors import TrackerError

        try:
            entry, _ = self.store._derive_entry(run_id)
        except (TrackerError, OSError):
            old = self.figs.pop(run_id, None)
            self.live.pop(run_id, None)
            return old is not None
        self.infos[run_id] = entry.info
        if entry.info.status == "running":
            self.live.setdefault(run_id, self._stamp(run_id))
        else:
            self.live.pop(run_id, None)
        figs = entry.artifacts
        if figs == self.figs.get(run_id):
            return False
        if figs:
            self.figs[run_id] = figs
        else:
            self.figs.pop(run_id, None)
        return True


#: The registry file under ``<store>/index/`` and its layout.
REGISTRY = "registry.idx"
REGISTRY_LAYOUT = 1


def fingerprint(texts: dict[str, bytes]) -> int:
    """A CRC-32 of every run's artifact figures (as the catalog keeps them), in run id order."""
    from tracker.read.index.container import _crc32

    crc = 0
    for rid in sorted(texts):
        crc = _crc32(rid.encode() + b"\0" + texts[rid] + b"\n", crc)
    return crc


def load_registry(store: Path, fp: int) -> Any:
    """The registry kept under ``index/`` when it was derived from figures of fingerprint ``fp``, else ``None``."""
    from array import array

    from tracker.read.index import container
    from tracker.read.registry import Registry

    try:
        with container.Reader(store / INDEX_DIR / REGISTRY) as reader:
            h = reader.header
            if h.get("layout") != REGISTRY_LAYOUT or h.get("fingerprint") != fp:
                return None
            summary, io = bytes(reader.read("summary")), bytes(reader.read("io"))
            blob = bytes(reader.read("texts"))
            at = array("Q")
            at.frombytes(bytes(reader.read("texts_at")))
        texts = [blob[at[i]:at[i + 1]] for i in range(len(at) - 1)]
        return Registry.loaded(summary, texts, io)
    except (OSError, container.Damaged, KeyError, TypeError, ValueError, orjson.JSONDecodeError):
        return None


def save_registry(store: Path, fp: int, registry: Any, writable: Any) -> None:
    """Keep ``registry`` under ``index/`` (temporary name, then rename), when the store can be written."""
    from array import array

    from tracker.read.index import container

    def write() -> None:
        summary, texts, io = registry.to_parts()
        at = [0]
        for t in texts:
            at.append(at[-1] + len(t))
        container.write(store / INDEX_DIR / REGISTRY, {"layout": REGISTRY_LAYOUT, "fingerprint": fp},
                        {"summary": summary, "texts": b"".join(texts), "texts_at": array("Q", at), "io": io})

    writable.attempt(write)


_warm_lock = threading.Lock()


def warm_registry(store: Any) -> Any:
    """The registry of folder store ``store`` (a :class:`tracker.read.reader.Store`), kept warm on it.

    One question at a time per store (the dashboard asks from several threads).
    """
    with _warm_lock:
        warm = store.__dict__.get("_registry")
        if warm is None:
            warm = store.__dict__["_registry"] = Warm(store)
    with warm.lock:
        return warm.current()


def forget(store: Any) -> None:
    """Drop what ``store`` keeps of its registry: the next question builds it again."""
    store.__dict__.pop("_registry", None)


__all__ = ["GRACE", "HINTS", "MAX_AGE", "REGISTRY", "Warm", "fingerprint", "forget", "load_registry", "note_change",
           "save_registry", "warm_registry"]
