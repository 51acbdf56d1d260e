"""``tracker.Video``: arrays encoded as mp4/webm (decoded back with PyAV) and gif (read back with Pillow), W&B's grid
of N videos, files stored as they are and checked by their bytes, bad input refused with nothing written."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import tracker
from tracker.capture.video import video_frames

from .conftest import blob, blob_files, held, records

av = pytest.importorskip("av")
PIL = pytest.importorskip("PIL.Image", reason="the media extra (Pillow) is part of the test extra")


def _frames(t: int = 12, c: int = 3, h: int = 16, w: int = 24, seed: int = 0) -> np.ndarray:
    """Frames that differ from one another: a bright bar moving over a dark, slightly noisy background."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 40, size=(t, c, h, w), dtype=np.uint8)
    for i in range(t):
        a[i, :, :, (i * 2) % w] = 250
    return a


def _decode(data: bytes) -> tuple[int, float, list[np.ndarray]]:
    with av.open(io.BytesIO(data)) as c:
        s = c.streams.video[0]
        rate = float(s.average_rate)
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(s)]
    return len(frames), rate, frames


def test_mp4_from_an_array_decodes_to_its_frames_size_and_rate(run: tracker.Run) -> None:
    a = _frames()
    run.log({"rollout": tracker.Video(a, fps=30, format="mp4", caption="ep 1")}, step=5)
    [rec] = records(run, "video")
    assert rec.step == 5
    d = rec.data
    assert {k: v for k, v in d.items() if k != "sha256"} == {
        "name": "rollout", "format": "mp4", "fps": 30.0, "frames": 12, "width": 24, "height": 16,
        "duration_s": pytest.approx(0.4), "caption": "ep 1"}
    data = blob(run, d["sha256"])
    assert data[4:8] == b"ftyp"
    n, rate, frames = _decode(data)
    assert (n, rate, frames[0].shape) == (12, 30.0, (16, 24, 3))
    # H.264 is lossy: the bar is where it was drawn in each frame
    for i, f in enumerate(frames):
        assert int(f[:, :, :].mean(axis=(0, 2)).argmax()) == (i * 2) % 24
    # the moov index comes before the frames (a player starts without the end of the file)
    assert data.index(b"moov") < data.index(b"mdat")


def test_odd_sizes_are_padded_to_even_and_grey_frames_made_rgb(run: tracker.Run) -> None:
    a = _frames(t=3, c=1, h=7, w=9)
    video = tracker.Video(a, fps=10, format="mp4")
    run.log({"odd": video})
    [rec] = records(run, "video")
    assert (rec.data["width"], rec.data["height"]) == (10, 8)
    n, _, frames = _decode(blob(run, rec.data["sha256"]))
    assert n == 3 and frames[0].shape == (8, 10, 3)


def test_webm_is_vp9(run: tracker.Run) -> None:
    run.log({"w": tracker.Video(_frames(t=5), fps=5, format="webm")})
    [rec] = records(run, "video")
    data = blob(run, rec.data["sha256"])
    assert data[:4] == b"\x1a\x45\xdf\xa3" and rec.data["format"] == "webm"
    with av.open(io.BytesIO(data)) as c:
        assert c.streams.video[0].codec_context.name in ("vp9", "libvpx-vp9")
        assert sum(1 for _ in c.decode(video=0)) == 5


def test_gif_is_w_and_bs_default_and_reads_back_with_pillow(run: tracker.Run) -> None:
    a = _frames(t=6, c=4)
    run.log({"g": tracker.Video(a)})  # W&B's defaults for an array: 4 fps, gif
    [rec] = records(run, "video")
    assert (rec.data["format"], rec.data["fps"], rec.data["frames"]) == ("gif", 4.0, 6)
    with PIL.open(io.BytesIO(blob(run, rec.data["sha256"]))) as im:
        assert im.n_frames == 6 and im.size == (24, 16)
        assert im.info["duration"] == 250 and im.info["loop"] == 0
        im.seek(3)
        rgb = np.asarray(im.convert("RGB"))
        assert int(rgb.mean(axis=(0, 2)).argmax()) == 6


def test_n_videos_are_tiled_into_w_and_bs_grid() -> None:
    batch = np.stack([np.full((2, 3, 4, 5), 10 * (k + 1), np.uint8) for k in range(3)])  # N=3: padded to 4
    grid = video_frames(batch)
    assert grid.shape == (2, 8, 10, 3)  # 2 rows x 2 columns of 4x5
    assert grid[0, 0, 0, 0] == 10 and grid[0, 0, 5, 0] == 20 and grid[0, 4, 0, 0] == 30 and grid[0, 4, 5, 0] == 0
    assert video_frames(np.zeros((8, 1, 1, 2, 2), np.uint8)).shape == (1, 4, 8, 3)  # 8 = 2 rows x 4 columns


