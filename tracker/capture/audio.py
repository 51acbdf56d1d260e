"""Audio clips: a numpy array encoded as WAV, or a wav/mp3/ogg/flac file stored as it is.

An array is ``(n,)`` (mono) or ``(n, channels)`` (frames first, as
soundfile and W&B take it), of int16 samples or floats in [-1, 1]; it is
written as 16-bit PCM WAV with the standard library's :mod:`wave` (a float
``x`` becomes ``round(x * 32767)``). A file is checked by its first bytes
(:mod:`tracker.capture.mediafile`); its sample rate, channels and duration
are read from it: with :mod:`wave` for PCM WAV, with PyAV for the others
(the ``media`` extra). Everything is checked before anything is stored.
"""

from __future__ import annotations

import io
import wave
from typing import Any

import attrs

from tracker.capture.mediafile import Payload, av_module, bad, file_payload, mismatch, sniff
from tracker.core.errors import SchemaError
from tracker.core.values import given

AUDIO = "audio"
#: File name endings -> the format their bytes must show.
AUDIO_FILES = {".wav": "wav", ".wave": "wav", ".mp3": "mp3", ".ogg": "ogg", ".oga": "ogg", ".flac": "flac"}
MAX_CHANNELS = 32
MAX_RATE = 4_000_000


@attrs.frozen
class Clip:
    """A checked audio clip: its bytes and the ``audio`` record's fields but the name, sha256 and caption."""

    payload: Payload
    format: str
    sample_rate: int
    channels: int
    duration_s: float

    def fields(self) -> dict[str, Any]:
        """``format``, ``sample_rate``, ``channels``, ``duration_s``."""
        return {"format": self.format, "sample_rate": self.sample_rate, "channels": self.channels,
                "duration_s": self.duration_s}


def check_rate(rate: Any) -> int:
    """A sample rate: a positive int (numpy ints too)."""
    import numpy as np

    if isinstance(rate, (int, np.integer)) and not isinstance(rate, (bool, np.bool_)) and 0 < int(rate) <= MAX_RATE:
        return int(rate)
    raise bad(AUDIO, "sample_rate", f"expected an int from 1 to {MAX_RATE} (samples per second), given {given(rate)}")


def pcm16(data: Any) -> Any:
    """``data`` checked and converted to int16 samples, shaped ``(n, channels)``.

    :raises SchemaError: a bad shape, dtype, an empty array, NaN or floats outside [-1, 1].
    """
    import numpy as np

    from tracker.capture.media import _as_numpy

    try:
        a = _as_numpy(data)
    except (TypeError, ValueError) as exc:
        raise bad(AUDIO, "data_or_path", f"expected an array of samples, given {given(data)}: {exc}") from None
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or not 1 <= a.shape[1] <= MAX_CHANNELS:
        raise bad(AUDIO, "data_or_path", f"expected samples of shape (n,) or (n, channels) with 1 to {MAX_CHANNELS} "
                                         f"channels, given shape {tuple(a.shape)} (a (channels, n) array is "
                                         "transposed with .T)")
    if a.shape[0] == 0:
        raise bad(AUDIO, "data_or_path", f"expected at least one sample, given shape {tuple(a.shape)}")
    if a.dtype == np.int16:
        return a
    if a.dtype.kind != "f":
        raise bad(AUDIO, "data_or_path", f"expected int16 samples or floats in [-1, 1], given dtype {a.dtype}")
    lo, hi = float(a.min()), float(a.max())
    if lo != lo or hi != hi:  # NaN
        where = tuple(int(i) for i in np.argwhere(np.isnan(a))[0])
        raise bad(AUDIO, "data_or_path", f"expected floats in [-1, 1], given NaN at sample {where[0]}")
    if lo < -1.0 or hi > 1.0:
        raise bad(AUDIO, "data_or_path", f"expected floats in [-1, 1], given values from {lo!r} to {hi!r} "
                                         "(scale them, or np.clip(x, -1, 1))")
    x = a.astype(np.float64)  # one temporary, scaled and rounded in place
    x *= 32767.0
    np.rint(x, out=x)
    return x.astype(np.int16)


