"""3D scenes: point clouds (numpy arrays, W&B's ``lidar/beta`` dicts) in a compact binary layout, meshes as files.

A point cloud is stored as one blob of format ``points`` (the record's
``format``), laid out so that a browser reads it with typed arrays over the
fetched ``ArrayBuffer``, without parsing text::

    offset  size        what
    0       8           magic b"TRKPTS01"
    8       uint32      n, the number of points
    12      uint32      flags: 1 = colours, 2 = categories
    16      uint32      j, the length in bytes of the JSON part at the end
    20      uint32      0 (reserved)
    24      n*3 float32 x, y, z of each point (Float32Array(buffer, 24, 3 * n))
    ...     n float32   the category of each point, when flags & 2
    ...     n*3 uint8   r, g, b (0-255) of each point, when flags & 1
    ...     0-3 bytes   zero padding to a multiple of 4
    ...     j bytes     UTF-8 JSON: {"boxes": [...], "vectors": [...]}

All numbers are little-endian. Each box is ``{"corners": [[x, y, z] x 8],
"label": str | null, "color": [r, g, b], "score": number | null}`` (the
corners in the order given; ``color`` as given: 0-255, or 0-1 when every
component is at most 1, as W&B's ``box3d`` documents); each vector is
``{"start": [x, y, z], "end": [x, y, z]}``.

The arrays W&B takes: ``(n, 3)`` xyz, ``(n, 4)`` xyz and a category (W&B
colours categories 1-14 from a palette), ``(n, 6)`` xyz and rgb (0-255).
W&B's dict form is ``{"type": "lidar/beta", "points": array, "boxes":
[box, ...] or an (m, 8, 3) array of corners, "vectors": [...]}``.

Meshes are stored as the files they are, checked by their content: ``obj``
(text), ``ply`` (``ply`` header), ``stl`` (binary: 84 + 50 x triangles bytes;
or text starting ``solid``), ``glb`` (``glTF`` magic) and ``gltf`` (JSON; its
buffers inside it as ``data:`` URIs: a .gltf naming other files cannot be
shown from one blob). The record's ``points`` counts their vertices.
"""

from __future__ import annotations

import json
import math
import re
import struct
from typing import Any

import attrs

from tracker.capture.mediafile import Payload, bad, file_payload, mismatch, sniff
from tracker.core.values import given

OBJECT3D = "object3d"
MAGIC = b"TRKPTS01"
HEADER = struct.Struct("<8sIIII")
COLORS, CATEGORIES = 1, 2
MESH_FILES = {".obj": "obj", ".ply": "ply", ".stl": "stl", ".glb": "glb", ".gltf": "gltf", ".pts.json": "pts.json"}
MAX_POINTS = 100_000_000
_FIELD = "data_or_path"


@attrs.frozen
class Scene:
    """A checked 3D scene: its bytes and the ``object3d`` record's fields but the name, sha256 and caption."""

    payload: Payload
    format: str
    points: int
    has_colors: bool
    boxes: int

    def fields(self) -> dict[str, Any]:
        """``format``, ``points``, ``has_colors``, ``boxes``."""
        return {"format": self.format, "points": self.points, "has_colors": self.has_colors, "boxes": self.boxes}


# --- point clouds -------------------------------------------------------------------------------

