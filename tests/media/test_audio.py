"""``tracker.Audio``: arrays as WAV read back with ``wave``, files stored as they are, bad input refused with nothing
written, the same clip stored once."""

from __future__ import annotations

import hashlib
import io
import wave
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracker
from tracker.capture.audio import pcm16, wav_bytes

from .conftest import blob, blob_files, held, records

av = pytest.importorskip("av")


def _read_wav(data: bytes) -> tuple[int, int, np.ndarray]:
    with wave.open(io.BytesIO(data), "rb") as w:
        rate, channels = w.getframerate(), w.getnchannels()
        assert w.getsampwidth() == 2
        samples = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, channels)
    return rate, channels, samples


def test_float_mono_array_is_wav_at_the_step(run: tracker.Run) -> None:
    t = np.arange(16000) / 16000
    x = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    run.log({"loss": 1.0}, step=7)
    run.log({"speech": tracker.Audio(x, sample_rate=16000, caption="epoch 7")}, step=7)
    [rec] = records(run, "audio")
    assert rec.step == 7
    d = rec.data
    assert {k: v for k, v in d.items() if k != "sha256"} == {
        "name": "speech", "format": "wav", "sample_rate": 16000, "channels": 1, "duration_s": 1.0, "caption": "epoch 7"}
    data = blob(run, d["sha256"])
    assert hashlib.sha256(data).hexdigest() == d["sha256"]
    rate, channels, samples = _read_wav(data)
    assert (rate, channels) == (16000, 1)
    assert np.array_equal(samples[:, 0], np.rint(x.astype(np.float64) * 32767).astype(np.int16))


def test_int16_stereo_and_torch_tensors(run: tracker.Run) -> None:
    torch = pytest.importorskip("torch", reason="torch tensors are logged as W&B users log them")
    rng = np.random.default_rng(1)
    a = rng.integers(-32768, 32767, size=(800, 2), dtype=np.int16)
    run.log({"stereo": tracker.Audio(a, sample_rate=8000), "tensor": tracker.Audio(torch.tensor([0.0, 0.5, -1.0]),
                                                                                      sample_rate=np.int64(100))})
    stereo, tensor = records(run, "audio")
    assert (stereo.data["channels"], stereo.data["duration_s"]) == (2, 0.1)
    assert np.array_equal(_read_wav(blob(run, stereo.data["sha256"]))[2], a)
    assert _read_wav(blob(run, tensor.data["sha256"]))[2][:, 0].tolist() == [0, 16384, -32767]
    assert tensor.data["sample_rate"] == 100


