"""W&B's media classes, ``wandb.Image``, ``wandb.Histogram``, ``wandb.Table``, ``wandb.Audio``,
``wandb.Video``, ``wandb.Object3D`` and ``wandb.Html``, stored as the tracker's records.

``run.log({"samples": tracker.Image(array)})`` stores an ``image`` record (a
PNG blob), ``tracker.Histogram(values)`` a ``histogram`` record,
``tracker.Table(columns=..., data=...)`` a ``table`` record, and ``Audio``,
``Video``, ``Object3D`` and ``Html`` a blob and an ``audio``, ``video``,
``object3d`` or ``html`` record, each named by its key and at the step of
the ``log`` call. The constructors take W&B's arguments; what cannot be
stored is refused when the object is made, with a :class:`tracker.SchemaError`
naming it (data is checked and encoded then, so nothing is written for a bad
one; the blob is written when the object is logged).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tracker.core.errors import SchemaError
from tracker.core.values import BadValue, check_json, given

__all__ = ["Audio", "Histogram", "Html", "Image", "Media", "Object3D", "Table", "Text", "Video", "box3d"]


class Media:
    """A value of ``log`` that becomes a record of its own (``image``, ``histogram``, ``table``)."""

    #: ``log`` tells media objects apart by this attribute.
    _tracker_media = True
    schema = ""

    def record(self, run: Any, name: str) -> dict[str, Any]:
        """The record's fields for the key ``name`` (an image's blob is stored here)."""
        raise NotImplementedError


def _numpy(data: Any) -> Any:
    """``data`` (numpy array, torch tensor, nested lists) as a numpy array."""
    import numpy as np

    from tracker.capture.media import _as_numpy

    return _as_numpy(data) if not isinstance(data, np.ndarray) else data


class Image(Media):
    """W&B's ``wandb.Image``: a numpy array, a torch tensor, a PIL image or the path of an image file.

    As in W&B, a 3-d array with 1, 3 or 4 leading channels (a tensor in CHW
    order) is turned to HWC, and floats are scaled to 0-255: values in
    [0, 1] times 255, values in [-1, 1] from -1..1. ``boxes``, ``masks`` and
    ``classes`` are not offered (an error says so).
    """

    schema = "image"

    def __init__(self, data_or_path: Any, mode: str | None = None, caption: str | None = None,
                 grouping: int | None = None, classes: Any = None, boxes: Any = None, masks: Any = None,
                 file_type: str | None = None, normalize: bool = True) -> None:
        for option, value in (("boxes", boxes), ("masks", masks), ("classes", classes)):
            if value is not None:
                raise SchemaError("image", [(option, "is not offered: log the overlay as an image of its own, "
                                                     f"or the data as a tracker.Table, given {given(value)}")])
        if caption is not None and type(caption) is not str:
            raise SchemaError("image", [("caption", f"expected a str, given {given(caption)}")])
        from tracker.capture.media import encode_image

        self.caption = caption or ""
        self.mode = mode
        if isinstance(data_or_path, (str, os.PathLike)):
            image: Any = os.fspath(data_or_path)
        elif type(data_or_path).__module__.startswith("PIL"):
            image = data_or_path if mode is None else data_or_path.convert(mode)
        else:
            image = _to_uint8(_numpy(data_or_path), normalize)
        # Encoded now: a bad image is refused where it is made, and a tensor may change before the step is written.
        self._png, self.width, self.height, self._mode = encode_image(image)

    def record(self, run: Any, name: str) -> dict[str, Any]:
        from tracker.capture.blobs import BlobStore

        sha, _ = BlobStore(run.store, fsync=run._host.config.fsync).put_bytes(self._png)
        return {"name": name, "sha256": sha, "width": self.width, "height": self.height, "mode": self._mode,
                "caption": self.caption}

    def __repr__(self) -> str:
        return f"<tracker.Image caption={self.caption!r}>"


def _to_uint8(a: Any, normalize: bool) -> Any:
    """W&B's conversion of an image array: CHW to HWC, a single channel dropped, floats to 0-255."""
    import numpy as np

    if a.ndim == 4 and a.shape[0] == 1:
        a = a[0]
    if a.ndim == 3 and a.shape[0] in (1, 3, 4) and a.shape[-1] not in (1, 3, 4):
        a = np.moveaxis(a, 0, -1)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.dtype.kind == "f" and normalize and a.size and np.isfinite(a).all():
        if a.min() < 0:
            a = (a + 1.0) / 2.0
        if a.max() <= 1.0:
            a = a * 255.0
        a = np.clip(a, 0, 255).astype(np.uint8)
    elif a.dtype.kind in "iu" and a.dtype != np.uint8 and a.size and a.min() >= 0 and a.max() <= 255:
        a = a.astype(np.uint8)
    return a


