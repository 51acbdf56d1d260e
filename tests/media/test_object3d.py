"""``tracker.Object3D``: point clouds in the binary layout read back exactly, W&B's lidar dict with boxes, mesh files
stored as they are and checked by their content, bad input refused with nothing written; and ``tracker.Html``."""

from __future__ import annotations

import base64
import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest

import tracker
from tracker.capture.object3d import decode_points

from .conftest import blob, held, records

BOX = {"corners": [[0, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0], [1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1]],
       "label": "car", "color": [255, 0, 0], "score": 0.9}


@pytest.mark.parametrize("columns", [3, 4, 6])
def test_numpy_points_round_trip(run: tracker.Run, columns: int) -> None:
    rng = np.random.default_rng(columns)
    a = rng.normal(size=(500, columns))
    if columns == 4:
        a[:, 3] = rng.integers(1, 15, 500)
    if columns == 6:
        a[:, 3:] = rng.integers(0, 256, (500, 3))
    run.log({"cloud": tracker.Object3D(a, caption="scan")}, step=2)
    [rec] = records(run, "object3d")
    assert rec.step == 2
    d = rec.data
    assert (d["format"], d["points"], d["has_colors"], d["boxes"], d["caption"]) == (
        "points", 500, columns == 6, 0, "scan")
    data = blob(run, d["sha256"])
    assert data[:8] == b"TRKPTS01" and struct.unpack_from("<I", data, 8)[0] == 500
    back = decode_points(data)
    assert np.array_equal(back["xyz"], a[:, :3].astype(np.float32))
    assert (back["categories"] is not None) == (columns == 4) and (back["rgb"] is not None) == (columns == 6)
    if columns == 4:
        assert np.array_equal(back["categories"], a[:, 3].astype(np.float32))
    if columns == 6:
        assert np.array_equal(back["rgb"], a[:, 3:].astype(np.uint8))
    assert back["boxes"] == [] and back["vectors"] == []


def test_lidar_dict_with_boxes_and_vectors_as_w_and_b_takes_it(run: tracker.Run) -> None:
    points = np.random.default_rng(0).random((100, 3)) * 5 - 2.5
    corners_only = np.array(BOX["corners"], dtype=float)[None] * 2
    scene = tracker.Object3D({"type": "lidar/beta", "points": points,
                              "boxes": np.array([BOX, {"corners": corners_only[0].tolist(), "color": [0, 1, 0]}]),
                              "vectors": np.array([[[1, 1, 1], [1, 2, 1]]])})
    pc = tracker.Object3D.from_point_cloud(points=points, boxes=corners_only, vectors=[{"start": [0, 0, 0],
                                                                                         "end": [1, 1, 1]}])
    run.log({"scene": scene, "pc": pc, "np": tracker.Object3D.from_numpy(points)})
    scene_rec, pc_rec, np_rec = records(run, "object3d")
    assert (scene_rec.data["points"], scene_rec.data["boxes"], pc_rec.data["boxes"]) == (100, 2, 1)
    back = decode_points(blob(run, scene_rec.data["sha256"]))
    assert back["boxes"][0] == {"corners": [[float(v) for v in c] for c in BOX["corners"]], "label": "car",
                                "color": [255.0, 0.0, 0.0], "score": 0.9}
    assert back["boxes"][1]["label"] is None and back["boxes"][1]["color"] == [0.0, 1.0, 0.0]
    assert back["vectors"] == [{"start": [1.0, 1.0, 1.0], "end": [1.0, 2.0, 1.0]}]
    assert decode_points(blob(run, pc_rec.data["sha256"]))["boxes"][0]["corners"][7] == [2.0, 2.0, 2.0]
    assert np.array_equal(decode_points(blob(run, np_rec.data["sha256"]))["xyz"], points.astype(np.float32))


def _glb(doc: dict) -> bytes:
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    return struct.pack("<4sII", b"glTF", 2, 20 + len(js)) + struct.pack("<I4s", len(js), b"JSON") + js


GLTF = {"asset": {"version": "2.0"}, "accessors": [{"count": 3, "type": "VEC3", "componentType": 5126}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "COLOR_0": 0}}]}]}


