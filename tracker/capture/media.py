"""Images and histograms: checked, converted, then written as ``image`` and ``histogram`` records.

Images become PNG blobs (Pillow, the ``media`` extra) named by their hash;
histograms are computed with numpy straight from the array (a torch tensor
is viewed as a numpy array, never turned into Python lists). Every check runs
before anything is written: bad input is a :class:`~tracker.SchemaError`
naming what was wrong, and leaves no blob and no record.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from tracker.core.errors import SchemaError, StoreError, TrackerError
from tracker.core.files import NotAFileError, open_regular

IMAGE = "image"
HISTOGRAM = "histogram"
MAX_BINS = 10_000
def _bad(schema: str, field: str, message: str) -> SchemaError:
    return SchemaError(schema, [(field, message)])


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise TrackerError('log_image needs Pillow: pip install "tracker-core[media]"') from None
    return Image


def _as_numpy(values: Any) -> Any:
    """A numpy array over ``values`` without a copy where possible (torch tensors included)."""
    import numpy as np

    if type(values).__module__.startswith("torch") and hasattr(values, "detach"):
        t = values.detach()
        if getattr(t, "device", None) is not None and t.device.type != "cpu":
            t = t.cpu()
        if str(t.dtype) in ("torch.bfloat16", "torch.float16"):
            t = t.float()
        return t.numpy()
    if isinstance(values, np.ndarray):
        return values
    return np.asarray(values)


def image_array(image: Any) -> Any:
    """Check a numpy image and return it as uint8 HxW, HxWx3 or HxWx4.

    :raises SchemaError: wrong shape, dtype, NaN, or floats outside [0, 1].
    """
    import numpy as np

    a = _as_numpy(image)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)):
        raise _bad(IMAGE, "image", f"expected an array of shape HxW, HxWx3 or HxWx4, given shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise _bad(IMAGE, "image", f"expected a non-empty image, given shape {a.shape}")
    if a.dtype == np.uint8:
        return a
    if a.dtype.kind == "b":
        return a.astype(np.uint8) * 255
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if nan.any():
            where = tuple(int(i) for i in np.argwhere(nan)[0])
            raise _bad(IMAGE, "image", f"expected floats in [0, 1], given NaN at pixel {where}")
        lo, hi = float(a.min()), float(a.max())
        if lo < 0.0 or hi > 1.0:
            raise _bad(IMAGE, "image", f"expected floats in [0, 1], given values from {lo!r} to {hi!r}")
        return np.rint(a.astype(np.float64) * 255.0).astype(np.uint8)
    raise _bad(IMAGE, "image", f"expected uint8 values or floats in [0, 1], given dtype {a.dtype}")


def encode_image(image: Any) -> tuple[bytes, int, int, str]:
    """``(png bytes, width, height, mode)`` of an array, a PIL image or a PNG/JPEG file path.

    :raises SchemaError: naming what was wrong with the image.
    """
    Image = _pil()
    if isinstance(image, (str, os.PathLike)):
        path = Path(image)
        try:
            with open_regular(path, buffering=-1) as f, Image.open(f) as im:
                fmt = im.format
                if fmt not in ("PNG", "JPEG"):
                    raise _bad(IMAGE, "image", f"expected a PNG or JPEG file, given a {fmt} file: {path}")
                im.load()
                if fmt == "PNG":
                    f.seek(0)
                    return f.read(), im.width, im.height, im.mode
                return _png(im)
        except SchemaError:
            raise
        except NotAFileError as exc:
            raise _bad(IMAGE, "image", f"expected a PNG or JPEG file, given {exc.path}, {exc.kind}") from None
        except FileNotFoundError:
            raise _bad(IMAGE, "image", f"expected a readable PNG or JPEG file, given a missing file: {path}") from None
        except Exception as exc:  # noqa: BLE001 - Pillow raises many kinds for a bad file
            raise _bad(IMAGE, "image", f"expected a readable PNG or JPEG file, given {path}: {exc}") from None
    if isinstance(image, Image.Image):
        im = image
        if im.width == 0 or im.height == 0:
            raise _bad(IMAGE, "image", f"expected a non-empty image, given a PIL image of size {im.width}x{im.height}")
        if im.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
            im = im.convert("RGBA" if "A" in im.mode else "RGB")
        return _png(im)
    a = image_array(image)
    return _png(Image.fromarray(a))  # uint8 HxW, HxWx3, HxWx4: Pillow names the mode L, RGB or RGBA


def _png(im: Any) -> tuple[bytes, int, int, str]:
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue(), im.width, im.height, im.mode


def image_record(name: Any, image: Any, caption: Any, blobs: Any) -> dict[str, Any]:
    """Check and encode an image, store its PNG blob: the ``image`` record's fields."""
    if type(name) is not str or not name:
        raise _bad(IMAGE, "name", f"expected a non-empty str, given {type(name).__name__} {name!r}")
    if type(caption) is not str:
        raise _bad(IMAGE, "caption", f"expected a str, given {type(caption).__name__}")
    png, width, height, mode = encode_image(image)
    sha, _ = blobs.put_bytes(png)
    return {"name": name, "sha256": sha, "width": width, "height": height, "mode": mode, "caption": caption}


