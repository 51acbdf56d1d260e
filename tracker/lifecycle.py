"""A run's life after the fact: edits (tags, name, notes, config, summary), trash, gc, du.

Edits are events of kind ``edit`` appended to segments of their own,
``<run>/edits/edits-<host>-<pid>-<hex>.jsonl``, one per editing process: two
processes editing one run at once never share a file, and the run's writers
and its records are never touched. Readers apply a run's edits in time order
on top of its start event (:func:`apply_edits`).

``remove_runs`` moves run folders to ``<store>/trash/runs/`` with one rename
each (the trash is itself laid out as a store, so it is read with the same
reader); ``restore_runs`` moves them back; ``collect_garbage`` empties the
trash and removes blobs that no run references; ``disk_usage`` counts bytes.
See docs/format.md ("Edits", "Trash").
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import threading
import time as _time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .errors import RunNotFound, SchemaError, StoreError, TrackerError
from .records import Problem
from .store import FORMAT_VERSION, RUN_ID_RE, LineChunks, LineError, encode_line, hostname, parse_line, pid_alive
from .values import _Bad, _check_json, _holds_special, decode_nonfinite, given

if TYPE_CHECKING:
    from .records import RunInfo
    from .view import RunView, Store

#: The event kind of an edit.
EDIT = "edit"
#: The folder of a run that holds its edit segments, and their file name prefix.
EDITS_FOLDER = "edits"
EDITS_PREFIX = "edits-"
#: The trash: a store-shaped folder, ``<store>/trash/runs/<run_id>/``.
TRASH = "trash"
#: Blobs younger than this many seconds are never removed by gc.
BLOB_MIN_AGE = 3600.0
#: The longest tag or name accepted.
MAX_LABEL = 1000
_BLOB_NAME = re.compile(r"[0-9a-f]{62}\Z")
_HEX2 = re.compile(r"[0-9a-f]{2}\Z")


# --- checks ------------------------------------------------------------------------------------

def _plain_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TrackerError(f"{what}: expected a str, given {given(value)}")
    try:
        _check_json(str.__str__(value))
    except _Bad as bad:
        raise TrackerError(f"{what}: expected {bad.args[0]}, given {given(value)}") from None
    return str.__str__(value)


def check_label(value: Any, what: str) -> str:
    """A tag or a name: one line of text, not blank, at most :data:`MAX_LABEL` characters.

    :raises TrackerError: naming what was wrong.
    """
    text = _plain_text(value, what)
    if "\n" in text or "\r" in text:
        raise TrackerError(f"{what} {text!r}: must be one line, it holds a line break")
    if not text.strip():
        raise TrackerError(f"{what}: must not be empty, given {text!r}")
    if len(text) > MAX_LABEL:
        raise TrackerError(f"{what}: at most {MAX_LABEL} characters, given {len(text)}")
    return text


def check_values(values: Any, what: str) -> dict[str, Any]:
    """A mapping of str keys to JSON values (config or summary).

    The strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` are refused: in
    the store they stand for the floats (docs/format.md, "Values").

    :raises SchemaError: naming the key, what was expected and what was given.
    """
    if not isinstance(values, Mapping):
        raise SchemaError(what, [("(value)", f"expected a dict, given {given(values)}")])
    out = {}
    for key, value in values.items():
        if not isinstance(key, str) or not key:
            raise SchemaError(what, [("(key)", f"expected a non-empty str key, given {given(key)}")])
        try:
            checked = _check_json(value)
        except _Bad as bad:
            raise SchemaError(what, [(key, f"expected {bad.args[0]}, given {given(value)}")]) from None
        if _holds_special(checked):
            raise SchemaError(what, [(key, 'expected no string "NaN", "Infinity" or "-Infinity" '
                                           f"(they stand for floats in the store), given {given(value)}")])
        out[key] = checked
    return out


# --- writing edits -----------------------------------------------------------------------------

def _safe_host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", hostname())[:32] or "host"


def _fsync_folder(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        self.id = f"{EDITS_PREFIX}{_safe_host()}-{self.pid}-{secrets.token_hex(3)}"
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
                _fsync_folder(self.folder)
                _fsync_folder(self.run_dir)
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
            if self.fd is not None:
                try:
                    os.close(self.fd)
                except OSError:
                    pass
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


def write_edit(run_dir: Path, data: dict[str, Any], *, fsync: bool = False) -> None:
    """Append one edit event to this process's edit segment of the run at ``run_dir``."""
    if not run_dir.is_dir():
        raise RunNotFound(f"no run folder {run_dir}: the run was removed")
    edit_writer(run_dir, fsync=fsync).append(data)


# --- reading edits -----------------------------------------------------------------------------

def edit_paths(run_dir: Path) -> list[Path]:
    """The edit segments of a run folder, sorted by name."""
    try:
        with os.scandir(run_dir / EDITS_FOLDER) as it:
            return sorted(Path(e.path) for e in it
                          if e.name.startswith(EDITS_PREFIX) and e.name.endswith(".jsonl") and e.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StoreError(f"cannot read {run_dir / EDITS_FOLDER}: {exc.strerror}") from None


def _writer_alive(writer_id: str) -> bool:
    host, _, _ = writer_id.rpartition("-")
    host, _, pid = host.rpartition("-")
    return host == f"{EDITS_PREFIX}{_safe_host()}" and pid.isdigit() and pid_alive(int(pid), None)


def read_edits(run_dir: Path, report: Callable[[Problem], None] | None = None) -> list[dict[str, Any]]:
    """Every edit event of a run, in the order they apply: by time, then writer and sequence.

    A damaged line is passed to ``report`` (a torn last line only when its
    writer is gone) and skipped; events of a kind this version does not know
    are reported and skipped.
    """
    events = []
    for path in edit_paths(run_dir):
        chunks = LineChunks(path)
        lineno = 0
        for lines in chunks:
            for line in lines:
                lineno += 1
                try:
                    ev = parse_line(line)
                except LineError as exc:
                    if report:
                        report(Problem(str(path), lineno, exc.kind, str(exc)))
                    continue
                if ev.get("kind") != EDIT or not isinstance(ev.get("data"), dict):
                    if report:
                        report(Problem(str(path), lineno, "unknown",
                                       f"an event of kind {ev.get('kind')!r} in an edit segment (ignored)"))
                    continue
                events.append(ev)
        if chunks.rest and report and not _writer_alive(path.stem):
            report(Problem(str(path), lineno + 1, "torn",
                           f"the last line is incomplete ({len(chunks.rest)} bytes): a write was cut off"))
    events.sort(key=lambda e: (e.get("time") or 0.0, str(e.get("w")), e.get("seq") or 0))
    return events


@attrs.frozen(kw_only=True)
class Edited:
    """A run's labels after its edits: what :class:`~tracker.RunInfo` shows."""

    name: str | None
    tags: list[str]
    notes: str | None
    config: dict[str, Any]
    summary: dict[str, Any]
    edits: int = 0


def apply_edits(name: str | None, tags: Iterable[str], notes: str | None, config: Mapping[str, Any],
                events: Iterable[dict[str, Any]]) -> Edited:
    """The labels of a run: its start event's, then every edit applied in order.

    Keys of an edit's ``data`` (applied in this order): ``name``;
    ``tags_add`` and ``tags_remove``; ``notes`` (replaces) and
    ``notes_append`` (adds a line); ``config`` and ``summary`` (top-level
    keys set, last write wins). Other keys are ignored.
    """
    tag_list = list(dict.fromkeys(t for t in tags if isinstance(t, str)))
    cfg = dict(config)
    summary: dict[str, Any] = {}
    n = 0
    for ev in events:
        d = ev["data"]
        n += 1
        if isinstance(d.get("name"), str):
            name = d["name"]
        for t in d.get("tags_add") or ():
            if isinstance(t, str) and t not in tag_list:
                tag_list.append(t)
        remove = {t for t in d.get("tags_remove") or () if isinstance(t, str)}
        if remove:
            tag_list = [t for t in tag_list if t not in remove]
        if isinstance(d.get("notes"), str):
            notes = d["notes"]
        if isinstance(d.get("notes_append"), str):
            notes = f"{notes}\n{d['notes_append']}" if notes else d["notes_append"]
        if isinstance(d.get("config"), dict):
            cfg.update(decode_nonfinite(d["config"]))
        if isinstance(d.get("summary"), dict):
            summary.update(decode_nonfinite(d["summary"]))
    return Edited(name=name, tags=tag_list, notes=notes, config=cfg, summary=summary, edits=n)


# --- the editing API -----------------------------------------------------------------------------

def _fsync_wanted(store: Store) -> bool:
    try:
        return store.host.config.durability == "fsync"
    except TrackerError:
        return False


def _views(store: Store, refs: Iterable[str]) -> list[RunView]:
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
    views = _views(store, refs)
    fsync = _fsync_wanted(store)
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
            write_edit(view.path, data, fsync=fsync)
        out.append(view.refresh())
    return out


def rename_run(store: Store, ref: str, name: str) -> RunInfo:
    """Give a run a new name (free text, one line, not blank); returns its info."""
    name = check_label(name, "name")
    view = store.run(ref)
    if view.info.name != name:
        write_edit(view.path, {"name": name}, fsync=_fsync_wanted(store))
    return view.refresh()


def note_run(store: Store, ref: str, text: str, *, append: bool = False) -> RunInfo:
    """Set a run's notes (``append``: add ``text`` as a line after them); returns its info."""
    text = _plain_text(text, "note")
    if append and not text.strip():
        raise TrackerError("note: nothing to append, the text is empty")
    view = store.run(ref)
    write_edit(view.path, {"notes_append" if append else "notes": text}, fsync=_fsync_wanted(store))
    return view.refresh()


def update_config(store: Store, ref: str, values: Mapping[str, Any]) -> RunInfo:
    """Set top-level config keys of a run (an appended event; the start event is kept)."""
    data = check_values(values, "config")
    view = store.run(ref)
    if data:
        write_edit(view.path, {"config": data}, fsync=_fsync_wanted(store))
    return view.refresh()


def update_summary(store: Store, ref: str, values: Mapping[str, Any]) -> RunInfo:
    """Set summary values of a run (last write wins)."""
    data = check_values(values, "summary")
    view = store.run(ref)
    if data:
        write_edit(view.path, {"summary": data}, fsync=_fsync_wanted(store))
    return view.refresh()


# --- trash ---------------------------------------------------------------------------------------

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
    """The trash opened as a store (its runs are the removed ones)."""
    from .view import Store

    return Store(trash_path(store), host=store._host)


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
        infos = [v.info for v in _views(store, refs)]
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
    fsync = _fsync_wanted(store)
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
        _fsync_folder(runs_dir)
        _fsync_folder(dest)
    return moved


def restore_runs(store: Store, refs: str | Iterable[str]) -> list[RunInfo]:
    """Move runs back from the trash; returns their infos.

    :raises RunNotFound: for a run that is not in the trash.
    :raises TrackerError: when a run of the same id exists in the store again
        (checked for every run before the first is moved: nothing changes).
    """
    trash = trash_store(store)
    views = _views(trash, refs)
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
    if _fsync_wanted(store) and out:
        _fsync_folder(runs_dir)
    return out


# --- blobs, gc, du -------------------------------------------------------------------------------

def blob_root(store: Store | Path) -> Path:
    """``<store>/blobs/sha256``: content-addressed files, ``<2 hex>/<62 hex>``."""
    return Path(getattr(store, "path", store)) / "blobs" / "sha256"


def iter_blobs(store: Store | Path) -> Iterator[tuple[str, Path, os.stat_result]]:
    """Every blob of the store: ``(sha256, path, stat)``; temporary files are not blobs."""
    root = blob_root(store)
    try:
        fans = sorted(e.name for e in os.scandir(root) if e.is_dir() and _HEX2.match(e.name))
    except FileNotFoundError:
        return
    for fan in fans:
        try:
            entries = sorted(os.scandir(root / fan), key=lambda e: e.name)
        except FileNotFoundError:
            continue
        for e in entries:
            if _BLOB_NAME.match(e.name):
                try:
                    yield fan + e.name, Path(e.path), e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue


References = Callable[["RunView"], Iterable[str]]


def default_references() -> References | None:
    """The capture plugin's ``references(view)``, or ``None`` when this version has no blobs."""
    try:
        from .capture.blobs import references
    except ImportError:
        return None
    return references


def _run_fingerprint(view: RunView) -> tuple[int, int]:
    size = count = 0
    for p in [*view.segment_paths(), *edit_paths(view.path)]:
        try:
            size += p.stat().st_size
            count += 1
        except OSError:
            continue
    return size, count


def _all_references(store: Store, refs_of: References) -> tuple[set[str], dict[str, tuple[int, int]], set[str]]:
    """Every blob referenced by the runs of the store, each run's fingerprint, the running runs."""
    from .view import RunView

    refs: set[str] = set()
    prints = {}
    running = set()
    for rid in store.run_ids():
        try:
            view = RunView(store.path, rid, host=store._host)
            prints[rid] = _run_fingerprint(view)
            if view.info.status == "running":
                running.add(rid)
            refs.update(refs_of(view))
        except RunNotFound:
            continue  # removed meanwhile
    return refs, prints, running


@attrs.frozen(kw_only=True)
class GcReport:
    """What ``collect_garbage`` removed (or, dry, would remove)."""

    dry_run: bool
    trash_runs: list[str]
    trash_bytes: int
    blobs: int
    blob_bytes: int
    blobs_kept_young: int
    blobs_scanned: bool


def collect_garbage(store: Store, *, dry_run: bool = False, references: References | None = None,
                    min_age: float = BLOB_MIN_AGE) -> GcReport:
    """Empty the trash, then remove blobs that no run in ``runs/`` references.

    Safe while other processes log: a blob younger than ``min_age`` seconds
    is never removed, references are listed after the blobs, and the runs
    that appeared or changed meanwhile are read again before anything is
    removed; each blob's age is checked again just before it goes. A run of
    the trash is first renamed to a hidden name, then deleted, so a kill
    leaves it whole in the trash or in a hidden leftover the next gc removes.

    :param references: ``references(view) -> sha256 hex digests``; default the
        capture module's (without it, no blob is touched).
    """
    trash = trash_path(store)
    trash_runs = []
    trash_bytes = 0
    try:
        entries = sorted(os.scandir(trash / "runs"), key=lambda e: e.name)
    except FileNotFoundError:
        entries = []
    try:
        # Runs a killed gc had begun to delete: finished now.
        leftovers = sorted(Path(e.path) for e in os.scandir(trash) if e.name.startswith(".gc-") and e.is_dir())
    except FileNotFoundError:
        leftovers = []
    for e in entries:
        if not (e.is_dir(follow_symlinks=False) and RUN_ID_RE.match(e.name)):
            continue
        trash_runs.append(e.name)
        trash_bytes += folder_bytes(Path(e.path))
        if not dry_run:
            tomb = trash / f".gc-{e.name}-{secrets.token_hex(4)}"
            os.rename(e.path, tomb)
            shutil.rmtree(tomb, ignore_errors=True)
    for tomb in leftovers:
        trash_bytes += folder_bytes(tomb)
        if not dry_run:
            shutil.rmtree(tomb, ignore_errors=True)

    refs_of = references if references is not None else default_references()
    if refs_of is None:
        return GcReport(dry_run=dry_run, trash_runs=trash_runs, trash_bytes=trash_bytes, blobs=0, blob_bytes=0,
                        blobs_kept_young=0, blobs_scanned=False)
    now = _time.time()
    # Blobs first, references second: a blob written after the listing is not a
    # candidate, and a record that names a listed blob is in a run listed after it.
    blobs = list(iter_blobs(store))
    refs, prints, running = _all_references(store, refs_of)
    young = sum(1 for _, _, st in blobs if now - st.st_mtime < min_age)
    candidates = [(sha, p, st) for sha, p, st in blobs if sha not in refs and now - st.st_mtime >= min_age]
    if candidates:
        # Runs that appeared, changed or were running meanwhile: read their references again.
        from .view import RunView

        for rid in store.run_ids():
            if rid in prints and rid not in running:
                try:
                    view = RunView(store.path, rid, host=store._host)
                    if _run_fingerprint(view) == prints[rid]:
                        continue
                except RunNotFound:
                    continue
            try:
                refs.update(refs_of(RunView(store.path, rid, host=store._host)))
            except RunNotFound:
                continue
        candidates = [c for c in candidates if c[0] not in refs]
    removed = removed_bytes = 0
    for _sha, path, _st in candidates:
        try:
            now_st = os.stat(path)
        except FileNotFoundError:
            continue
        if _time.time() - now_st.st_mtime < min_age:
            young += 1  # logged again meanwhile (the writer refreshes a blob it reuses)
            continue
        if not dry_run:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
        removed += 1
        removed_bytes += now_st.st_size
    return GcReport(dry_run=dry_run, trash_runs=trash_runs, trash_bytes=trash_bytes, blobs=removed,
                    blob_bytes=removed_bytes, blobs_kept_young=young, blobs_scanned=True)


def _index_bytes(store: Store, run_ids: Iterable[str]) -> tuple[dict[str, int], int]:
    """Bytes of ``<store>/index/`` per run (files whose path names a run id), and the rest."""
    ids = set(run_ids)
    per_run: dict[str, int] = {}
    other = 0
    root = Path(store.path) / "index"
    for folder, _dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root).parts
        for f in files:
            try:
                size = os.lstat(os.path.join(folder, f)).st_size
            except OSError:
                continue
            owner = next((p for p in (*rel, f.split(".", 1)[0]) if p in ids), None)
            if owner is None:
                other += size
            else:
                per_run[owner] = per_run.get(owner, 0) + size
    return per_run, other


def disk_usage(store: Store, *, references: References | None = None) -> dict[str, Any]:
    """Apparent bytes per run and per project, largest first, and the store's total.

    A run's bytes are its JSONL (segments and edits), the blobs it references
    (each once) and its share of the index. A blob referenced by several runs
    counts in each of them, once in each project that has it, and once in
    the total. The total is every byte of the store: runs, blobs (referenced
    or not), index, trash.
    """
    from .view import RunView

    refs_of = references if references is not None else default_references()
    blob_sizes = {sha: st.st_size for sha, _, st in iter_blobs(store)}
    ids = store.run_ids()
    index, index_other = _index_bytes(store, ids)
    runs = []
    project_blobs: dict[str | None, set[str]] = {}
    referenced: set[str] = set()
    for rid in ids:
        try:
            view = RunView(store.path, rid, host=store._host)
            info = view.info
            refs = {r for r in refs_of(view) if r in blob_sizes} if refs_of is not None else set()
        except RunNotFound:
            continue
        jsonl = folder_bytes(view.path)
        blob_bytes = sum(blob_sizes[r] for r in refs)
        referenced |= refs
        project_blobs.setdefault(info.project, set()).update(refs)
        runs.append({"id": rid, "name": info.name, "project": info.project, "status": info.status,
                     "jsonl": jsonl, "blobs": blob_bytes, "index": index.get(rid, 0),
                     "total": jsonl + blob_bytes + index.get(rid, 0)})
    runs.sort(key=lambda r: (-r["total"], r["id"]))
    projects: dict[str | None, dict[str, Any]] = {}
    for r in runs:
        p = projects.setdefault(r["project"], {"project": r["project"], "runs": 0, "jsonl": 0, "blobs": 0,
                                               "index": 0})
        p["runs"] += 1
        p["jsonl"] += r["jsonl"]
        p["index"] += r["index"]
    for name, p in projects.items():
        p["blobs"] = sum(blob_sizes[s] for s in project_blobs.get(name, ()))
        p["total"] = p["jsonl"] + p["blobs"] + p["index"]
    project_list = sorted(projects.values(), key=lambda p: (-p["total"], str(p["project"])))
    unreferenced = {s: n for s, n in blob_sizes.items() if s not in referenced}
    trash = folder_bytes(trash_path(store))
    runs_total = sum(r["jsonl"] + r["index"] for r in runs) + sum(blob_sizes[s] for s in referenced)
    total = runs_total + sum(unreferenced.values()) + index_other + trash
    return {"runs": runs, "projects": project_list,
            "blobs": {"count": len(blob_sizes), "bytes": sum(blob_sizes.values()),
                      "unreferenced": len(unreferenced) if refs_of is not None else None,
                      "unreferenced_bytes": sum(unreferenced.values()) if refs_of is not None else None},
            "index_other": index_other, "trash": trash, "runs_total": runs_total, "total": total}


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