class Histogram(Media):
    """W&B's ``wandb.Histogram(sequence, num_bins=64)`` or ``wandb.Histogram(np_histogram=(counts, edges))``."""

    schema = "histogram"

    def __init__(self, sequence: Any = None, np_histogram: Any = None, num_bins: int = 64) -> None:
        from tracker.capture.media import histogram_record

        if np_histogram is not None:
            self._data = _from_np_histogram(np_histogram)
        elif sequence is None:
            raise SchemaError("histogram", [("sequence", "expected values or np_histogram=(counts, edges), "
                                                         "given neither")])
        else:
            # Computed now: a tensor given here may change before the step is written.
            self._data = histogram_record("_", sequence, num_bins)

    def record(self, run: Any, name: str) -> dict[str, Any]:
        return {**self._data, "name": name}

    def __repr__(self) -> str:
        return f"<tracker.Histogram count={self._data['count']}>"


def _from_np_histogram(pair: Any) -> dict[str, Any]:
    try:
        counts, edges = pair
        counts = [int(c) for c in _numpy(counts).reshape(-1).tolist()]
        edges = [float(e) for e in _numpy(edges).reshape(-1).tolist()]
    except (TypeError, ValueError) as exc:
        raise SchemaError("histogram", [("np_histogram", f"expected (counts, edges) as numpy.histogram gives, "
                                                         f"given {given(pair)}: {exc}")]) from None
    if len(edges) != len(counts) + 1 or any(c < 0 for c in counts):
        raise SchemaError("histogram", [("np_histogram", f"expected len(edges) == len(counts) + 1 and counts >= 0, "
                                                         f"given {len(counts)} counts and {len(edges)} edges")])
    used = [i for i, c in enumerate(counts) if c]
    return {"name": "_", "edges": edges, "counts": counts, "count": sum(counts), "nan_count": 0, "inf_count": 0,
            # The values themselves are not known: min and max are the edges of the outer non-empty bins.
            "min": edges[used[0]] if used else None, "max": edges[used[-1] + 1] if used else None}


class Text(Media):
    """A string value of ``log`` (W&B shows them in its history tables): a ``text`` record at the step."""

    schema = "text"

    def __init__(self, value: str) -> None:
        self.value = str.__str__(value)

    def record(self, run: Any, name: str) -> dict[str, Any]:
        return {"name": name, "value": self.value}

    def __repr__(self) -> str:
        return f"<tracker text {self.value!r}>"