def read_image(store: Any, sha: str) -> Any:
    """The stored image of ``sha`` as a numpy array (Pillow needed)."""
    import numpy as np

    from tracker.capture.blobs import blob_path

    Image = _pil()
    path = blob_path(store, sha)
    try:
        f = open_regular(path, "image blob ", buffering=-1)
    except NotAFileError as exc:
        raise StoreError(str(exc)) from None
    with f, Image.open(f) as im:
        return np.asarray(im)


def _equal_bins(a: Any, nbins: int, lo: float, hi: float) -> tuple[Any, Any]:
    """``np.histogram`` over [lo, hi], widened when the range is too narrow for ``nbins`` floats."""
    import numpy as np

    rng = (lo, hi)
    if lo == hi:
        pad = max(0.5, abs(lo) * 1e-9)
        rng = (lo - pad, hi + pad)
    try:
        return np.histogram(a, bins=nbins, range=rng)
    except ValueError:  # "too many bins for data range": adjacent floats, or a span beyond float range
        pass
    pad = max(abs(lo), abs(hi), 1.0) * 1e-9 * nbins
    try:
        return np.histogram(a, bins=nbins, range=(lo - pad, hi + pad))
    except ValueError:
        # A span wider than the largest float: bins computed in halves.
        edges = np.linspace(lo / 2, hi / 2, nbins + 1) * 2
        edges[0], edges[-1] = lo, hi
        return np.histogram(a, bins=edges)


def histogram_record(name: Any, values: Any, bins: Any = 64) -> dict[str, Any]:
    """The ``histogram`` record of ``values``: edges and counts of the finite values, NaN and inf apart.

    ``values`` is any array-like (numpy array, torch tensor, list); it is
    flattened. ``bins`` is a number of equal bins or a sequence of edges.
    For an empty (or all non-finite) input the edges span [0, 1] and min and
    max are ``None``.

    :raises SchemaError: a bad name, non-numeric values or bad bins.
    """
    import numpy as np

    if type(name) is not str or not name:
        raise _bad(HISTOGRAM, "name", f"expected a non-empty str, given {type(name).__name__} {name!r}")
    try:
        a = _as_numpy(values)
    except (TypeError, ValueError) as exc:
        raise _bad(HISTOGRAM, "values", f"expected an array of numbers, given {type(values).__name__}: {exc}") \
            from None
    if a.dtype.kind not in "biuf":
        raise _bad(HISTOGRAM, "values", f"expected an array of real numbers, given dtype {a.dtype}")
    if a.dtype.kind == "b":
        a = a.astype(np.uint8)
    a = a.reshape(-1)
    edges_given = None
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        nbins = int(bins)
        if not 1 <= nbins <= MAX_BINS:
            raise _bad(HISTOGRAM, "bins", f"expected 1..{MAX_BINS} bins, given {nbins}")
    else:
        try:
            edges_given = np.asarray(bins, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise _bad(HISTOGRAM, "bins", f"expected an int or a sequence of edges, given {bins!r}") from None
        ok = 2 <= edges_given.size <= MAX_BINS + 1 and np.isfinite(edges_given).all() \
            and (np.diff(edges_given) > 0).all()
        if not ok:
            raise _bad(HISTOGRAM, "bins", "expected 2 or more finite, increasing edges")
        nbins = edges_given.size - 1
    nan_count = inf_count = 0
    if a.size and a.dtype.kind == "f":
        mn, mx = a.min(), a.max()
        if not (np.isfinite(mn) and np.isfinite(mx)):  # NaN propagates through min/max; so does inf
            nan = np.isnan(a)
            nan_count = int(nan.sum())
            inf_count = int(np.isinf(a).sum())
            a = a[np.isfinite(a)]
    count = int(a.size)
    if count:
        lo, hi = a.min().item(), a.max().item()
        if edges_given is not None:
            counts, edges = np.histogram(a, bins=edges_given)
        else:
            with np.errstate(all="ignore"):
                counts, edges = _equal_bins(a, nbins, float(lo), float(hi))
    else:
        lo = hi = None
        edges = edges_given if edges_given is not None else np.linspace(0.0, 1.0, nbins + 1)
        counts = np.zeros(nbins, dtype=np.int64)
    return {"name": name, "edges": [float(e) for e in edges.tolist()], "counts": counts.tolist(),
            "count": count, "nan_count": nan_count, "inf_count": inf_count,
            "min": None if lo is None else float(lo), "max": None if hi is None else float(hi)}