def _array(value: Any, what: str) -> Any:
    import numpy as np

    from tracker.capture.media import _as_numpy

    try:
        a = _as_numpy(value)
        if a.dtype == object:
            a = np.asarray(a.tolist(), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise bad(OBJECT3D, what, f"expected an array of numbers, given {given(value)}: {exc}") from None
    if a.dtype.kind not in "biuf":
        raise bad(OBJECT3D, what, f"expected an array of numbers, given dtype {a.dtype}")
    return a


def encode_points(points: Any, boxes: Any = None, vectors: Any = None, field: str = _FIELD) -> Scene:
    """A point cloud in the ``points`` layout (see the module's docstring).

    :raises SchemaError: a bad shape, NaN or infinite coordinates, colours outside 0-255, bad boxes or vectors.
    """
    import numpy as np

    a = _array(points, field)
    if a.ndim == 1 and a.size == 0:
        a = a.reshape(0, 3)
    if a.ndim != 2 or a.shape[1] not in (3, 4, 6):
        raise bad(OBJECT3D, field, "expected points of shape (n, 3) xyz, (n, 4) xyz and category or (n, 6) xyz "
                                   f"and rgb, given shape {tuple(a.shape)}")
    n = int(a.shape[0])
    if n > MAX_POINTS:
        raise bad(OBJECT3D, field, f"expected at most {MAX_POINTS} points, given {n}")
    xyz = a[:, :3].astype("<f4")
    if not np.isfinite(xyz).all():
        row = int(np.argwhere(~np.isfinite(xyz))[0][0])
        raise bad(OBJECT3D, field, f"expected finite coordinates, given {a[row, :3].tolist()} at point {row}")
    flags = 0
    parts = [xyz.tobytes()]
    if a.shape[1] == 4:
        cat = a[:, 3].astype("<f4")
        if not np.isfinite(cat).all():
            raise bad(OBJECT3D, field, "expected finite categories in column 4, given NaN or infinity")
        flags |= CATEGORIES
        parts.append(cat.tobytes())
    if a.shape[1] == 6:
        rgb = a[:, 3:6]
        if n and (not np.isfinite(rgb).all() or rgb.min() < 0 or rgb.max() > 255):
            raise bad(OBJECT3D, field, f"expected colours 0-255 in columns 4-6, given values from {float(rgb.min())!r} "
                                       f"to {float(rgb.max())!r}")
        flags |= COLORS
        parts.append(np.rint(rgb).astype(np.uint8).tobytes())
    body = b"".join(parts)
    body += b"\0" * (-len(body) % 4)
    extra = {"boxes": check_boxes(boxes), "vectors": check_vectors(vectors)}
    tail = json.dumps(extra, separators=(",", ":"), allow_nan=False).encode("utf-8")
    data = HEADER.pack(MAGIC, n, flags, len(tail), 0) + body + tail
    return Scene(Payload.of_bytes(data), "points", n, bool(flags & COLORS), len(extra["boxes"]))


def decode_points(data: bytes) -> dict[str, Any]:
    """The ``points`` layout read back: ``{"xyz": (n, 3) float32, "categories", "rgb", "boxes", "vectors"}``."""
    import numpy as np

    magic, n, flags, j, _ = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError(f"not a point cloud blob (magic {magic!r})")
    off = HEADER.size
    xyz = np.frombuffer(data, "<f4", 3 * n, off).reshape(n, 3)
    off += 12 * n
    cat = rgb = None
    if flags & CATEGORIES:
        cat = np.frombuffer(data, "<f4", n, off)
        off += 4 * n
    if flags & COLORS:
        rgb = np.frombuffer(data, np.uint8, 3 * n, off).reshape(n, 3)
        off += 3 * n
    off += -off % 4
    extra = json.loads(data[off:off + j])
    return {"xyz": xyz, "categories": cat, "rgb": rgb, "boxes": extra["boxes"], "vectors": extra["vectors"]}


def _number(value: Any, what: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise bad(OBJECT3D, what, f"expected a number, given {given(value)}") from None
    if not math.isfinite(x):
        raise bad(OBJECT3D, what, f"expected a finite number, given {x!r}")
    return x


def _triple(value: Any, what: str) -> list[float]:
    items = value.tolist() if hasattr(value, "tolist") else value
    if not isinstance(items, (list, tuple)) or len(items) != 3:
        raise bad(OBJECT3D, what, f"expected [x, y, z], given {given(value)}")
    return [_number(v, what) for v in items]


def check_boxes(boxes: Any) -> list[dict[str, Any]]:
    """W&B's boxes as stored: dicts of 8 corners, a label, a colour and a score; an ``(m, 8, 3)`` array is corners."""
    if boxes is None:
        return []
    items = boxes.tolist() if hasattr(boxes, "tolist") else boxes
    if not isinstance(items, (list, tuple)):
        raise bad(OBJECT3D, "boxes", f"expected a list of boxes, given {given(boxes)}")
    out = []
    for i, box in enumerate(items):
        where = f"boxes[{i}]"
        if not isinstance(box, dict):
            box = {"corners": box}
        unknown = sorted(set(box) - {"corners", "label", "color", "score"})
        if unknown:
            raise bad(OBJECT3D, where, f"expected the keys corners, label, color, score, given {unknown[0]!r}")
        corners = box.get("corners")
        corners = corners.tolist() if hasattr(corners, "tolist") else corners
        if not isinstance(corners, (list, tuple)) or len(corners) != 8:
            raise bad(OBJECT3D, f"{where}.corners", f"expected 8 corners [x, y, z], given {given(corners)}")
        label = box.get("label")
        if label is not None and not isinstance(label, str):
            raise bad(OBJECT3D, f"{where}.label", f"expected a str or None, given {given(label)}")
        color = box.get("color", [0, 255, 0])
        rgb = _triple(color, f"{where}.color")
        if min(rgb) < 0:
            raise bad(OBJECT3D, f"{where}.color", f"expected components >= 0, given {rgb}")
        score = box.get("score")
        out.append({"corners": [_triple(c, f"{where}.corners") for c in corners], "label": label, "color": rgb,
                    "score": None if score is None else _number(score, f"{where}.score")})
    return out


def check_vectors(vectors: Any) -> list[dict[str, list[float]]]:
    """W&B's vectors as stored: ``{"start": xyz, "end": xyz}`` (a pair ``[start, end]`` is taken too)."""
    if vectors is None:
        return []
    items = vectors.tolist() if hasattr(vectors, "tolist") else vectors
    if not isinstance(items, (list, tuple)):
        raise bad(OBJECT3D, "vectors", f"expected a list of vectors, given {given(vectors)}")
    out = []
    for i, v in enumerate(items):
        where = f"vectors[{i}]"
        if isinstance(v, dict):
            start, end = v.get("start"), v.get("end")
        elif isinstance(v, (list, tuple)) and len(v) == 2:
            start, end = v
        else:
            raise bad(OBJECT3D, where, f"expected {{'start': [x, y, z], 'end': [x, y, z]}}, given {given(v)}")
        out.append({"start": _triple(start, f"{where}.start"), "end": _triple(end, f"{where}.end")})
    return out


def scene_from_dict(data: dict[str, Any]) -> Scene:
    """W&B's ``{"type": "lidar/beta", "points": ..., "boxes": ..., "vectors": ...}``."""
    if data.get("type") != "lidar/beta":
        raise bad(OBJECT3D, "type", f"expected 'lidar/beta' (the one type W&B offers), given {given(data.get('type'))}")
    unknown = sorted(set(data) - {"type", "points", "boxes", "vectors"})
    if unknown:
        raise bad(OBJECT3D, unknown[0], "expected the keys type, points, boxes, vectors")
    points = data.get("points")
    return encode_points([] if points is None else points, data.get("boxes"), data.get("vectors"), "points")


# --- files --------------------------------------------------------------------------------------

def scene_from_file(path: Any, file_type: Any = None) -> Scene:
    """A mesh file as it is (or W&B's ``.pts.json``, turned into the ``points`` layout), checked by its content."""
    payload, expected = file_payload(OBJECT3D, path, MESH_FILES)
    if file_type is not None and file_type != expected:
        raise bad(OBJECT3D, "file_type", f"expected the type of {payload.path} ({expected}), given {given(file_type)}")
    return scene_from_payload(payload, expected, payload.path)


def scene_from_payload(payload: Payload, expected: str, where: Any) -> Scene:
    """A checked mesh's fields, read from its bytes."""
    data = payload.read()
    found = sniff(data[:64])
    if expected in ("glb", "ply"):
        if found != expected:
            raise mismatch(OBJECT3D, where, expected, found)
        return _glb(payload, data, where) if expected == "glb" else _ply(payload, data, where)
    if expected == "stl" and len(data) >= 84 and len(data) == 84 + 50 * struct.unpack_from("<I", data, 80)[0]:
        return Scene(payload, "stl", 3 * struct.unpack_from("<I", data, 80)[0], False, 0)
    if found is not None:
        raise mismatch(OBJECT3D, where, expected, found)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise mismatch(OBJECT3D, where, expected, None) from None
    if expected == "stl":
        if not text.lstrip().startswith("solid"):
            raise mismatch(OBJECT3D, where, "stl", None)
        return Scene(payload, "stl", len(re.findall(r"^\s*vertex\s", text, re.M)), False, 0)
    if expected == "obj":
        return _obj(payload, text, where)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise bad(OBJECT3D, _FIELD, f"expected a {expected} file (JSON), given {where}: {exc}") from None
    if expected == "pts.json":
        if isinstance(doc, dict):
            return scene_from_dict(doc)
        return encode_points(doc)
    return _gltf(payload, doc, where)


_OBJ_KEYS = frozenset("v vt vn vp f l p o g s mtllib usemtl cstype deg curv surf parm end".split())


def _obj(payload: Payload, text: str, where: Any) -> Scene:
    points = 0
    colors = True
    for i, line in enumerate(text.splitlines(), 1):
        word = line.split(None, 1)[0] if line.strip() else ""
        if not word or word.startswith("#"):
            continue
        if word not in _OBJ_KEYS:
            raise bad(OBJECT3D, _FIELD, f"expected an obj file, given {where} with {word!r} at line {i}")
        if word == "v":
            points += 1
            colors = colors and len(line.split()) >= 7  # v x y z r g b: vertex colours, an extension many write
    if not points:
        raise bad(OBJECT3D, _FIELD, f"expected an obj file with vertices (v lines), given {where} with none")
    return Scene(payload, "obj", points, colors, 0)


def _ply(payload: Payload, data: bytes, where: Any) -> Scene:
    end = data.find(b"end_header")
    if end < 0:
        raise bad(OBJECT3D, _FIELD, f"expected a ply header ending in end_header, given {where}")
    header = data[:end].decode("ascii", "replace").splitlines()
    points, colors, element = 0, False, ""
    for line in header:
        words = line.split()
        if words[:1] == ["element"] and len(words) == 3:
            element = words[1]
            if element == "vertex":
                points = int(words[2]) if words[2].isdigit() else 0
        elif words[:1] == ["property"] and element == "vertex" and words[-1] in ("red", "r", "diffuse_red"):
            colors = True
    return Scene(payload, "ply", points, colors, 0)


def _gltf_counts(doc: Any, where: Any) -> tuple[int, bool]:
    if not isinstance(doc, dict) or not isinstance(doc.get("asset"), dict):
        raise bad(OBJECT3D, _FIELD, f"expected glTF JSON with an asset, given {where}")
    accessors = doc.get("accessors") or []
    points, colors = 0, False
    for mesh in doc.get("meshes") or []:
        for prim in mesh.get("primitives") or []:
            attributes = prim.get("attributes") or {}
            i = attributes.get("POSITION")
            if isinstance(i, int) and 0 <= i < len(accessors):
                points += int(accessors[i].get("count") or 0)
            colors = colors or "COLOR_0" in attributes
    return points, colors


def _gltf(payload: Payload, doc: Any, where: Any) -> Scene:
    points, colors = _gltf_counts(doc, where)
    for kind in ("buffers", "images"):
        for item in doc.get(kind) or []:
            uri = item.get("uri") if isinstance(item, dict) else None
            if isinstance(uri, str) and not uri.startswith("data:"):
                raise bad(OBJECT3D, _FIELD, f"expected a self-contained gltf file, given {where} naming {uri!r} "
                                            "(one file is stored: convert it to .glb)")
    return Scene(payload, "gltf", points, colors, 0)


def _glb(payload: Payload, data: bytes, where: Any) -> Scene:
    if len(data) < 20:
        raise bad(OBJECT3D, _FIELD, f"expected a glb file, given {where} of {len(data)} bytes")
    _, version, length = struct.unpack_from("<4sII", data)
    chunk_len, chunk_type = struct.unpack_from("<I4s", data, 12)
    if version != 2 or length != len(data) or chunk_type != b"JSON" or 20 + chunk_len > len(data):
        raise bad(OBJECT3D, _FIELD, f"expected a glTF 2 binary file of its stated length with a JSON chunk, given "
                                    f"{where} (version {version}, {length} bytes stated, {len(data)} read)")
    try:
        doc = json.loads(data[20:20 + chunk_len])
    except ValueError as exc:
        raise bad(OBJECT3D, _FIELD, f"expected a glb file, given {where} with a damaged JSON chunk: {exc}") from None
    points, colors = _gltf_counts(doc, where)
    return Scene(payload, "glb", points, colors, 0)
