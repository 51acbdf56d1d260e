"""Images (PNG round trips, bad input refused with nothing written) and histograms (NaN, inf, empty)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracker
from tracker.capture.media import histogram_record, image_array, read_image

from .conftest import blob_files

PIL = pytest.importorskip("PIL.Image", reason="the media extra (Pillow) is part of the test extra")


def _images(run: tracker.Run) -> list:
    return list(tracker.open_store(run.store).run(run.id).records("image"))


@pytest.mark.parametrize("shape,mode", [((5, 7), "L"), ((5, 7, 1), "L"), ((5, 7, 3), "RGB"), ((5, 7, 4), "RGBA")])
def test_uint8_round_trip(run: tracker.Run, shape: tuple, mode: str) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, size=shape, dtype=np.uint8)
    run.log({"loss": 1.0}, step=3)
    sha = run.log_image("sample", a, caption="epoch 3")
    [rec] = _images(run)
    assert rec.step == 3
    assert rec.data == {"name": "sample", "sha256": sha, "width": 7, "height": 5, "mode": mode, "caption": "epoch 3"}
    back = read_image(run.store, sha)
    assert np.array_equal(back, a.reshape(back.shape))


def test_float_pil_and_file_inputs(run: tracker.Run, tmp_path: Path) -> None:
    f = np.linspace(0.0, 1.0, 4 * 6 * 3).reshape(4, 6, 3)
    sha = run.log_image("float", f)
    assert np.array_equal(read_image(run.store, sha), np.rint(f * 255).astype(np.uint8))
    im = PIL.fromarray(np.full((3, 3, 3), 200, np.uint8))
    assert np.array_equal(read_image(run.store, run.log_image("pil", im)), np.asarray(im))
    png = tmp_path / "x.png"
    im.save(png)
    import hashlib

    sha = run.log_image("png", png)
    assert sha == hashlib.sha256(png.read_bytes()).hexdigest()  # a PNG file is stored as it is
    assert np.array_equal(read_image(run.store, sha), np.asarray(im))
    jpg = tmp_path / "x.jpg"
    im.save(jpg, quality=95)
    with PIL.open(jpg) as decoded:
        expect = np.asarray(decoded.convert("RGB"))
    assert np.array_equal(read_image(run.store, run.log_image("jpeg", str(jpg))), expect)


@pytest.mark.parametrize("bad,what", [
    (np.zeros((2, 2, 2, 2, 2), np.uint8), "shape"),
    (np.full((4, 4), 1.5), "floats in \\[0, 1\\]"),
    (np.full((4, 4, 3), -0.1), "floats in \\[0, 1\\]"),
    (np.array([[0.5, np.nan]]), "NaN"),
    (np.zeros((4, 4), np.int16), "dtype int16"),
    (np.zeros((4, 4, 2), np.uint8), "shape"),
    ("missing.png", "missing file"),
    ("not_an_image.png", "readable PNG or JPEG"),
    ("picture.gif", "GIF"),
])
def test_bad_images_are_refused_and_nothing_is_written(run: tracker.Run, tmp_path: Path, bad, what: str) -> None:
    (tmp_path / "not_an_image.png").write_bytes(b"this is no PNG")
    PIL.new("RGB", (2, 2)).save(tmp_path / "picture.gif")
    if isinstance(bad, str):
        bad = tmp_path / bad
    with pytest.raises(tracker.SchemaError, match=what) as err:
        run.log_image("x", bad)
    assert err.value.schema == "image"
    assert _images(run) == []
    assert blob_files(run.store) == []


def test_bad_name_and_caption(run: tracker.Run) -> None:
    with pytest.raises(tracker.SchemaError, match="name"):
        run.log_image("", np.zeros((2, 2), np.uint8))
    with pytest.raises(tracker.SchemaError, match="caption"):
        run.log_image("x", np.zeros((2, 2), np.uint8), caption=3)
    assert blob_files(run.store) == []


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.uint8, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=12)
                  .flatmap(lambda s: st.sampled_from([s, (*s, 3), (*s, 4)]))))
def test_png_round_trip_property(a: np.ndarray) -> None:
    import io

    from tracker.capture.media import encode_image

    png, w, h, _ = encode_image(a)
    with PIL.open(io.BytesIO(png)) as im:
        assert (im.width, im.height) == (w, h) == (a.shape[1], a.shape[0])
        assert np.array_equal(np.asarray(im), a)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=6)
                  .filter(lambda s: len(s) == 2 or s[2] in (1, 3, 4)),
                  elements=st.floats(0.0, 1.0)))
def test_float_conversion_property(a: np.ndarray) -> None:
    u = image_array(a)
    assert u.dtype == np.uint8
    assert np.all(np.abs(u.astype(float).reshape(a.shape) - a * 255) <= 0.5 + 1e-9)


# --- histograms ---------------------------------------------------------------------------------

def test_histogram_with_nan_and_inf(run: tracker.Run) -> None:
    values = np.array([1.0, 2.0, np.nan, np.inf, -np.inf, 3.0, np.nan], dtype=np.float32)
    run.log({"loss": 0.1}, step=5)
    run.log_histogram("grad", values, bins=4)
    run.log({"loss": 0.05})
    view = tracker.open_store(run.store).run(run.id)
    [rec] = list(view.records("histogram"))
    assert rec.step == 5 and view.metrics()["step"].tolist() == [5, 6]
    d = rec.data
    assert (d["count"], d["nan_count"], d["inf_count"], d["min"], d["max"]) == (3, 2, 2, 1.0, 3.0)
    assert d["counts"] == [1, 0, 1, 1] and d["edges"] == [1.0, 1.5, 2.0, 2.5, 3.0]
    [summary] = [s for s in view.summarize("histogram")]
    assert summary.rows[0]["nan"] == 2 and summary.rows[0]["inf"] == 2


def test_histogram_edge_cases() -> None:
    empty = histogram_record("e", np.array([]), bins=8)
    assert (empty["count"], empty["min"], empty["max"], sum(empty["counts"])) == (0, None, None, 0)
    assert len(empty["edges"]) == 9
    only_nan = histogram_record("n", [math.nan, math.inf], bins=3)
    assert (only_nan["count"], only_nan["nan_count"], only_nan["inf_count"], only_nan["min"]) == (0, 1, 1, None)
    const = histogram_record("c", np.full(10, 2.5), bins=5)
    assert const["counts"] == [0, 0, 10, 0, 0] and const["min"] == const["max"] == 2.5
    ints = histogram_record("i", np.arange(10), bins=[0, 5, 10])
    assert ints["counts"] == [5, 5] and ints["edges"] == [0.0, 5.0, 10.0]
    for bad, field in (([1, 2], "name"), ):
        with pytest.raises(tracker.SchemaError, match=field):
            histogram_record("", bad)
    with pytest.raises(tracker.SchemaError, match="bins"):
        histogram_record("x", [1.0], bins=0)
    with pytest.raises(tracker.SchemaError, match="bins"):
        histogram_record("x", [1.0], bins=[3, 1])
    with pytest.raises(tracker.SchemaError, match="real numbers"):
        histogram_record("x", np.array(["a", "b"]))


def test_histogram_of_a_torch_tensor(run: tracker.Run) -> None:
    torch = pytest.importorskip("torch", reason="torch is installed by the README's test command")
    t = torch.tensor([[0.0, 1.0], [float("nan"), 2.0]], requires_grad=True)
    d = run.log_histogram("w", t * 1, bins=2)
    assert (d["count"], d["nan_count"], d["counts"]) == (3, 1, [1, 2])


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 200), elements=st.floats(-1e300, 1e300)
                  | st.sampled_from([math.nan, math.inf, -math.inf])),
       st.integers(1, 50))
def test_histogram_property(a: np.ndarray, bins: int) -> None:
    d = histogram_record("p", a, bins=bins)
    finite = a[np.isfinite(a)]
    assert d["count"] == finite.size == sum(d["counts"])
    assert d["nan_count"] == int(np.isnan(a).sum()) and d["inf_count"] == int(np.isinf(a).sum())
    assert len(d["edges"]) == bins + 1 == len(d["counts"]) + 1
    assert all(x <= y for x, y in zip(d["edges"][:-1], d["edges"][1:], strict=True))
    if finite.size:
        assert d["min"] == finite.min() and d["max"] == finite.max()
        expect, _ = np.histogram(finite, bins=np.array(d["edges"]))
        assert d["counts"] == expect.tolist()
