"""``init(sync_tensorboard=True)``: what TensorBoard writers log is also logged to the run.

The ``add_event`` method of the event-file writers of
``torch.utils.tensorboard`` and tensorboardX is wrapped while the run is
open: after the event is written to its file as usual, its scalars become
metrics at the event's step, its histograms ``histogram`` records and its
images ``image`` records; ``add_hparams`` joins the run's config. The
original methods are put back at ``finish``.
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings
from typing import Any

from tracker.host.bus import TrackerWarning

#: module -> the class whose ``add_event`` every summary passes through
_WRITERS = {"torch.utils.tensorboard.writer": "FileWriter", "tensorboardX.writer": "FileWriter"}
_lock = threading.Lock()
_active: list[TensorBoardSync] = []
_originals: dict[tuple[str, str], Any] = {}


class TensorBoardSync:
    """The wrapping of TensorBoard writers for one run."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self._plugins: dict[str, str] = {}
        self._roots: list[str] = []
        with _lock:
            if not _active:
                _patch()
            _active.append(self)
        if not _originals:
            warnings.warn("tracker: init(sync_tensorboard=True): neither torch.utils.tensorboard nor tensorboardX "
                          "can be imported; nothing is synced", TrackerWarning, stacklevel=4)

    def stop(self) -> None:
        """Stop syncing; the last run to stop puts the writers' methods back."""
        with _lock:
            if self in _active:
                _active.remove(self)
            if not _active:
                _unpatch()

    def event(self, event: Any, logdir: str | None) -> None:
        """Record what one event holds."""
        from tracker.integrations.tbevents import decode_image, hparams, summary_values

        run = self.run
        if run.status != "running" or event.WhichOneof("what") != "summary":
            return
        sub = self._subfolder(logdir)
        step = int(event.step)
        scalars: dict[str, float] = {}
        for kind, tag, payload in summary_values(event, self._plugins):
            name = _name(sub, tag)
            if kind == "scalar":
                scalars[name] = payload
            elif kind == "histogram":
                run._log_side("histogram", {**payload, "name": name}, step, latest=False)
            elif kind == "image":
                run.log_image(name, decode_image(payload), step)
            elif kind == "audio":
                self._audio(name, payload, step)
            elif kind == "hparams":
                values = hparams(event)
                if values:
                    run.config.update(values)
        if scalars:
            run.log(scalars, step=step)

    def _audio(self, name: str, data: bytes, step: int) -> None:
        """An ``add_audio`` clip (WAV bytes) as an ``audio`` record at its step."""
        from tracker.capture.audio import audio_record, clip_from_bytes
        from tracker.capture.blobs import BlobStore

        run = self.run
        clip = clip_from_bytes(data, f"audio {name!r} at step {step}")
        record = audio_record(name, clip, "", BlobStore(run.store, fsync=run._host.config.fsync))
        run._log_side("audio", record, step, latest=False)

    def _subfolder(self, logdir: str | None) -> str:
        """The writer's folder under the first one seen (``add_scalars`` writes into subfolders), or ``""``."""
        if not logdir:
            return ""
        logdir = os.path.abspath(logdir)
        for root in self._roots:
            if logdir == root:
                return ""
            if logdir.startswith(root + os.sep):
                return os.path.relpath(logdir, root).replace(os.sep, "/")
        self._roots.append(logdir)
        return ""


def _name(sub: str, tag: str) -> str:
    """``add_scalars("pair", {"a": ...})`` writes tag ``pair`` into ``pair_a`` (torch) or ``pair/a``
    (tensorboardX): both are the metric ``pair/a``; any other subfolder prefixes the tag."""
    if not sub:
        return tag
    for sep in ("_", "/"):
        if sub.startswith(tag + sep) and len(sub) > len(tag) + 1:
            return f"{tag}/{sub[len(tag) + 1:]}"
    return f"{sub}/{tag}"


def _patch() -> None:
    for module_name, cls_name in _WRITERS.items():
        try:
            module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001, S112 - that writer is not installed (or cannot load): nothing to wrap
            continue
        cls = getattr(module, cls_name, None)
        if cls is None or (module_name, cls_name) in _originals:
            continue
        original = cls.add_event
        _originals[(module_name, cls_name)] = original

        def add_event(self: Any, event: Any, step: Any = None, walltime: Any = None, *,
                      _original: Any = original) -> Any:
            out = _original(self, event, step, walltime)
            logdir = None
            try:
                logdir = self.get_logdir()
            except Exception:  # noqa: BLE001 - an odd writer: its tags are taken as they are
                pass
            for sync in list(_active):
                try:
                    sync.event(event, logdir)
                except Exception as exc:  # noqa: BLE001 - TensorBoard logging never fails because of the sync
                    warnings.warn(f"tracker: sync_tensorboard: an event of step {getattr(event, 'step', '?')} "
                                  f"could not be recorded: {type(exc).__name__}: {exc}", TrackerWarning, stacklevel=2)
            return out

        cls.add_event = add_event


def _unpatch() -> None:
    for (module_name, cls_name), original in list(_originals.items()):
        module = importlib.import_module(module_name)
        getattr(module, cls_name).add_event = original
        del _originals[(module_name, cls_name)]
