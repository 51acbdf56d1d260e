"""Edits after the fact: tags, name, notes, config and summary as appended ``edit`` events.

Each editing process appends to a segment of its own,
``<run>/edits/edits-<host>-<pid>-<hex>.jsonl``, so two processes editing one
run at once never share a file, and a run's writers and records are never
touched. Readers apply a run's edits in time order over its start event
(:func:`tracker.read.edits.apply_edits`, in the read core). See docs/format.md, "Edits".
"""

from __future__ import annotations

import os
import secrets
import threading
import time as _time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.core.errors import RunNotFound, SchemaError, StoreError, TrackerError
from tracker.core.files import close_quietly
from tracker.core.format import FORMAT_VERSION, encode_line
from tracker.core.rules import MAX_LABEL, check_keys, check_label  # noqa: F401 - MAX_LABEL kept importable from here
from tracker.core.rules import plain_text as _plain_text
from tracker.core.values import BadValue, check_json, given, holds_special
from tracker.read.edits import (  # noqa: F401 - re-exported: the editing API and its readers share these names
    EDIT,
    EDITS_FOLDER,
    EDITS_PREFIX,
    Edited,
    apply_edits,
    edit_paths,
    editor_alive,
    read_edits,
)
from tracker.read.liveness import safe_hostname
from tracker.write.writer import fsync_folder

if TYPE_CHECKING:
    from tracker.core.records import RunInfo
    from tracker.read.reader import RunView, Store



# --- checks ------------------------------------------------------------------------------------

def check_values(values: Any, what: str) -> dict[str, Any]:
    """A mapping of str keys to JSON values (config or summary).

    The strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` are refused: in
    the store they stand for the floats (docs/format.md, "Values").

    :raises SchemaError: naming the key, what was expected and what was given.
    """
    if not isinstance(values, Mapping):
        raise SchemaError(what, [("(value)", f"expected a dict, given {given(values)}")])
    out = {}
    for key in values:
        if not isinstance(key, str):
            raise SchemaError(what, [("(key)", f"expected a non-empty str key, given {given(key)}")])
    check_keys(values, what)
    for key, value in values.items():
        try:
            checked = check_json(value)
        except BadValue as bad:
            bad.at(key, value)
            raise SchemaError(what, [(bad.where(), f"expected {bad.args[0]}, given {given(bad.value)}")]) from None
        if holds_special(checked):
            raise SchemaError(what, [(key, 'expected no string "NaN", "Infinity" or "-Infinity" '
                                           f"(they stand for floats in the store), given {given(value)}")])
        out[key] = checked
    return out


# --- writing edits -----------------------------------------------------------------------------

