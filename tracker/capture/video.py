"""Videos: a numpy array encoded as mp4 (H.264), webm (VP9) or gif, or an mp4/webm/gif file stored as it is.

An array is uint8 ``(T, C, H, W)`` or ``(N, T, C, H, W)`` with C = 1, 3 or 4
(W&B's convention): N videos are tiled into one grid of ``2**(k//2)`` rows
(N padded with black videos to a power of two, 2**k), as W&B does; one
channel is grey, a fourth (alpha) is dropped. mp4 and webm are encoded with
PyAV (the ``media`` extra, whose wheels carry FFmpeg): H.264 in yuv420p,
VP9 for webm, odd sizes padded to even by repeating the last row or column
(``width`` and ``height`` are those of the stored frames); gif with Pillow.
A file is checked by its first bytes; its frames, size, rate and duration
are read from it (PyAV for mp4 and webm, Pillow for gif).
"""

from __future__ import annotations

import io
from fractions import Fraction
from typing import Any

import attrs

from tracker.capture.mediafile import Payload, av_module, bad, file_payload, mismatch, pil_module, sniff
from tracker.core.errors import SchemaError
from tracker.core.values import given

VIDEO = "video"
ENCODED = ("mp4", "webm", "gif")
VIDEO_FILES = {".mp4": "mp4", ".m4v": "mp4", ".webm": "webm", ".gif": "gif"}
#: The largest side of an encoded video, in pixels.
MAX_SIDE = 8192
MAX_FPS = 1000


@attrs.frozen
class Movie:
    """A checked video: its bytes and the ``video`` record's fields but the name, sha256 and caption."""

    payload: Payload
    format: str
    fps: float
    frames: int
    width: int
    height: int
    duration_s: float

    def fields(self) -> dict[str, Any]:
        """``format``, ``fps``, ``frames``, ``width``, ``height``, ``duration_s``."""
        return {"format": self.format, "fps": self.fps, "frames": self.frames, "width": self.width,
                "height": self.height, "duration_s": self.duration_s}


def check_fps(fps: Any) -> float:
    """Frames per second: a positive finite number up to :data:`MAX_FPS`."""
    import numpy as np

    ok = isinstance(fps, (int, float, np.integer, np.floating)) and not isinstance(fps, (bool, np.bool_))
    if ok and 0 < float(fps) <= MAX_FPS:
        return float(fps)
    raise bad(VIDEO, "fps", f"expected a number of frames per second above 0 and up to {MAX_FPS}, given {given(fps)}")


def video_frames(data: Any) -> Any:
    """``data`` checked and laid out as uint8 RGB frames ``(T, H, W, 3)`` (N videos tiled into a grid).

    :raises SchemaError: a bad shape, dtype, size or an empty array.
    """
    import numpy as np

    from tracker.capture.media import _as_numpy

    try:
        a = _as_numpy(data)
    except (TypeError, ValueError) as exc:
        raise bad(VIDEO, "data_or_path", f"expected an array of frames, given {given(data)}: {exc}") from None
    shape = tuple(int(d) for d in a.shape)
    if a.ndim == 4:
        a = a[None]
    if a.ndim != 5 or a.shape[2] not in (1, 3, 4):
        raise bad(VIDEO, "data_or_path", "expected frames of shape (T, C, H, W) or (N, T, C, H, W) with C = 1, 3 or 4, "
                                         f"given shape {shape}")
    if 0 in a.shape:
        raise bad(VIDEO, "data_or_path", f"expected at least one frame of at least 1x1 pixels, given shape {shape}")
    if a.dtype != np.uint8:
        if a.dtype.kind == "b":
            a = a.astype(np.uint8) * 255
        elif a.dtype.kind in "iu" and int(a.min()) >= 0 and int(a.max()) <= 255:
            a = a.astype(np.uint8)
        else:
            raise bad(VIDEO, "data_or_path", f"expected uint8 frames (0-255), given dtype {a.dtype}"
                                             + (" (scale floats to 0-255 and cast with .astype(np.uint8))"
                                                if a.dtype.kind == "f" else ""))
    n, t, c, h, w = a.shape
    if n & (n - 1):  # W&B's grid: N padded to a power of two with black videos
        a = np.concatenate([a, np.zeros((2 ** n.bit_length() - n, t, c, h, w), dtype=np.uint8)])
        n = a.shape[0]
    rows = 2 ** ((n.bit_length() - 1) // 2)
    cols = n // rows
    a = a.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3).reshape(t, rows * h, cols * w, c)
    if rows * h > MAX_SIDE or cols * w > MAX_SIDE:
        raise bad(VIDEO, "data_or_path", f"expected frames of at most {MAX_SIDE}x{MAX_SIDE} pixels, given "
                                         f"{cols * w}x{rows * h} (shape {shape})")
    if c == 1:
        a = np.repeat(a, 3, axis=3)
    elif c == 4:
        a = a[..., :3]
    return np.ascontiguousarray(a)


