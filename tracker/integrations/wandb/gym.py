"""``wandb.init(monitor_gym=True)``: each video gymnasium's ``RecordVideo`` writes is logged as a ``video`` record.

As W&B's gym integration does, the recorder class is patched once per
process: when ``RecordVideo`` finishes a video (``stop_recording``, also
called by ``close``), the file is logged to the active run with
``run.log({key: tracker.Video(path)})``, at the next step. The key is W&B's:
``video.N`` when the file's path holds ``video.N``, else ``videos``
(gymnasium 1.x names its files ``rl-video-episode-N.mp4``, so ``videos``).
Older gymnasium (before 1.0) writes through ``VideoRecorder``, whose
``close`` is patched the same way. A video that cannot be logged is a
warning, never an error in the training loop.
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from typing import Any

from tracker.core.errors import TrackerError

_lock = threading.Lock()
_patched: list[tuple[Any, str, Any]] = []
_KEY = re.compile(r".+(video\.\d+).+")


def key_for(path: str) -> str:
    """W&B's key for a video file: ``video.N`` when the path holds it, else ``videos``."""
    m = _KEY.match(path)
    return m.group(1) if m else "videos"


def log_video(path: str) -> None:
    """Log the video at ``path`` to the active run under W&B's key (nothing when no run is active or no file)."""
    from tracker.write.api import current_run
    from tracker.write.wandb.media import Video

    run = current_run()
    if run is None or run.status != "running" or not os.path.isfile(path):
        return
    try:
        run.log({key_for(path): Video(path)})
    except TrackerError as exc:
        from tracker.host.bus import TrackerWarning

        warnings.warn(f"tracker: monitor_gym: the video {path} was not logged: {exc}", TrackerWarning, stacklevel=3)


def monitor() -> None:
    """Patch gymnasium's video recorder once, so each video it writes is logged (see the module's docstring).

    :raises TrackerError: gymnasium is not installed.
    """
    try:
        import gymnasium.wrappers as wrappers
    except ImportError:
        raise TrackerError("init(monitor_gym=True) logs the videos of gymnasium's RecordVideo: "
                           "pip install gymnasium moviepy") from None
    with _lock:
        if _patched:
            return
        recorder = getattr(wrappers, "RecordVideo", None)
        if recorder is not None and hasattr(recorder, "stop_recording"):
            original = recorder.stop_recording

            def stop_recording(self: Any) -> None:
                name, folder = getattr(self, "_video_name", None), getattr(self, "video_folder", None)
                original(self)
                if name and folder:
                    log_video(os.path.join(folder, f"{name}.mp4"))

            recorder.stop_recording = stop_recording
            _patched.append((recorder, "stop_recording", original))
            return
        try:  # gymnasium before 1.0
            from gymnasium.wrappers.monitoring.video_recorder import VideoRecorder
        except ImportError:
            raise TrackerError("init(monitor_gym=True): this gymnasium has neither RecordVideo.stop_recording nor "
                               "VideoRecorder; gymnasium>=1.0 is supported") from None
        close = VideoRecorder.close

        def close_and_log(self: Any) -> None:
            was_open = not getattr(self, "_closed", False) and getattr(self, "enabled", True)
            close(self)
            if was_open and getattr(self, "path", None):
                log_video(self.path)

        VideoRecorder.close = close_and_log
        _patched.append((VideoRecorder, "close", close))


def unmonitor() -> None:
    """Undo :func:`monitor` (tests use it; W&B has no such call)."""
    with _lock:
        while _patched:
            cls, name, original = _patched.pop()
            setattr(cls, name, original)
