"""Media: what logging an audio clip and encoding a video cost, each next to a floor.

Figures (medians over rounds that alternate floor and subject, wall time):

- ``run.log({"clip": tracker.Audio(x, sample_rate=16000)})`` of a 10 s
  16 kHz float32 clip (a new clip each call, so each call stores a new blob:
  checks, float to int16, WAV, SHA-256, the blob and the record) against the
  standard library's :mod:`wave` writing the same samples, as int16, to a
  file; calls alternate, medians over every call. Target: at most 5 ms
  beyond the floor.
- ``tracker.Video(frames, fps=30, format="mp4")`` logged, for 100 frames of
  64x64 (a moving pattern with noise), against PyAV encoding the same frames
  with the same codec settings into memory alone. Target: at most 0.2 s.

Run: ``python benchmarks/bench_media.py [--quick]``; one JSON line per figure.
"""

from __future__ import annotations

import io
import statistics
import sys
import time
import wave
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, main_guard, parse_args, scratch, side_by_side  # noqa: E402

import tracker  # noqa: E402

RATE = 16000


def _clips(n: int):  # noqa: ANN202 - numpy arrays
    import numpy as np

    t = np.arange(10 * RATE) / RATE
    return [(0.5 * np.sin(2 * np.pi * (220 + k) * t)).astype(np.float32) for k in range(n)]


def bench_audio(tmp: Path, args) -> None:  # noqa: ANN001
    import numpy as np

    # Calls alternate one floor, one subject; medians over every call (a busy machine's preemptions fall out).
    n = 12 if args.quick else 20 * args.repeat
    clips = _clips(n + 1)
    pcm = [np.rint(c.astype(np.float64) * 32767).astype("<i2").tobytes() for c in clips]
    run = tracker.start_run(name="audio", store=tmp / "astore", system_metrics=False)
    run.log({"clip": tracker.Audio(clips[-1], sample_rate=RATE)})  # warm: imports, the first blob folder
    subject, floor, ratios = [], [], []
    for i in range(n):
        t = time.perf_counter()
        with wave.open(str(tmp / f"floor-{i}.wav"), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(pcm[i])
        b = time.perf_counter() - t
        t = time.perf_counter()
        run.log({"clip": tracker.Audio(clips[i], sample_rate=RATE)})
        s = time.perf_counter() - t
        subject.append(s)
        floor.append(b)
        ratios.append(s / b)
    run.finish()
    value, base = statistics.median(subject) * 1e3, statistics.median(floor) * 1e3
    emit("media", "run.log of tracker.Audio, a 10 s 16 kHz float32 clip (a new blob each call)",
         value=round(value, 3), floor=round(base, 3), ratio=round(statistics.median(ratios), 3),
         ratio_min=round(min(ratios), 3), ratio_max=round(max(ratios), 3), calls=n, unit="ms/call", clock="wall",
         floor_is="wave writing the same samples (int16) to a file", beyond_floor_ms=round(value - base, 3),
         target="<= 5 ms beyond the floor", target_met=value - base <= 5.0)


def _frames():  # noqa: ANN202 - a numpy array
    import numpy as np

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:64, 0:64]
    out = np.empty((100, 3, 64, 64), np.uint8)
    for i in range(100):
        base = (np.sin((x + 2 * i) / 6.0) + np.cos((y - i) / 9.0)) * 60 + 128
        out[i] = np.clip(base[None] + rng.normal(0, 8, (3, 64, 64)), 0, 255).astype(np.uint8)
    return out


def _pyav_alone(frames) -> bytes:  # noqa: ANN001
    """The floor: PyAV encoding the frames with the tracker's settings (H.264, yuv420p, crf 23, veryfast)."""
    import av

    rate = Fraction(30)
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        stream.options = {"crf": "23", "preset": "veryfast"}
        for i, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return buf.getvalue()


def bench_video(tmp: Path, args) -> None:  # noqa: ANN001
    import numpy as np

    frames = _frames()
    hwc = np.ascontiguousarray(frames.transpose(0, 2, 3, 1))
    run = tracker.start_run(name="video", store=tmp / "vstore", system_metrics=False)
    run.log({"warm": tracker.Video(frames[:2], fps=30, format="mp4")})
    k = {"i": 0}

    def subject() -> float:
        k["i"] += 1
        varied = frames.copy()
        varied[0, 0, 0, 0] = k["i"] % 256  # a new video each round: a new blob is written
        t = time.perf_counter()
        run.log({"rollout": tracker.Video(varied, fps=30, format="mp4")})
        return time.perf_counter() - t

    def floor() -> float:
        t = time.perf_counter()
        _pyav_alone(hwc)
        return time.perf_counter() - t

    res = side_by_side(subject, floor, args.repeat + 2)
    run.finish()
    s = {k: (round(v / 1e6, 4) if k in ("value", "floor") else v) for k, v in res.items()}
    emit("media", "run.log of tracker.Video, 100 frames of 64x64 encoded as mp4 (H.264)", **s, unit="s",
         clock="wall", floor_is="PyAV encoding the same frames into memory alone", target="<= 0.2 s",
         target_value=0.2, target_met=s["value"] <= 0.2)


def body(args) -> None:  # noqa: ANN001
    with scratch() as tmp:
        bench_audio(tmp, args)
        bench_video(tmp, args)


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
