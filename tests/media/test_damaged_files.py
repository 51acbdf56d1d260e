"""Damaged and random bytes under media file names: always a ``SchemaError`` naming the file, never another
exception, whatever the first bytes pretend to be."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracker

MAGIC = [b"", b"RIFF\x00\x00\x00\x00WAVEfmt ", b"ID3\x03\x00", b"\xff\xfb\x90\x00", b"OggS\x00",
         b"fLaC\x00\x00\x00\x22", b"\x00\x00\x00\x18ftypisom", b"\x1a\x45\xdf\xa3\x42\x82\x84webm",
         b"GIF89a", b"glTF\x02\x00\x00\x00", b"ply\nformat ascii 1.0\n", b"solid x\n", b"v 0 0 0\n"]
NAMES = {"clip.wav": tracker.Audio, "clip.mp3": tracker.Audio, "clip.ogg": tracker.Audio, "clip.flac": tracker.Audio,
         "v.mp4": tracker.Video, "v.webm": tracker.Video, "v.gif": tracker.Video, "m.glb": tracker.Object3D,
         "m.ply": tracker.Object3D, "m.stl": tracker.Object3D, "m.obj": tracker.Object3D, "m.gltf": tracker.Object3D,
         "p.html": tracker.Html}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(NAMES)), st.sampled_from(MAGIC), st.binary(max_size=300))
def test_any_bytes_under_a_media_name_are_taken_or_refused_with_a_schema_error(name: str, magic: bytes,
                                                                               rest: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(magic + rest)
        try:
            NAMES[name](path)
        except tracker.SchemaError as exc:
            assert str(path) in str(exc), str(exc)
        except Exception as exc:  # noqa: BLE001 - the point: nothing else may escape
            pytest.fail(f"{name} holding {(magic + rest)[:40]!r}: {type(exc).__name__}: {exc}")


DTYPES = st.sampled_from(["bool", "int8", "uint8", "int16", "uint16", "int64", "float16", "float32", "float64",
                          "complex64"])


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(["audio", "video", "object3d"]), DTYPES,
       st.lists(st.integers(0, 5), min_size=0, max_size=5), st.integers(0, 2**32 - 1))
def test_any_array_is_taken_or_refused_with_a_schema_error(kind: str, dtype: str, shape: list[int], seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    a = (rng.normal(size=shape) * rng.choice([1, 100, 1e6])).astype(dtype)
    make = {"audio": lambda: tracker.Audio(a, sample_rate=8000), "video": lambda: tracker.Video(a, fps=2),
            "object3d": lambda: tracker.Object3D(a)}[kind]
    try:
        make()
    except tracker.SchemaError:
        pass
    except Exception as exc:  # noqa: BLE001 - the point: nothing else may escape
        pytest.fail(f"{kind} of {dtype} {shape}: {type(exc).__name__}: {exc}")