def _mesh_files(tmp: Path) -> dict[str, tuple[Path, int, bool]]:
    """Each mesh format: (file, vertices, has colours)."""
    files = {}
    obj = tmp / "tri.obj"
    obj.write_text("# a triangle\no tri\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//1 2//1 3//1\n")
    files["obj"] = (obj, 3, False)
    ply = tmp / "cloud.ply"
    ply.write_bytes(b"ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
                    b"property float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n"
                    + struct.pack("<fffBBB", 0, 0, 0, 255, 0, 0) + struct.pack("<fffBBB", 1, 1, 1, 0, 255, 0))
    files["ply"] = (ply, 2, True)
    stl = tmp / "bin.stl"
    stl.write_bytes(b"solid but binary".ljust(80, b" ") + struct.pack("<I", 2) + bytes(100))
    files["stl"] = (stl, 6, False)
    ascii_stl = tmp / "text.stl"
    ascii_stl.write_text("solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n"
                         "endloop\nendfacet\nendsolid t\n")
    files["text.stl"] = (ascii_stl, 3, False)
    glb = tmp / "m.glb"
    glb.write_bytes(_glb(GLTF))
    files["glb"] = (glb, 3, True)
    gltf = tmp / "m.gltf"
    uri = "data:application/octet-stream;base64," + base64.b64encode(bytes(36)).decode()
    gltf.write_text(json.dumps({**GLTF, "buffers": [{"uri": uri, "byteLength": 36}]}))
    files["gltf"] = (gltf, 3, True)
    return files


def test_mesh_files_are_stored_as_they_are(run: tracker.Run, tmp_path: Path) -> None:
    files = _mesh_files(tmp_path)
    for name, (path, _, _) in files.items():
        run.log({name: tracker.Object3D.from_file(path) if name != "obj" else tracker.Object3D(str(path))})
    got = {r.data["name"]: r.data for r in records(run, "object3d")}
    for name, (path, vertices, colors) in files.items():
        d = got[name]
        assert blob(run, d["sha256"]) == path.read_bytes()
        assert (d["format"], d["points"], d["has_colors"]) == (name.split(".")[-1], vertices, colors)


def test_pts_json_and_file_objects(run: tracker.Run, tmp_path: Path) -> None:
    pts = tmp_path / "scan.pts.json"
    pts.write_text(json.dumps([[0, 0, 0], [1, 2, 3]]))
    run.log({"pts": tracker.Object3D(pts), "io": tracker.Object3D(io.StringIO("v 0 0 0\nv 1 1 1\n"), file_type="obj")})
    with open(pts) as opened:  # an open file: W&B reads it from its path
        run.log({"opened": tracker.Object3D(opened)})
    pts_rec, io_rec, opened_rec = records(run, "object3d")
    assert opened_rec.data["sha256"] == pts_rec.data["sha256"]
    assert (pts_rec.data["format"], pts_rec.data["points"]) == ("points", 2)
    assert decode_points(blob(run, pts_rec.data["sha256"]))["xyz"].tolist() == [[0, 0, 0], [1, 2, 3]]
    assert (io_rec.data["format"], io_rec.data["points"]) == ("obj", 2)