def _even(frames: Any) -> Any:
    """Frames padded to even height and width (yuv420p halves both), repeating the last row or column."""
    import numpy as np

    _, h, w, _ = frames.shape
    if h % 2 or w % 2:
        frames = np.pad(frames, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)), mode="edge")
    return frames


def encode_av(frames: Any, fps: float, fmt: str) -> bytes:
    """mp4 (H.264, yuv420p) or webm (VP9) bytes of uint8 RGB frames ``(T, H, W, 3)``, with PyAV.

    An mp4 is written to a temporary file: its index (moov) is moved before the frames
    (``faststart``, so a player starts without reading to the end), which FFmpeg does by reading the file back.
    """
    import os
    import tempfile

    av = av_module()
    frames = _even(frames)
    rate = Fraction(fps).limit_denominator(1001)
    fd, tmp = tempfile.mkstemp(suffix=f".{fmt}", prefix="tracker-video-")
    os.close(fd)
    try:
        options = {"movflags": "+faststart"} if fmt == "mp4" else {}
        with av.open(tmp, mode="w", format=fmt, options=options) as container:
            stream = container.add_stream("libx264" if fmt == "mp4" else "libvpx-vp9", rate=rate)
            stream.width, stream.height = int(frames.shape[2]), int(frames.shape[1])
            stream.pix_fmt = "yuv420p"
            if fmt == "mp4":
                stream.options = {"crf": "23", "preset": "veryfast"}
            else:
                stream.options = {"crf": "32", "b": "0", "deadline": "realtime", "cpu-used": "8"}
            for i, rgb in enumerate(frames):
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                frame.pts = i
                frame.time_base = 1 / rate
                for packet in stream.encode(frame):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        with open(tmp, "rb") as f:
            return f.read()
    finally:
        os.unlink(tmp)


def encode_gif(frames: Any, fps: float) -> bytes:
    """GIF bytes of uint8 RGB frames, looping, each shown ``1 / fps`` s (GIF counts in 10 ms).

    Pillow merges consecutive identical frames into one shown as long as they were: the GIF plays the
    same, and the record counts the frames given.
    """
    Image = pil_module()
    images = [Image.fromarray(f) for f in frames]
    buf = io.BytesIO()
    images[0].save(buf, format="GIF", save_all=True, append_images=images[1:], duration=max(10, round(1000 / fps)),
                   loop=0)
    return buf.getvalue()


def movie_from_array(data: Any, fps: Any, fmt: Any) -> Movie:
    """A video encoded from an array (see the module's docstring).

    :raises SchemaError: naming the bad value; nothing is stored.
    """
    rate = check_fps(fps)
    if fmt not in ENCODED:
        raise bad(VIDEO, "format", f"expected one of {', '.join(ENCODED)} for frames from an array, given {given(fmt)}")
    frames = video_frames(data)
    t = int(frames.shape[0])
    if fmt == "gif":
        h, w = int(frames.shape[1]), int(frames.shape[2])
        return Movie(Payload.of_bytes(encode_gif(frames, rate)), "gif", rate, t, w, h, t / rate)
    encoded = encode_av(frames, rate, fmt)
    h, w = int(frames.shape[1]), int(frames.shape[2])
    return Movie(Payload.of_bytes(encoded), fmt, rate, t, w + w % 2, h + h % 2, t / rate)