class Table(Media):
    """W&B's ``wandb.Table(columns=[...], data=[[...], ...])``; also ``dataframe=`` and ``add_data(...)``.

    Cells are JSON values (numbers, strings, None, lists, dicts); numpy
    scalars and 0-d tensors count as numbers, arrays and tensors as lists. A
    ``tracker.Image`` cell is stored as its PNG blob, the cell holding a
    reference to it (see :mod:`tracker.capture.cells`); the dashboard shows it as a thumbnail.
    """

    schema = "table"

    def __init__(self, columns: Sequence[str] | None = None, data: Any = None, rows: Any = None,
                 dataframe: Any = None, dtype: Any = None, optional: Any = True,
                 allow_mixed_types: bool = False, log_mode: str | None = None) -> None:
        if dataframe is not None:
            columns = [str(c) for c in dataframe.columns]
            data = dataframe.itertuples(index=False, name=None)
        data = data if data is not None else rows
        data = [list(r) for r in data] if data is not None else []
        if columns is None:
            width = len(data[0]) if data else 0
            columns = [f"Column{i + 1}" for i in range(width)]
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise SchemaError("table", [("columns", f"expected a list of str, given {given(columns)}")])
        self.columns: list[str] = list(columns)
        self.data: list[list[Any]] = []
        for row in data:
            self.add_data(*row)

    def add_data(self, *row: Any) -> None:
        """Append one row: one value per column."""
        if len(row) != len(self.columns):
            raise SchemaError("table", [("data", f"expected {len(self.columns)} values per row (columns "
                                                 f"{self.columns}), given {len(row)}")])
        checked = []
        for column, value in zip(self.columns, row, strict=True):
            if isinstance(value, Image):
                checked.append(value)  # stored as a blob when the table is logged
                continue
            try:
                checked.append(check_json(value))
            except BadValue as bad:
                raise SchemaError("table", [(f"data[{len(self.data)}].{column}",
                                             f"expected {bad.args[0]}, given {given(value)}")]) from None
        self.data.append(checked)

    def add_column(self, name: str, data: Sequence[Any]) -> None:
        """Append a column of values, one per row."""
        if len(data) != len(self.data):
            raise SchemaError("table", [(name, f"expected {len(self.data)} values, given {len(data)}")])
        rows = [[*r, v] for r, v in zip(self.data, data, strict=True)]
        self.columns.append(name)
        self.data = []
        for row in rows:
            self.add_data(*row)

    def get_column(self, name: str, convert_to: str | None = None) -> list[Any]:
        """The values of column ``name``."""
        i = self.columns.index(name)
        return [r[i] for r in self.data]

    def record(self, run: Any, name: str) -> dict[str, Any]:
        from tracker.capture.cells import image_cell

        def cell(value: Any) -> Any:
            if not isinstance(value, Image):
                return value
            rec = value.record(run, name)
            return image_cell(rec["sha256"], rec["width"], rec["height"], rec["mode"], rec["caption"])

        return {"name": name, "columns": list(self.columns), "data": [[cell(v) for v in r] for r in self.data]}

    def __repr__(self) -> str:
        return f"<tracker.Table {len(self.columns)} columns, {len(self.data)} rows>"


class _BlobMedia(Media):
    """A media object stored as a blob and a record of its fields (audio, video, 3D, HTML)."""

    caption = ""
    _payload: Any = None
    _fields: dict[str, Any]

    def record(self, run: Any, name: str) -> dict[str, Any]:
        from tracker.capture.blobs import BlobStore

        sha = self._payload.store(BlobStore(run.store, fsync=run._host.config.fsync), self.schema)
        return {"name": name, "sha256": sha, **self._fields, "caption": self.caption}


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


class Audio(_BlobMedia):
    """W&B's ``wandb.Audio(data_or_path, sample_rate=None, caption=None)``: an ``audio`` record and its blob.

    ``data_or_path`` is an array of samples, ``(n,)`` or ``(n, channels)``,
    int16 or floats in [-1, 1] (stored as 16-bit WAV; ``sample_rate`` is
    needed), or the path of a wav, mp3, ogg or flac file (stored as it is;
    its rate is read from it). See :mod:`tracker.capture.audio`.
    """

    schema = "audio"

    def __init__(self, data_or_path: Any, sample_rate: int | None = None, caption: str | None = None) -> None:
        from tracker.capture.audio import clip_from_array, clip_from_file
        from tracker.capture.mediafile import check_caption

        self.caption = check_caption("audio", caption)
        clip = clip_from_file(data_or_path) if _is_path(data_or_path) else clip_from_array(data_or_path, sample_rate)
        self._payload, self._fields = clip.payload, clip.fields()
        self.sample_rate, self.duration = clip.sample_rate, clip.duration_s

    @classmethod
    def durations(cls, audio_list: Sequence[Audio]) -> list[float]:
        """The duration in seconds of each clip (W&B's helper)."""
        return [a.duration for a in audio_list]

    @classmethod
    def sample_rates(cls, audio_list: Sequence[Audio]) -> list[int]:
        """The sample rate of each clip (W&B's helper)."""
        return [a.sample_rate for a in audio_list]

    def __repr__(self) -> str:
        return f"<tracker.Audio {self._fields['format']} {self.duration:.3f} s caption={self.caption!r}>"