def _encode_file(path: Path, codec: str, rate: int = 22050, channels: int = 2, seconds: float = 0.5) -> None:
    """A real audio file written with PyAV (the encoders its wheels carry)."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=rate, layout="stereo" if channels == 2 else "mono")
        n = int(rate * seconds)
        t = np.arange(n) / rate
        fmt = stream.codec_context.format.name
        samples = (0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32)
        planar = np.tile(samples, (channels, 1))
        frame_size = stream.codec_context.frame_size or 1024
        kind = {"s16": (np.int16, 32767), "s32": (np.int32, 2**31 - 1), "flt": (np.float32, 1)}[fmt[:3]]
        for start in range(0, n, frame_size):
            chunk = planar[:, start:start + frame_size]
            arr = (chunk if fmt.endswith("p") else chunk.T.reshape(1, -1)) * kind[1]
            arr = arr.astype(kind[0])
            frame = av.AudioFrame.from_ndarray(arr, format=fmt, layout=stream.layout.name)
            frame.sample_rate = rate
            frame.pts = start
            frame.time_base = Fraction(1, rate)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


@pytest.mark.parametrize("suffix,codec", [(".flac", "flac"), (".mp3", "libmp3lame"), (".ogg", "libopus")])
def test_compressed_files_are_stored_as_they_are(run: tracker.Run, tmp_path: Path, suffix: str, codec: str) -> None:
    path = tmp_path / f"clip{suffix}"
    rate = 48000 if codec == "libopus" else 22050
    _encode_file(path, codec, rate=rate)
    run.log({"clip": tracker.Audio(path)})
    [rec] = records(run, "audio")
    assert blob(run, rec.data["sha256"]) == path.read_bytes()
    assert (rec.data["format"], rec.data["sample_rate"], rec.data["channels"]) == (suffix[1:], rate, 2)
    assert rec.data["duration_s"] == pytest.approx(0.5, abs=0.06)


def test_wav_file_as_it_is_and_sample_rate_from_the_file(run: tracker.Run, tmp_path: Path) -> None:
    path = tmp_path / "x.wav"
    path.write_bytes(wav_bytes(np.zeros((441, 1), np.int16), 44100))
    run.log({"file": tracker.Audio(str(path), sample_rate=16000)})  # W&B ignores sample_rate for a file too
    [rec] = records(run, "audio")
    assert (rec.data["sample_rate"], rec.data["duration_s"]) == (44100, 0.01)
    assert blob(run, rec.data["sha256"]) == path.read_bytes()


def test_the_same_clip_logged_twice_is_stored_once(run: tracker.Run) -> None:
    x = np.linspace(-1, 1, 4000)
    clip = tracker.Audio(x, sample_rate=4000)
    run.log({"a": clip})
    run.log({"a": clip, "b": tracker.Audio(x.copy(), sample_rate=4000)})
    recs = records(run, "audio")
    assert len(recs) == 3 and len({r.data["sha256"] for r in recs}) == 1
    assert sum(1 for p in blob_files(Path(run.store)) if p.name == recs[0].data["sha256"][2:]) == 1


def _bad_inputs(tmp: Path) -> list[tuple[object, dict, str]]:
    fake = tmp / "fake.mp3"
    fake.write_bytes(b"GIF89a" + bytes(100))
    empty = tmp / "empty.wav"
    empty.write_bytes(b"")
    wav_named_flac = tmp / "clip.flac"
    wav_named_flac.write_bytes(wav_bytes(np.zeros((10, 1), np.int16), 8000))
    unknown = tmp / "clip.aiff"
    unknown.write_bytes(b"FORM")
    folder = tmp / "folder.wav"
    folder.mkdir()
    return [
        (np.zeros(10), {}, "sample_rate"),
        (np.zeros(10), {"sample_rate": 0}, "0"),
        (np.zeros(10), {"sample_rate": -5}, "-5"),
        (np.zeros(10), {"sample_rate": 16000.0}, "16000.0"),
        (np.zeros(10), {"sample_rate": True}, "True"),
        (np.zeros((0,)), {"sample_rate": 100}, "shape (0, 1)"),
        (np.zeros((2, 3, 4)), {"sample_rate": 100}, "shape (2, 3, 4)"),
        (np.zeros((2, 16000)), {"sample_rate": 100}, "transposed"),
        (np.array([0.1, np.nan, 0.2]), {"sample_rate": 100}, "NaN at sample 1"),
        (np.array([0.5, 1.5]), {"sample_rate": 100}, "1.5"),
        (np.array([1, 2], dtype=np.int32), {"sample_rate": 100}, "int32"),
        (np.array(["a", "b"]), {"sample_rate": 100}, "<U1"),
        (tmp / "missing.wav", {}, "missing file"),
        (fake, {}, "gif"),
        (empty, {}, "empty file"),
        (wav_named_flac, {}, "wav file"),
        (unknown, {}, "*.wav"),
        (folder, {}, "a folder"),
        (np.zeros(10), {"sample_rate": 100, "caption": 3}, "caption"),
    ]


def test_bad_input_is_refused_naming_it_and_nothing_is_written(run: tracker.Run, tmp_path: Path) -> None:
    run.log({"before": 1.0})
    before = held(run)
    for data, kwargs, named in _bad_inputs(tmp_path):
        with pytest.raises(tracker.SchemaError) as err:
            run.log({"clip": tracker.Audio(data, **kwargs)})
        assert named in str(err.value), (named, str(err.value))
        assert "audio" in str(err.value)
    assert held(run) == before


def test_a_wav_file_whose_bytes_are_not_audio_is_refused(run: tracker.Run, tmp_path: Path) -> None:
    path = tmp_path / "x.wav"
    path.write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunkjunk")
    before = held(run)
    with pytest.raises(tracker.SchemaError, match="x.wav"):
        tracker.Audio(path)
    assert held(run) == before


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.int16, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=50).filter(
    lambda s: len(s) == 1 or s[1] <= 32)), st.integers(1, 192000))
def test_wav_round_trip_of_int16(samples: np.ndarray, rate: int) -> None:
    got_rate, channels, back = _read_wav(wav_bytes(pcm16(samples), rate))
    assert got_rate == rate and np.array_equal(back, samples.reshape(samples.shape[0], -1))
    assert channels == (1 if samples.ndim == 1 else samples.shape[1])


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=50).filter(
    lambda s: len(s) == 1 or s[1] <= 32), elements=st.floats(-1, 1, width=32)))
def test_wav_round_trip_of_floats(samples: np.ndarray) -> None:
    _, _, back = _read_wav(wav_bytes(pcm16(samples), 8000))
    # each sample within half a step of 1/32767 of its value
    assert np.abs(back.astype(np.float64) / 32767 - samples.reshape(back.shape)).max() <= 0.5 / 32767 + 1e-9


def test_pyav_is_imported_only_when_used(tmp_path: Path) -> None:
    import subprocess
    import sys

    from ..childenv import child_environ

    code = ("import sys, numpy as np, tracker\n"
            "tracker.Audio(np.zeros(10), sample_rate=10); tracker.Object3D(np.zeros((2, 3))); tracker.Html('<p>')\n"
            "tracker.Video(np.zeros((1, 3, 2, 2), np.uint8))\n"
            "assert 'av' not in sys.modules, 'av imported'\n"
            "tracker.Video(np.zeros((1, 3, 2, 2), np.uint8), format='mp4')\n"
            "assert 'av' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=child_environ(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