def movie_from_file(path: Any, fmt: Any = None) -> Movie:
    """An mp4/webm/gif file as it is, its frames, size, rate and duration read from it.

    :param fmt: W&B's ``format=`` for a file: when given, the file must be of that format.
    :raises SchemaError: a missing file, a name or content of another format, an unreadable video.
    """
    payload, expected = file_payload(VIDEO, path, VIDEO_FILES)
    if fmt is not None and fmt != expected:
        raise bad(VIDEO, "format", f"expected the format of {payload.path} ({expected}), given {given(fmt)}")
    return movie_from_payload(payload, expected, payload.path)


def movie_from_bytes(data: bytes, fmt: Any = None) -> Movie:
    """A video given as bytes (W&B's io object): its format read from its first bytes."""
    payload = Payload.of_bytes(bytes(data))
    found = sniff(payload.head())
    if found not in ENCODED:
        raise mismatch(VIDEO, "the data given", str(fmt or "mp4, webm or gif"), found)
    if fmt is not None and fmt != found:
        raise mismatch(VIDEO, "the data given", str(fmt), found, "format")
    return movie_from_payload(payload, found, "the data given")


def movie_from_payload(payload: Payload, expected: str, where: Any) -> Movie:
    """A checked video's fields, read from its bytes."""
    found = sniff(payload.head())
    if found != expected:
        raise mismatch(VIDEO, where, expected, found)
    if expected == "gif":
        return _gif_movie(payload, where)
    av = av_module()
    try:
        with av.open(payload.opened(), "r") as container:
            if not container.streams.video:
                raise bad(VIDEO, "data_or_path", f"expected a video stream in {where}, given none")
            stream = container.streams.video[0]
            width, height = int(stream.codec_context.width), int(stream.codec_context.height)
            frames = int(stream.frames or 0)
            duration = float(stream.duration * stream.time_base) if stream.duration and stream.time_base else 0.0
            if not frames or not duration:
                counted, end = 0, 0.0
                for packet in container.demux(stream):
                    if packet.size == 0:
                        continue
                    counted += 1
                    if packet.pts is not None and packet.time_base:
                        end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
                frames = frames or counted
                duration = duration or end or (container.duration or 0) / 1_000_000
            rate = stream.average_rate or stream.guessed_rate
            fps = float(rate) if rate else (frames / duration if duration else 0.0)
    except SchemaError:
        raise
    except Exception as exc:  # noqa: BLE001 - PyAV raises many kinds for a damaged file
        raise bad(VIDEO, "data_or_path", f"expected a readable {expected} file, given {where}: {exc}") from None
    if frames <= 0 or width <= 0 or height <= 0 or fps <= 0:
        raise bad(VIDEO, "data_or_path", f"expected a {expected} video with frames, given {where} ({frames} frames, "
                                         f"{width}x{height}, {fps} fps)")
    return Movie(payload, expected, fps, frames, width, height, duration or frames / fps)


def _gif_movie(payload: Payload, where: Any) -> Movie:
    Image = pil_module()
    try:
        with Image.open(payload.opened()) as im:
            width, height = im.size
            frames = int(getattr(im, "n_frames", 1))
            total_ms = 0
            for i in range(frames):
                im.seek(i)
                total_ms += int(im.info.get("duration") or 0)
    except Exception as exc:  # noqa: BLE001 - Pillow raises many kinds for a damaged file
        raise bad(VIDEO, "data_or_path", f"expected a readable gif file, given {where}: {exc}") from None
    duration = total_ms / 1000 if total_ms else frames / 10  # browsers show a GIF frame of no delay for 100 ms
    return Movie(payload, "gif", frames / duration, frames, width, height, duration)
