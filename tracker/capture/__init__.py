"""Capture: artifacts stored once by content, images, histograms and system metrics.
Imports core, host and read; the write path (tracker.write) calls into it, and it never imports the write path.

The ``Run`` methods (``log_artifact``, ``log_image``, ``log_histogram``) and
the ``RunView`` readers (``artifacts``, ``open_artifact``, ``copy_artifact``)
delegate to the functions here. Records of these kinds are written at the
run's latest step when no step is given, and never advance the automatic
step of ``run.log``.

Modules: :mod:`.blobs` (content-addressed files), :mod:`.artifacts`,
:mod:`.media` (images and histograms), :mod:`.system` (the sampler thread).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracker.capture.artifacts import Logged


def latest_step(run: Any) -> int:
    """The largest step the run has logged in this process (0 before any)."""
    step = run._att.writer.max_step
    return 0 if step is None else step


def side_writer(run: Any) -> Callable[[str, dict[str, Any], int | None], tuple[int, float]]:
    """``write(schema, data, step)`` for ``run``: a checked record at ``step`` (default: the latest step).

    A record at the latest step never advances the run's automatic step.
    Returns the step and time written.
    """

    def write(schema: str, data: dict[str, Any], step: int | None) -> tuple[int, float]:
        s = latest_step(run) if step is None else step
        return s, run._log_side(schema, data, s, step is None)

    return write


def log_artifact(run: Any, path: Any, name: str | None = None, *, kind: str = "file",
                 copy: bool = True, step: int | None = None, **more: Any) -> Logged:
    """``Run.log_artifact``: see :func:`tracker.capture.artifacts.log_artifact` (``more``: its type,
    aliases, description, metadata, filename, members and probe arguments)."""
    from tracker.capture.artifacts import log_artifact as _log

    return _log(side_writer(run), run.store, path, name, kind=kind, copy=copy, step=step,
                fsync=run._host.config.fsync, **more)


def log_image(run: Any, name: str, image: Any, step: int | None = None, *, caption: str = "") -> str:
    """``Run.log_image``: store the image as a PNG blob, then its ``image`` record; returns the sha256."""
    from tracker.capture.blobs import BlobStore
    from tracker.capture.media import image_record

    data = image_record(name, image, caption, BlobStore(run.store, fsync=run._host.config.fsync))
    side_writer(run)("image", data, step)
    return data["sha256"]


def log_histogram(run: Any, name: str, values: Any, step: int | None = None, *, bins: Any = 64) -> dict[str, Any]:
    """``Run.log_histogram``: the ``histogram`` record of ``values``; returns its fields."""
    from tracker.capture.media import histogram_record

    data = histogram_record(name, values, bins)
    side_writer(run)("histogram", data, step)
    return data


def start_sampler(run: Any, system_metrics: Any) -> Any:
    """Start the system sampler of ``run`` (``None`` when it is off or nothing can be sampled)."""
    from tracker.capture.system import Sampler, resolve_interval

    interval = resolve_interval(system_metrics, run._host.config)
    if interval is None:
        return None
    write = side_writer(run)
    sampler = Sampler(lambda schema, data: write(schema, data, None), interval)
    return sampler if sampler.start() else None


__all__ = ["Logged", "latest_step", "log_artifact", "log_histogram", "log_image", "side_writer",
           "start_sampler"]