def test_bad_input_is_refused_naming_it_and_nothing_is_written(run: tracker.Run, tmp_path: Path) -> None:
    gif_named_glb = tmp_path / "x.glb"
    gif_named_glb.write_bytes(b"GIF89a" + bytes(30))
    obj_named_ply = tmp_path / "x.ply"
    obj_named_ply.write_text("v 0 0 0\n")
    binary_named_obj = tmp_path / "x.obj"
    binary_named_obj.write_bytes(b"\xff\xfe\x00\x01" * 10)
    external = tmp_path / "x.gltf"
    external.write_text(json.dumps({**GLTF, "buffers": [{"uri": "x.bin", "byteLength": 36}]}))
    not_obj = tmp_path / "y.obj"
    not_obj.write_text("<html>not a mesh</html>\n")
    cases = [
        (np.zeros((5, 5)), {}, "shape (5, 5)"),
        (np.zeros(5), {}, "shape (5,)"),
        (np.array([[0, 0, np.nan]]), {}, "finite coordinates"),
        (np.array([[0, 0, 0, 0, 0, 300]]), {}, "colours 0-255"),
        (np.array([["a", "b", "c"]]), {}, "numbers"),
        ({"type": "mesh", "points": np.zeros((1, 3))}, {}, "lidar/beta"),
        ({"type": "lidar/beta", "points": np.zeros((1, 3)), "boxes": [{"corners": [[0, 0, 0]]}]}, {}, "boxes[0]"),
        ({"type": "lidar/beta", "points": np.zeros((1, 3)), "boxes": [{**BOX, "color": [1, 2]}]}, {}, "color"),
        ({"type": "lidar/beta", "points": np.zeros((1, 3)), "boxes": [{**BOX, "label": 3}]}, {}, "label"),
        ({"type": "lidar/beta", "points": np.zeros((1, 3)), "vectors": [[1, 2, 3]]}, {}, "vectors[0]"),
        (tmp_path / "missing.obj", {}, "missing file"),
        (tmp_path / "scene.babylon", {}, "*.glb"),
        (gif_named_glb, {}, "gif file"),
        (obj_named_ply, {}, "ply file"),
        (binary_named_obj, {}, "obj file"),
        (external, {}, "convert it to .glb"),
        (not_obj, {}, "'<html>not'"),
        (io.StringIO("v 0 0 0"), {}, "file_type"),
    ]
    run.log({"before": 1.0})
    before = held(run)
    for data, kwargs, named in cases:
        with pytest.raises(tracker.SchemaError) as err:
            run.log({"o": tracker.Object3D(data, **kwargs)})
        assert named in str(err.value) and "object3d" in str(err.value), (named, str(err.value))
    assert held(run) == before


def test_html_text_path_and_inject(run: tracker.Run, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>t</title></head><body><script>1</script></body></html>")
    run.log({"text": tracker.Html("<p>hello</p>", inject=False), "file": tracker.Html(str(page)),
             "io": tracker.Html(io.StringIO("<b>x</b>"), caption="from io")})
    text, file, from_io = (r.data for r in records(run, "html"))
    assert blob(run, text["sha256"]) == b"<p>hello</p>" and text["size"] == 12
    stored = blob(run, file["sha256"]).decode()
    assert stored.startswith('<html><head><base target="_blank"><style>') and stored.endswith("</html>")
    assert "<title>t</title>" in stored and file["size"] == len(stored.encode())
    assert from_io["caption"] == "from io" and blob(run, from_io["sha256"]).endswith(b"<b>x</b>")


def test_bad_html_is_refused_and_nothing_is_written(run: tracker.Run, tmp_path: Path) -> None:
    binary = tmp_path / "b.html"
    binary.write_bytes(b"<p>\x00</p>")
    latin = tmp_path / "l.html"
    latin.write_bytes(b"<p>caf\xe9</p>")
    before = held(run)
    for data, named in [(tmp_path / "gone.html", "missing file"), (binary, "NUL at byte 3"), (latin, "UTF-8"),
                        (42, "int"), ("\ud800", "UTF-8")]:
        with pytest.raises(tracker.SchemaError, match="html") as err:
            tracker.Html(data)
        assert named in str(err.value)
    assert held(run) == before


def test_box3d_makes_w_and_bs_corners_from_center_size_and_orientation(run: tracker.Run) -> None:
    plain = tracker.box3d(center=(1, 2, 3), size=(2, 4, 6), orientation=(1, 0, 0, 0), color=(0, 255, 0), label="car")
    corners = np.array(plain["corners"])
    assert corners.shape == (8, 3) and corners.min(axis=0).tolist() == [0, 0, 0] and corners.max(axis=0).tolist() == [
        2, 4, 6]
    half_turn_z = np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)  # 90 degrees about z: x extent becomes y extent
    turned = np.array(tracker.box3d(center=(0, 0, 0), size=(2, 4, 6), orientation=half_turn_z,
                                    color=(1, 0, 0))["corners"])
    assert np.allclose(np.abs(turned).max(axis=0), [2, 1, 3])
    run.log({"scene": tracker.Object3D.from_point_cloud(np.zeros((3, 3)), [plain])})
    [rec] = records(run, "object3d")
    assert decode_points(blob(run, rec.data["sha256"]))["boxes"][0]["label"] == "car"
    with pytest.raises(tracker.SchemaError, match="non-zero orientation"):
        tracker.box3d(center=(0, 0, 0), size=(1, 1, 1), orientation=(0, 0, 0, 0), color=(0, 0, 0))
