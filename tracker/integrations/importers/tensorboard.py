"""Read TensorBoard event files: every folder with event files is a run.

The files are read with TensorBoard's own record reader
(``RawEventFileLoader``) and its ``Event`` protobuf. Scalars (``simple_value``
summaries, and tensors of the ``scalars`` plugin) become metrics named as the
tags are written (``train/loss``), at the event's step and wall time;
histograms become ``histogram`` records, images ``image`` records and audio
clips (the audio plugin's WAV, old-style or tensor summaries) ``audio`` records
with their blobs (at their step and wall time); hparams (``add_hparams``, or
an hparams summary in the run's own files) become the config; what else an
event holds (text...) is counted and reported as not imported. A FIFO, socket or device
named like an event file is reported and skipped, never opened. PyTorch's
``SummaryWriter.add_hparams`` writes its hparams into a subfolder of the
run: such a subfolder is read as part of its parent run. The run's name is its folder's path under LOGDIR.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError
from tracker.integrations._common import require
from tracker.integrations.importers import SourceError, SourceRun, file_size, not_a_file, source_run_id
from tracker.integrations.tbevents import decode_image, hparams, summary_values

__all__ = ["tensorboard_runs"]

# TFRecord framing around each event: length (8 bytes), its CRC (4), the data's CRC (4).
_FRAMING = 16


def tensorboard_runs(logdir: str | os.PathLike[str], project: str | None = None,
                     problem: Callable[[str], None] | None = None) -> Iterator[SourceRun]:
    """The runs of a TensorBoard log folder, one per folder holding event files.

    :param logdir: the log folder (``SummaryWriter(log_dir=...)`` or its parent).
    :param project: the project of the imported runs (default: the log folder's name).
    :param problem: called with one line per file that cannot be read (a run of such files only is skipped).
    :raises SourceError: the folder does not exist or holds no event file.
    """
    require("tensorboard", "tensorboard", "tracker import tensorboard")
    root = Path(logdir)
    if not root.is_dir():
        raise SourceError(f"{root}: no such folder (expected a TensorBoard log folder)")
    folders = _run_folders(root, problem or _ignore)
    if not folders:
        raise SourceError(f"{root}: no TensorBoard event files (events.out.tfevents.*) in it or below it")
    project = project if project is not None else root.resolve().name
    for folder, files in folders.items():
        source = _source_run(root, folder, files, project, problem or _ignore)
        if source is not None:
            yield source


def _run_folders(root: Path, problem: Callable[[str], None]) -> dict[Path, list[Path]]:
    """Folders with event files, each with its files in name order (oldest first); hparams subfolders merged.

    A FIFO, socket or device named like an event file is reported and left out: opening one could block.
    """
    folders: dict[Path, list[Path]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        files = []
        for f in sorted(f for f in filenames if "tfevents" in f):
            what = not_a_file(Path(dirpath) / f)
            if what is None:
                files.append(f)
            else:
                problem(f"{Path(dirpath) / f}: {what}, not an event file; skipped")
        if files:
            folders[Path(dirpath)] = [Path(dirpath) / f for f in files]
    for folder in list(folders):
        parent = folder.parent
        if folder != root and parent in folders and all(_mentions_hparams(f) for f in folders[folder]):
            folders[parent].extend(folders.pop(folder))
    return folders


def _mentions_hparams(path: Path) -> bool:
    """Whether the file holds the bytes ``hparams`` at all (a fast check before parsing it)."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return False
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return m.find(b"hparams") >= 0
    except (OSError, ValueError):
        return False


def _source_run(root: Path, folder: Path, files: list[Path], project: str | None,
                problem: Callable[[str], None]) -> SourceRun | None:
    rel = folder.relative_to(root).as_posix()
    name = root.resolve().name if rel == "." else rel
    config_values: dict[str, Any] = {}
    created = None
    for path in files:
        if _mentions_hparams(path):
            for event in _events(path, _ignore, _ignore):
                config_values.update(hparams(event))
    for path in files:
        for event in _events(path, _ignore, _ignore):
            created = event.wall_time or None
            break
        else:
            continue
        break
    else:
        for path in files:
            for _ in _events(path, problem, _ignore):
                pass
        problem(f"{folder}: no event could be read from its event files; not imported")
        return None
    config = {**config_values, "imported_from": {"format": "tensorboard", "logdir": str(root.resolve()),
                                                 "folder": rel, "first_event_file": files[0].name}}

    skipped: dict[str, int] = {}

    def records(problem: Callable[[str], None], progress: Callable[[int], None]) -> Iterator[tuple]:
        for path in files:
            plugins: dict[str, str] = {}
            for event in _events(path, problem, progress):
                yield from _items(event, plugins, skipped, problem, path)

    return SourceRun(run_id=source_run_id("tb", files[0].name), name=name, project=project, config=config,
                     tags=[], created_at=created, ended_at=None, status="finished", error=None,
                     records=records, size=sum(file_size(p) for p in files), source=str(folder),
                     skipped=skipped)


def _ignore(_: Any) -> None:
    pass


def _events(path: Path, problem: Callable[[str], None], progress: Callable[[int], None]) -> Iterator[Any]:
    """The events of one file, parsed; a file or record that cannot be read is reported and skipped."""
    from google.protobuf.message import DecodeError
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto import event_pb2

    size = file_size(path)
    done = 0
    try:
        if not os.access(path, os.R_OK):
            raise PermissionError("permission denied")
        for raw in RawEventFileLoader(str(path)).Load():
            n = len(raw) + _FRAMING
            done += n
            progress(n)
            try:
                event = event_pb2.Event.FromString(raw)
            except DecodeError as exc:
                problem(f"{path}: a record at byte {done - n} is not an event ({exc}); skipped")
                continue
            yield event
    except Exception as exc:  # noqa: BLE001 - any reader failure: report the file, import the rest
        problem(f"{path}: cannot be read ({type(exc).__name__}: {exc}); skipped from byte {done}")
        progress(max(0, size - done))
        return
    if done < size:
        problem(f"{path}: unreadable from byte {done} of {size} (a damaged or truncated record); "
                f"the rest of the file is skipped")
        progress(size - done)


def _items(event: Any, plugins: dict[str, str], skipped: dict[str, int], problem: Callable[[str], None],
           path: Path) -> Iterator[tuple]:
    """The records of one event: one of its scalars, then each histogram and image; counts the rest in ``skipped``."""
    values: dict[str, float] = {}
    others: list[tuple] = []
    time, step = event.wall_time, int(event.step)
    for kind, tag, payload in summary_values(event, plugins):
        if kind == "scalar":
            values[tag] = payload
        elif kind == "histogram":
            others.append((time, step, {**payload, "name": tag}, "histogram"))
        elif kind == "image":
            try:
                image = decode_image(payload)
            except Exception as exc:  # noqa: BLE001 - Pillow missing or a damaged image: named, skipped
                problem(f"{path}: image {tag!r} at step {step} cannot be decoded ({type(exc).__name__}: {exc}); "
                        "skipped")
                continue
            others.append((time, step, {"name": tag, "image": image}, "image"))
        elif kind == "audio":
            from tracker.capture.audio import clip_from_bytes

            try:
                clip = clip_from_bytes(payload, f"audio {tag!r} at step {step}")
            except TrackerError as exc:  # a damaged clip, or PyAV missing for a non-WAV one: named, skipped
                problem(f"{path}: audio {tag!r} at step {step} cannot be read ({exc}); skipped")
                continue
            others.append((time, step, {"name": tag, "clip": clip}, "audio"))
        elif kind == "skipped":
            skipped[payload] = skipped.get(payload, 0) + 1
    if values:
        yield time, step, values
    yield from others
