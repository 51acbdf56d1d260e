"""Capture: artifacts stored once by content, images, histograms, media, system metrics, the console and environment.
Imports core, host and read; the write path (tracker.write) calls into it, and it never imports the write path.

The ``Run`` methods (``log_artifact``, ``log_image``, ``log_histogram``) and
the ``RunView`` readers (``artifacts``, ``open_artifact``, ``copy_artifact``)
delegate to the functions here. Records of these kinds are written at the
run's latest step when no step is given, and never advance the automatic
step of ``run.log``.

Modules: :mod:`.blobs` (content-addressed files), :mod:`.artifacts`,
:mod:`.media` (images and histograms), :mod:`.audio`, :mod:`.video`,
:mod:`.object3d` and :mod:`.html` (media checked and encoded; :mod:`.mediafile`
tells a file's format by its first bytes), :mod:`.system` (the sampler thread),
:mod:`.console` (what the process prints) and :mod:`.environment` (what it
runs on). The write path hands the last two a run at its start
(:func:`start_recorders`) and stops them at its finish, nothing more.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tracker.capture.artifacts import Logged
from tracker.core.errors import TrackerError


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


class Recorders:
    """A run's console and environment recorders, stopped together when the run finishes."""

    def __init__(self, console: Any = None, environment: Any = None) -> None:
        self.console = console
        self.environment = environment

    def stop(self) -> None:
        """Let the environment record be written, then write the last console lines and restore the streams."""
        if self.environment is not None:
            self.environment.wait()
            self.environment = None
        if self.console is not None:
            from tracker.capture.console import remove_sink

            remove_sink(self.console)
            self.console = None


#: ``TRACKER_CONSOLE`` values (W&B's ``WANDB_CONSOLE`` names too) and what they mean.
_CONSOLE_VALUES = {"off": None, "false": None, "0": None, "no": None, "on": "wrap", "true": "wrap", "1": "wrap",
                   "yes": "wrap", "wrap": "wrap", "auto": "wrap", "fd": "fd", "redirect": "fd"}
_SWITCH_VALUES = {"off": False, "false": False, "0": False, "no": False, "on": True, "true": True, "1": True,
                  "yes": True}


def blob_putter(store: Any, fsync: bool = False) -> Callable[[bytes], str]:
    """``put(data) -> sha256``: ``data`` stored as a blob of ``store``, once (the same bytes again write nothing)."""

    def put(data: bytes) -> str:
        import hashlib

        from tracker.capture.blobs import BlobStore

        blobs = BlobStore(store, fsync=fsync)
        sha = hashlib.sha256(data).hexdigest()
        if not blobs.exists(sha):
            sha, _ = blobs.put_bytes(data)
        return sha

    return put


def console_mode(console: Any, config: Any) -> str | None:
    """``"wrap"``, ``"fd"`` or ``None`` (off): ``start_run(console=)``, else ``TRACKER_CONSOLE``, else
    tracker.toml's ``[run] console`` (on by default).

    :raises TypeError: ``console`` is not None, True, False, "wrap" or "fd".
    :raises TrackerError: ``TRACKER_CONSOLE`` holds something else than off, wrap or fd (or their synonyms).
    """
    if console is None:
        env = os.environ.get("TRACKER_CONSOLE")
        if env:
            if env.strip().lower() not in _CONSOLE_VALUES:
                raise TrackerError(f"TRACKER_CONSOLE: expected off, wrap or fd, given {env!r}")
            return _CONSOLE_VALUES[env.strip().lower()]
        console = getattr(config, "run_console", True)
    if console is False:
        return None
    if console is True or console == "wrap":
        return "wrap"
    if console == "fd":
        return "fd"
    raise TypeError(f'console: expected None, True, False, "wrap" or "fd", given {console!r}')


def environment_on(environment: Any, config: Any) -> bool:
    """Whether to record the environment: ``start_run(environment=)``, else ``TRACKER_ENVIRONMENT``, else
    tracker.toml's ``[run] environment`` (on by default).

    :raises TrackerError: ``TRACKER_ENVIRONMENT`` is not on or off (true/false, 1/0).
    """
    if environment is not None:
        if environment not in (True, False):
            raise TypeError(f"environment: expected None, True or False, given {environment!r}")
        return bool(environment)
    env = os.environ.get("TRACKER_ENVIRONMENT")
    if env:
        if env.strip().lower() not in _SWITCH_VALUES:
            raise TrackerError(f"TRACKER_ENVIRONMENT: expected on or off, given {env!r}")
        return _SWITCH_VALUES[env.strip().lower()]
    return bool(getattr(config, "run_environment", True))


def start_recorders(run: Any, console: str | None, environment: bool) -> Recorders | None:
    """Start ``run``'s console capture (``"wrap"``, ``"fd"`` or ``None``: :func:`console_mode`) and environment
    recorder (:func:`environment_on`); ``None`` when both are off. Never raises for a recorder that cannot start.
    """
    config = run._host.config
    rec = Recorders()
    if console is not None:
        try:
            from tracker.capture.console import add_sink

            rec.console = add_sink(run, console, getattr(config, "console_max_bytes", 100 * 1024 * 1024))
        except Exception:  # noqa: BLE001, S110 - a console that cannot be captured leaves the run as it is
            rec.console = None
    if environment:
        try:
            from tracker.capture.environment import EnvironmentRecorder

            write = side_writer(run)
            rec.environment = EnvironmentRecorder(
                lambda schema, data: write(schema, data, None), blob_putter(run.store, config.fsync), config,
                lambda folder, name: run.log_artifact(folder, name=name, type="code")).start()
        except Exception:  # noqa: BLE001, S110 - as above
            rec.environment = None
    return rec if rec.console is not None or rec.environment is not None else None


__all__ = ["Logged", "Recorders", "blob_putter", "console_mode", "environment_on", "latest_step", "log_artifact",
           "log_histogram", "log_image", "side_writer", "start_recorders", "start_sampler"]