class Video(_BlobMedia):
    """W&B's ``wandb.Video(data_or_path, caption=None, fps=None, format=None)``: a ``video`` record and its blob.

    ``data_or_path`` is a uint8 array ``(T, C, H, W)`` or ``(N, T, C, H, W)``
    (N videos tiled into a grid), encoded at ``fps`` frames per second (W&B's
    default, 4) as ``format`` (W&B's default, ``"gif"``; ``"mp4"`` and
    ``"webm"`` through PyAV); or the path of an mp4, webm or gif file, or a
    binary file object, stored as it is (``fps`` does not apply). See
    :mod:`tracker.capture.video`.
    """

    schema = "video"

    def __init__(self, data_or_path: Any, caption: str | None = None, fps: float | None = None,
                 format: str | None = None) -> None:  # noqa: A002 - W&B's name
        from tracker.capture.mediafile import check_caption
        from tracker.capture.video import movie_from_array, movie_from_bytes, movie_from_file

        self.caption = check_caption("video", caption)
        fmt = format.lower() if isinstance(format, str) else format
        if _is_path(data_or_path):
            movie = movie_from_file(data_or_path, fmt)
        elif isinstance(data_or_path, (bytes, bytearray)) or hasattr(data_or_path, "read"):
            raw = data_or_path if isinstance(data_or_path, (bytes, bytearray)) else _read_all(data_or_path)
            movie = movie_from_bytes(raw, fmt)
        else:
            movie = movie_from_array(data_or_path, 4 if fps is None else fps, "gif" if fmt is None else fmt)
        self._payload, self._fields = movie.payload, movie.fields()
        self.fps, self.format = movie.fps, movie.format

    def __repr__(self) -> str:
        f = self._fields
        return f"<tracker.Video {f['format']} {f['frames']} frames {f['width']}x{f['height']} caption={self.caption!r}>"


def _read_all(f: Any) -> bytes:
    if hasattr(f, "seek"):
        f.seek(0)
    data = f.read()
    if isinstance(data, str):
        raise SchemaError("video", [("data_or_path", "expected a binary file object, given a text one")])
    return bytes(data)


class Object3D(_BlobMedia):
    """W&B's ``wandb.Object3D(data_or_path, caption=None, **kwargs)``: an ``object3d`` record and its blob.

    ``data_or_path`` is a numpy array ``(n, 3)`` xyz, ``(n, 4)`` xyz and
    category or ``(n, 6)`` xyz and rgb; W&B's ``{"type": "lidar/beta",
    "points": ..., "boxes": ..., "vectors": ...}``; or the path of an obj,
    ply, stl, glb, gltf or pts.json file (or a file object with
    ``file_type=``). Point clouds are stored in the compact binary layout
    of :mod:`tracker.capture.object3d`, meshes as their files.
    """

    schema = "object3d"

    def __init__(self, data_or_path: Any, caption: str | None = None, **kwargs: Any) -> None:
        from tracker.capture import object3d as o3d
        from tracker.capture.mediafile import Payload, check_caption

        file_type = kwargs.pop("file_type", None)
        if kwargs:
            raise TypeError(f"Object3D() got an unexpected keyword argument {sorted(kwargs)[0]!r}")
        self.caption = check_caption("object3d", caption)
        name = getattr(data_or_path, "name", None)
        if hasattr(data_or_path, "read") and isinstance(name, str) and file_type is None and os.path.isfile(name):
            data_or_path = name  # an open file: read from its path, by its name, as W&B does
        if _is_path(data_or_path):
            scene = o3d.scene_from_file(data_or_path, file_type)
        elif isinstance(data_or_path, dict):
            scene = o3d.scene_from_dict(data_or_path)
        elif hasattr(data_or_path, "read"):
            if file_type not in o3d.MESH_FILES.values():
                raise SchemaError("object3d", [("file_type", "expected the type of the file object's content, one of "
                                                             f"{', '.join(o3d.MESH_FILES.values())}, given "
                                                             f"{given(file_type)}")])
            if hasattr(data_or_path, "seek"):
                data_or_path.seek(0)
            got = data_or_path.read()
            raw = got.encode("utf-8") if isinstance(got, str) else bytes(got)
            scene = o3d.scene_from_payload(Payload.of_bytes(raw), file_type, "the file object")
        else:
            scene = o3d.encode_points(data_or_path)
        self._payload, self._fields = scene.payload, scene.fields()

    @classmethod
    def from_file(cls, data_or_path: Any, file_type: str | None = None) -> Object3D:
        """A mesh file (obj, ply, stl, glb, gltf, pts.json), or a file object of ``file_type``."""
        return cls(data_or_path, file_type=file_type)

    @classmethod
    def from_numpy(cls, data: Any) -> Object3D:
        """A point cloud: ``(n, 3)``, ``(n, 4)`` or ``(n, 6)``."""
        import numpy as np

        if not isinstance(data, np.ndarray):
            raise SchemaError("object3d", [("data", f"expected a numpy array, given {given(data)}")])
        return cls(data)

    @classmethod
    def from_point_cloud(cls, points: Any, boxes: Any, vectors: Any = None,
                         point_cloud_type: str = "lidar/beta") -> Object3D:
        """A point cloud with 3D boxes (``{"corners", "label", "color", "score"}``) and vectors."""
        return cls({"type": point_cloud_type, "points": points, "boxes": boxes, "vectors": vectors})

    def __repr__(self) -> str:
        f = self._fields
        return f"<tracker.Object3D {f['format']} {f['points']} points {f['boxes']} boxes caption={self.caption!r}>"