class EditWriter:
    """This process's edit segment of one run, created with its first edit.

    The segment is written as ``.edits-....jsonl.part`` and renamed once its
    first line is in, so an edit segment is never seen empty. Each edit is one
    ``write(2)`` of one line on an ``O_APPEND`` file.
    """

    def __init__(self, run_dir: Path, *, fsync: bool = False) -> None:
        self.run_dir = run_dir
        self.folder = run_dir / EDITS_FOLDER
        self.fsync = fsync
        self.pid = os.getpid()
        self.id = f"{EDITS_PREFIX}{safe_hostname()}-{self.pid}-{secrets.token_hex(3)}"
        self.path = self.folder / f"{self.id}.jsonl"
        self.fd: int | None = None
        self.seq = 0
        self.lock = threading.Lock()

    def append(self, data: dict[str, Any], time: float | None = None) -> None:
        """Write one edit event.

        :raises RunNotFound: when the run's folder is gone (moved to the trash).
        :raises StoreError: when the line cannot be written.
        """
        with self.lock:
            seq = self.seq + 1
            line = encode_line({"v": FORMAT_VERSION, "kind": EDIT, "schema": None, "step": None,
                                "time": _time.time() if time is None else time, "w": self.id, "seq": seq,
                                "data": data})
            if self.fd is None:
                self._create(line)
            else:
                self._write(line)
            self.seq = seq

    def _create(self, line: bytes) -> None:
        try:
            self.folder.mkdir(exist_ok=True)
        except FileNotFoundError:
            raise RunNotFound(f"no run folder {self.run_dir}: the run was removed") from None
        except OSError as exc:
            raise StoreError(f"cannot create {self.folder}: {exc.strerror}") from None
        part = self.folder / f".{self.id}.jsonl.part"
        try:
            fd = os.open(part, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create {self.path}: {exc.strerror}") from None
        try:
            self.fd = fd
            self._write(line)
            os.rename(part, self.path)
            if self.fsync:
                fsync_folder(self.folder)
                fsync_folder(self.run_dir)
        except BaseException:
            self.fd = None
            os.close(fd)
            try:
                os.unlink(part)
            except OSError:
                pass
            raise

    def _write(self, line: bytes) -> None:
        assert self.fd is not None
        written = 0
        try:
            while written < len(line):
                written += os.write(self.fd, line[written:])
            if self.fsync:
                os.fsync(self.fd)
        except OSError as exc:
            if 0 < written < len(line):
                try:
                    os.ftruncate(self.fd, os.fstat(self.fd).st_size - written)
                except OSError:
                    pass
            raise StoreError(f"cannot append to {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        """Close the segment (idempotent)."""
        with self.lock:
            close_quietly(self.fd)
            self.fd = None


_writers: dict[Path, EditWriter] = {}
_writers_lock = threading.Lock()


def edit_writer(run_dir: Path, *, fsync: bool = False) -> EditWriter:
    """This process's edit writer of the run at ``run_dir`` (one per process and run folder)."""
    key = Path(os.path.abspath(run_dir))
    with _writers_lock:
        w = _writers.get(key)
        # A forked child writes a segment of its own; a run moved away and back gets a fresh one.
        if w is None or w.pid != os.getpid() or (w.fd is not None and not w.path.exists()):
            w = _writers[key] = EditWriter(key, fsync=fsync)
        return w


def write_edit(run_dir: Path, data: dict[str, Any], *, fsync: bool = False, config: Any = None) -> None:
    """Append one edit event to this process's edit segment of the run at ``run_dir``.

    :param config: the store's configuration: with a team database set (``[team] url`` or
        ``TRACKER_TEAM_URL``), the store's follower is told of the edit (and started if none runs), so
        the edit reaches the database within seconds (:func:`tracker.write.stream.on_edited`).
    """
    if not run_dir.is_dir():
        raise RunNotFound(f"no run folder {run_dir}: the run was removed")
    edit_writer(run_dir, fsync=fsync).append(data)
    from tracker.write.stream import on_edited

    on_edited(run_dir.parent.parent, run_dir.name, config)


# --- the editing API -----------------------------------------------------------------------------

def fsync_wanted(store: Store) -> bool:
    """Whether the store's config asks for ``durability = "fsync"`` (no when it cannot be read)."""
    config = store_config(store)
    return bool(config is not None and config.fsync)


def store_config(store: Store) -> Any:
    """The store's configuration, or ``None`` when it cannot be read."""
    try:
        return store.host.config
    except TrackerError:
        return None


def named_views(store: Store, refs: Iterable[str]) -> list[RunView]:
    """Every run named, each once; the first unknown one raises before anything is done."""
    if isinstance(refs, str):
        refs = [refs]
    views: dict[str, RunView] = {}
    for ref in refs:
        view = store.run(ref)
        views.setdefault(view.id, view)
    if not views:
        raise TrackerError("no run given")
    return list(views.values())


def editable(store: Store, view: RunView) -> RunView:
    """``view``, a run of a folder store (edits are appended to its folder).

    :raises TrackerError: a run of the team database, which takes edits from the folders it is synced from.
    """
    if not isinstance(view.path, Path):
        raise TrackerError(f"{store.path} is a team database, which takes edits from the stores it is synced "
                           "from: edit the run in its folder store (`tracker --store FOLDER ...`), and `tracker "
                           "sync` or the follower copies the edit")
    return view


def tag_runs(store: Store, refs: str | Iterable[str], add: Iterable[str] = (),
             remove: Iterable[str] = ()) -> list[RunInfo]:
    """Add and remove tags of runs; returns their infos after the edit.

    A run that already has every tag added and none removed gets no event.

    :raises RunNotFound: for an unknown run (nothing is changed).
    :raises TrackerError: for a bad tag (nothing is changed).
    """
    add = [check_label(t, "tag") for t in ([add] if isinstance(add, str) else add)]
    remove = [check_label(t, "tag") for t in ([remove] if isinstance(remove, str) else remove)]
    both = sorted(set(add) & set(remove))
    if both:
        raise TrackerError(f"tag {both[0]!r} is both added and removed; nothing was changed")
    views = [editable(store, v) for v in named_views(store, refs)]
    fsync = fsync_wanted(store)
    out = []
    for view in views:
        tags = view.info.tags
        adding = [t for t in dict.fromkeys(add) if t not in tags]
        removing = [t for t in dict.fromkeys(remove) if t in tags]
        data: dict[str, Any] = {}
        if adding:
            data["tags_add"] = adding
        if removing:
            data["tags_remove"] = removing
        if data:
            write_edit(view.path, data, fsync=fsync, config=store_config(store))
        out.append(view.refresh())
    return out


def rename_run(store: Store, ref: str, name: str) -> RunInfo:
    """Give a run a new name (free text, one line, not blank); returns its info."""
    name = check_label(name, "name")
    view = editable(store, store.run(ref))
    if view.info.name != name:
        write_edit(view.path, {"name": name}, fsync=fsync_wanted(store), config=store_config(store))
    return view.refresh()


def note_run(store: Store, ref: str, text: str, *, append: bool = False) -> RunInfo:
    """Set a run's notes (``append``: add ``text`` as a line after them); returns its info."""
    text = _plain_text(text, "note")
    if append and not text.strip():
        raise TrackerError("note: nothing to append, the text is empty")
    view = editable(store, store.run(ref))
    write_edit(view.path, {"notes_append" if append else "notes": text}, fsync=fsync_wanted(store),
               config=store_config(store))
    return view.refresh()


def update_config(store: Store, ref: str, values: Mapping[str, Any]) -> RunInfo:
    """Set top-level config keys of a run (an appended event; the start event is kept)."""
    return _update(store, ref, "config", values)


def update_summary(store: Store, ref: str, values: Mapping[str, Any]) -> RunInfo:
    """Set summary values of a run (last write wins)."""
    return _update(store, ref, "summary", values)


def _update(store: Store, ref: str, field: str, values: Mapping[str, Any]) -> RunInfo:
    data = check_values(values, field)
    view = editable(store, store.run(ref))
    if data:
        write_edit(view.path, {field: data}, fsync=fsync_wanted(store), config=store_config(store))
    return view.refresh()