def test_files_are_stored_as_they_are_with_fields_read_from_them(run: tracker.Run, tmp_path: Path) -> None:
    # 10 fps: a GIF counts delays in hundredths of a second, so 100 ms is exact
    made = {fmt: tracker.Video(_frames(t=8), fps=10, format=fmt) for fmt in ("mp4", "webm", "gif")}
    for fmt, video in made.items():
        path = tmp_path / f"clip.{fmt}"
        path.write_bytes(video._payload.data)
        run.log({fmt: tracker.Video(str(path), fps=99)})  # fps does not apply to a file, as in W&B
    run.log({"io": tracker.Video(io.BytesIO(made["mp4"]._payload.data), format="mp4")})
    recs = {r.data["name"]: r.data for r in records(run, "video")}
    for fmt in ("mp4", "webm", "gif"):
        d = recs[fmt]
        assert blob(run, d["sha256"]) == (tmp_path / f"clip.{fmt}").read_bytes()
        assert (d["format"], d["frames"], d["width"], d["height"]) == (fmt, 8, 24, 16)
        assert d["fps"] == pytest.approx(10.0) and d["duration_s"] == pytest.approx(0.8, abs=0.11)
    assert recs["io"]["sha256"] == recs["mp4"]["sha256"]


def test_the_same_video_logged_twice_is_stored_once(run: tracker.Run) -> None:
    a = _frames(t=4)
    run.log({"v": tracker.Video(a, fps=4, format="mp4")})
    run.log({"v": tracker.Video(a.copy(), fps=4, format="mp4")})
    one, two = records(run, "video")
    assert one.data["sha256"] == two.data["sha256"] and (one.step, two.step) == (0, 1)
    assert sum(1 for p in blob_files(Path(run.store)) if p.name == one.data["sha256"][2:]) == 1


def test_bad_input_is_refused_naming_it_and_nothing_is_written(run: tracker.Run, tmp_path: Path) -> None:
    gif_named_mp4 = tmp_path / "clip.mp4"
    gif_named_mp4.write_bytes(tracker.Video(_frames(t=2))._payload.data)
    text_named_webm = tmp_path / "clip.webm"
    text_named_webm.write_text("not a video")
    damaged = tmp_path / "damaged.mp4"
    damaged.write_bytes(b"\x00\x00\x00\x18ftypisom" + bytes(40))
    cases = [
        (np.zeros((3, 16, 16), np.uint8), {}, "shape (3, 16, 16)"),
        (np.zeros((2, 2, 16, 16), np.uint8), {}, "C = 1, 3 or 4"),
        (np.zeros((0, 3, 16, 16), np.uint8), {}, "at least one frame"),
        (np.zeros((2, 3, 0, 16), np.uint8), {}, "at least one frame"),
        (np.zeros((2, 3, 4, 4), np.float32), {}, "float32"),
        (np.full((2, 3, 4, 4), 300, np.int64), {}, "int64"),
        (np.zeros((2, 3, 9000, 4), np.uint8), {}, "at most 8192x8192"),
        (np.zeros((2, 3, 4, 4), np.uint8), {"fps": 0}, "fps"),
        (np.zeros((2, 3, 4, 4), np.uint8), {"fps": -1}, "-1"),
        (np.zeros((2, 3, 4, 4), np.uint8), {"fps": "30"}, "'30'"),
        (np.zeros((2, 3, 4, 4), np.uint8), {"format": "avi"}, "'avi'"),
        (tmp_path / "missing.mp4", {}, "missing file"),
        (gif_named_mp4, {}, "gif file"),
        (text_named_webm, {}, "no known format"),
        (damaged, {}, "readable mp4"),
        (gif_named_mp4, {"format": "webm"}, "format"),
        (np.zeros((2, 3, 4, 4), np.uint8), {"caption": ["x"]}, "caption"),
    ]
    run.log({"before": 1.0})
    before = held(run)
    for data, kwargs, named in cases:
        with pytest.raises(tracker.SchemaError) as err:
            run.log({"v": tracker.Video(data, **kwargs)})
        assert named in str(err.value) and "video" in str(err.value), (named, str(err.value))
    assert held(run) == before


def test_content_types_of_the_stored_formats() -> None:
    from tracker.capture.mediafile import content_type

    assert content_type("video", "mp4") == "video/mp4" and content_type("audio", "wav") == "audio/wav"
    assert content_type("html") == "text/html; charset=utf-8" and content_type("object3d", "glb") == "model/gltf-binary"
    assert content_type("object3d", "points") == "application/octet-stream"


def test_without_pyav_encoding_names_the_extra_to_install(run: tracker.Run, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "av", None)  # `import av` fails as it does when PyAV is not installed
    before = held(run)
    with pytest.raises(tracker.TrackerError, match=r'pip install "tracker-core\[media\]"'):
        tracker.Video(_frames(t=2), fps=2, format="mp4")
    flac = tmp_path / "x.flac"
    flac.write_bytes(b"fLaC" + bytes(60))
    with pytest.raises(tracker.TrackerError, match=r'PyAV: pip install "tracker-core\[media\]"'):
        tracker.Audio(flac)
    assert held(run) == before
    run.log({"wav needs no PyAV": tracker.Audio(np.zeros(8), sample_rate=8)})


def test_a_gif_of_identical_frames_counts_the_frames_given(run: tracker.Run) -> None:
    run.log({"still": tracker.Video(np.zeros((4, 3, 8, 8), np.uint8), fps=4)})
    [rec] = records(run, "video")
    assert (rec.data["frames"], rec.data["duration_s"]) == (4, 1.0)
    with PIL.open(io.BytesIO(blob(run, rec.data["sha256"]))) as im:  # Pillow stored one frame shown 1 s
        assert im.n_frames == 1 and im.info["duration"] == 1000