def box3d(*, center: Any, size: Any, orientation: Any, color: Any, label: str | None = None,
          score: float | None = None) -> dict[str, Any]:
    """W&B's ``wandb.box3d``: a 3D box for ``Object3D`` from its center, size and orientation.

    :param center: ``(x, y, z)`` of the box's center.
    :param size: the box's extent along its own x, y and z.
    :param orientation: the rotation from the box's axes to the scene's, a quaternion ``(r, x, y, z)``
        (any non-zero length).
    :param color: ``(r, g, b)``.
    :returns: ``{"corners": 8 points, "color", "label", "score"}``, as ``Object3D`` boxes take it.
    """
    import itertools

    import numpy as np

    c = np.asarray(center, dtype=np.float64).reshape(-1)
    s = np.asarray(size, dtype=np.float64).reshape(-1)
    q = np.asarray(orientation, dtype=np.float64).reshape(-1)
    if c.shape != (3,) or s.shape != (3,) or q.shape != (4,) or not np.isfinite(np.concatenate([c, s, q])).all():
        raise SchemaError("object3d", [("box3d", "expected a finite center (3), size (3) and orientation quaternion "
                                                 f"(4), given shapes {c.shape}, {s.shape}, {q.shape}")])
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        raise SchemaError("object3d", [("box3d", "expected a non-zero orientation quaternion, given (0, 0, 0, 0)")])
    r, x, y, z = q / norm
    # The rotation matrix of a unit quaternion; rows apply to row vectors (points @ rot).
    rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y + z * r), 2 * (x * z - y * r)],
                    [2 * (x * y - z * r), 1 - 2 * (x * x + z * z), 2 * (y * z + x * r)],
                    [2 * (x * z + y * r), 2 * (y * z - x * r), 1 - 2 * (x * x + y * y)]])
    unit = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
    corners = c + (0.5 * s * unit) @ rot
    return {"corners": [[float(v) for v in p] for p in corners], "color": color, "label": label, "score": score}


class Html(_BlobMedia):
    """W&B's ``wandb.Html(data, inject=True, data_is_not_path=False)``: an ``html`` record and its blob.

    ``data`` is HTML text, the path of an .html file, or a file object. With
    ``inject``, a base target and a small stylesheet go into the head (see
    :mod:`tracker.capture.html`). The dashboard shows the page in a frame
    sandboxed without same-origin: its scripts never touch the dashboard.
    """

    schema = "html"

    def __init__(self, data: Any, inject: bool = True, data_is_not_path: bool = False,
                 caption: str | None = None) -> None:
        from tracker.capture.html import page
        from tracker.capture.mediafile import check_caption

        self.caption = check_caption("html", caption)
        p = page(data, bool(inject), bool(data_is_not_path))
        self._payload, self._fields = p.payload, p.fields()
        self.html = p.payload.data.decode("utf-8") if p.payload.data is not None else ""

    def __repr__(self) -> str:
        return f"<tracker.Html {self._fields['size']} bytes caption={self.caption!r}>"