def wav_bytes(samples: Any, sample_rate: int) -> bytes:
    """16-bit PCM WAV of int16 ``samples`` shaped ``(n, channels)``."""
    import numpy as np

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(int(samples.shape[1]))
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(np.ascontiguousarray(samples, dtype="<i2").tobytes())
    return buf.getvalue()


def clip_from_array(data: Any, sample_rate: Any) -> Clip:
    """A WAV clip of an array (see the module's docstring).

    :raises SchemaError: naming the bad value; nothing is stored.
    """
    if sample_rate is None:
        raise bad(AUDIO, "sample_rate", "expected the sample rate of the samples (an int), given None")
    rate = check_rate(sample_rate)
    samples = pcm16(data)
    data_bytes = wav_bytes(samples, rate)
    n, channels = samples.shape
    return Clip(Payload.of_bytes(data_bytes), "wav", rate, int(channels), n / rate)


def clip_from_file(path: Any) -> Clip:
    """A wav/mp3/ogg/flac file as it is, with its rate, channels and duration read from it.

    :raises SchemaError: a missing file, a name of another kind, bytes that are not what the name says,
        or a file that cannot be read as audio.
    """
    payload, expected = file_payload(AUDIO, path, AUDIO_FILES)
    return clip_from_payload(payload, expected, payload.path)


def clip_from_bytes(data: bytes, where: str = "the data given") -> Clip:
    """A clip given as encoded bytes (a TensorBoard audio summary, say): its format read from its first bytes.

    :raises SchemaError: bytes of no audio format, or that cannot be read as audio.
    """
    payload = Payload.of_bytes(bytes(data))
    found = sniff(payload.head())
    if found not in AUDIO_FILES.values():
        raise mismatch(AUDIO, where, "wav, mp3, ogg or flac", found)
    return clip_from_payload(payload, found, where)


def clip_from_payload(payload: Payload, expected: str, where: Any) -> Clip:
    """A checked clip's fields, read from its bytes (:mod:`wave` for PCM WAV, else PyAV)."""
    found = sniff(payload.head())
    if found != expected:
        raise mismatch(AUDIO, where, expected, found)
    if expected == "wav":
        try:
            with wave.open(payload.opened(), "rb") as w:
                rate, channels, frames = w.getframerate(), w.getnchannels(), w.getnframes()
            if rate > 0 and channels > 0:
                return Clip(payload, "wav", rate, channels, frames / rate)
        except Exception:  # noqa: BLE001 - wave.Error, EOFError, RuntimeError...: PyAV reads it or names the problem
            pass  # not PCM (float or extensible WAV), or damaged
    return Clip(payload, expected, *_probe(payload, expected, where))


def audio_record(name: str, clip: Clip, caption: str, blobs: Any) -> dict[str, Any]:
    """Store ``clip``'s bytes in ``blobs``: the ``audio`` record's fields."""
    sha = clip.payload.store(blobs, AUDIO)
    return {"name": name, "sha256": sha, **clip.fields(), "caption": caption}


def _probe(payload: Payload, fmt: str, where: Any) -> tuple[int, int, float]:
    """``(sample_rate, channels, duration_s)`` of an audio file, read with PyAV."""
    av = av_module()
    try:
        with av.open(payload.opened(), "r") as container:
            if not container.streams.audio:
                raise bad(AUDIO, "data_or_path", f"expected an audio stream in {where}, given none")
            stream = container.streams.audio[0]
            ctx = stream.codec_context
            rate = int(ctx.sample_rate or stream.sample_rate or 0)
            channels = int(getattr(ctx, "channels", 0) or ctx.layout.nb_channels)
            if stream.duration and stream.time_base:
                duration = float(stream.duration * stream.time_base)
            elif container.duration:
                duration = container.duration / 1_000_000
            else:
                duration = 0.0
                for packet in container.demux(stream):
                    if packet.duration and packet.time_base:
                        duration += float(packet.duration * packet.time_base)
    except SchemaError:
        raise
    except Exception as exc:  # noqa: BLE001 - PyAV raises many kinds for a damaged file
        raise bad(AUDIO, "data_or_path", f"expected a readable {fmt} file, given {where}: {exc}") from None
    if rate <= 0 or channels <= 0:
        raise bad(AUDIO, "data_or_path", f"expected a {fmt} file with a sample rate and channels, given "
                                         f"{where} ({rate} Hz, {channels} channels)")
    return rate, channels, max(0.0, duration)
