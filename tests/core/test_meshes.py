"""Mesh readers against a real G1 STL and small hand-written files."""
from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pytest

from core.model.meshes import MeshError, load_mesh, mesh_bounds

ROOT = Path(__file__).resolve().parents[2]
G1_MESHES = ROOT / "data" / "robots" / "g1" / "meshes"


def _triangles(verts: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Corner coordinates per face, independent of vertex numbering."""
    return verts[faces]


def test_g1_binary_stl():
    path = G1_MESHES / "left_knee_link.STL"
    data = path.read_bytes()
    count = struct.unpack_from("<I", data, 80)[0]
    verts, faces = load_mesh(path)
    assert verts.dtype == np.float64 and faces.dtype == np.int64
    assert faces.shape == (count, 3)
    assert faces.min() >= 0 and faces.max() < len(verts)
    assert len(verts) < 3 * count / 2  # shared corners were merged
    assert np.all(np.abs(verts) < 0.5)  # metres, a knee link is well under half a metre
    assert np.ptp(verts, axis=0).max() > 0.05
    first = np.array(struct.unpack_from("<9f", data, 84 + 12), dtype=np.float32)
    np.testing.assert_array_equal(_triangles(verts, faces)[0], first.reshape(3, 3))
    last = np.array(struct.unpack_from("<9f", data, 84 + 50 * (count - 1) + 12))
    np.testing.assert_array_equal(_triangles(verts, faces)[-1],
                                  last.astype(np.float32).reshape(3, 3))


def test_binary_stl_starting_with_solid_is_fast():
    """Several G1 files are binary but their header begins with 'solid'."""
    solid = [p for p in sorted(G1_MESHES.glob("*.STL")) if p.read_bytes()[:5] == b"solid"]
    assert solid
    path = max(solid, key=lambda p: p.stat().st_size)
    count = struct.unpack_from("<I", path.read_bytes(), 80)[0]
    start = time.perf_counter()
    verts, faces = load_mesh(path)
    assert time.perf_counter() - start < 1.0
    assert faces.shape == (count, 3)


def test_written_binary_stl_with_solid_header(tmp_path):
    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32)
    record = struct.pack("<3f", 0, 0, 1) + tri.tobytes() + b"\0\0"
    path = tmp_path / "solid.stl"
    path.write_bytes(b"solid fake header".ljust(80, b" ") + struct.pack("<I", 2)
                     + record + record)
    verts, faces = load_mesh(path)
    assert len(verts) == 3 and faces.shape == (2, 3)
    np.testing.assert_array_equal(_triangles(verts, faces), [tri, tri])


def test_truncated_binary_stl(tmp_path):
    path = tmp_path / "broken.STL"
    path.write_bytes((G1_MESHES / "left_knee_link.STL").read_bytes()[:-30])
    with pytest.raises(MeshError, match="broken.STL.*truncated"):
        load_mesh(path)
    path.write_bytes(b"\0" * 40)
    with pytest.raises(MeshError, match="broken.STL"):
        load_mesh(path)


ASCII_STL = """solid square
  facet normal 0 0 1
    outer loop
      vertex 0 0 0
      vertex 1 0 0
      vertex 1 1 0
    endloop
  endfacet
  FACET NORMAL 0 0 1
    OUTER LOOP
      VERTEX 0 0 0
      VERTEX 1 1 0
      VERTEX -2.5e-1 1 0.0
    ENDLOOP
  ENDFACET
endsolid square
"""


def test_ascii_stl(tmp_path):
    path = tmp_path / "square.stl"
    path.write_text(ASCII_STL)
    verts, faces = load_mesh(path)
    assert verts.shape == (4, 3) and faces.shape == (2, 3)
    np.testing.assert_array_equal(_triangles(verts, faces), [
        [[0, 0, 0], [1, 0, 0], [1, 1, 0]],
        [[0, 0, 0], [1, 1, 0], [-0.25, 1, 0]]])


def test_ascii_stl_bad_number(tmp_path):
    path = tmp_path / "bad.stl"
    path.write_text(ASCII_STL.replace("vertex 1 0 0", "vertex 1 x 0"))
    with pytest.raises(MeshError, match="bad.stl"):
        load_mesh(path)


OBJ = """# quad and triangle
o thing
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0 1.0
vt 0 0
vn 0 0 1
f 1/1/1 2/1/1 3/1/1 4/1/1
v 0.5 0.5 2
f -5//1 -4//1 -1//1
f 2/1 3/1 5/1
"""


def test_obj_quads_and_index_forms(tmp_path):
    path = tmp_path / "thing.obj"
    path.write_text(OBJ)
    verts, faces = load_mesh(path)
    np.testing.assert_array_equal(verts, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                                          [0.5, 0.5, 2]])
    np.testing.assert_array_equal(faces, [[0, 1, 2], [0, 2, 3], [0, 1, 4], [1, 2, 4]])


def test_obj_bad_index(tmp_path):
    path = tmp_path / "bad.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n")
    with pytest.raises(MeshError, match=r"bad.obj, line 4"):
        load_mesh(path)


DAE = """<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="centimeter" meter="0.01"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries>
    <geometry id="part-mesh" name="part">
      <mesh>
        <source id="part-pos">
          <float_array id="part-pos-array" count="15">0 0 0 100 0 0 100 100 0 0 100 0 50 50 200</float_array>
          <technique_common>
            <accessor source="#part-pos-array" count="5" stride="3">
              <param name="X" type="float"/><param name="Y" type="float"/>
              <param name="Z" type="float"/>
            </accessor>
          </technique_common>
        </source>
        <source id="part-nrm">
          <float_array id="part-nrm-array" count="3">0 0 1</float_array>
          <technique_common><accessor source="#part-nrm-array" count="1" stride="3"/>
          </technique_common>
        </source>
        <vertices id="part-verts"><input semantic="POSITION" source="#part-pos"/></vertices>
        <polylist count="2">
          <input semantic="VERTEX" source="#part-verts" offset="0"/>
          <input semantic="NORMAL" source="#part-nrm" offset="1"/>
          <vcount>4 3</vcount>
          <p>0 0 1 0 2 0 3 0  1 0 2 0 4 0</p>
        </polylist>
        <triangles count="1">
          <input semantic="NORMAL" source="#part-nrm" offset="0"/>
          <input semantic="VERTEX" source="#part-verts" offset="1"/>
          <p>0 3 0 2 0 4</p>
        </triangles>
      </mesh>
    </geometry>
    <geometry id="other"><mesh><source id="x"><float_array>9 9 9</float_array></source>
    </mesh></geometry>
  </library_geometries>
</COLLADA>
"""


def test_dae_polylist_triangles_and_unit(tmp_path):
    path = tmp_path / "part.dae"
    path.write_text(DAE)
    verts, faces = load_mesh(path)
    np.testing.assert_allclose(verts, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                                       [0.5, 0.5, 2]], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(faces, [[0, 1, 2], [0, 2, 3], [1, 2, 4], [3, 2, 4]])


def test_dae_polygons(tmp_path):
    text = DAE.replace("""<vcount>4 3</vcount>
          <p>0 0 1 0 2 0 3 0  1 0 2 0 4 0</p>""", "<p>0 0 1 0 2 0 3 0</p><p>1 0 2 0 4 0</p>")
    text = text.replace("polylist", "polygons").replace(' meter="0.01"', "")
    path = tmp_path / "poly.DAE"
    path.write_text(text)
    verts, faces = load_mesh(path)
    assert verts[4, 2] == 200.0  # no <unit meter>: file units kept
    np.testing.assert_array_equal(faces, [[0, 1, 2], [0, 2, 3], [1, 2, 4], [3, 2, 4]])


def test_dae_errors_name_file(tmp_path):
    path = tmp_path / "broken.dae"
    path.write_text(DAE.replace("<vcount>4 3</vcount>", "<vcount>4 4</vcount>"))
    with pytest.raises(MeshError, match="broken.dae"):
        load_mesh(path)
    path.write_text(DAE[: len(DAE) // 2])
    with pytest.raises(MeshError, match="broken.dae.*XML"):
        load_mesh(path)


def test_missing_and_unsupported_files(tmp_path):
    with pytest.raises(MeshError, match="nothere.stl"):
        load_mesh(tmp_path / "nothere.stl")
    other = tmp_path / "mesh.ply"
    other.write_text("ply\n")
    with pytest.raises(MeshError, match="mesh.ply.*unsupported"):
        load_mesh(other)


SCENE = """  <library_visual_scenes><visual_scene id="scene">
    <node id="a"><translate>0 0 10</translate><scale>0.5 0.5 0.5</scale>
      <instance_geometry url="#part-mesh"/>
      <node id="b"><rotate>0 0 1 90</rotate><instance_geometry url="#part-mesh"/></node>
    </node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#scene"/></scene>
</COLLADA>"""


def test_dae_scene_nodes_place_and_scale_each_instance(tmp_path):
    """Exporters scale parts in their nodes (Romeo's meshes: centimetres under a 0.01 scale);
    read without the nodes the feet came out 100 times too large and were never planted."""
    path = tmp_path / "placed.dae"
    path.write_text(DAE.replace("</COLLADA>", SCENE))
    verts, faces = load_mesh(path)
    plain = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 2]])
    first = 0.5 * plain + [0, 0, 0.1]  # 10 cm up, then half size
    second = 0.5 * plain @ np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]).T + [0, 0, 0.1]
    np.testing.assert_allclose(verts, np.concatenate([first, second]), atol=1e-12)
    np.testing.assert_array_equal(faces[4:], faces[:4] + 5)


def test_mesh_bounds_are_the_box_of_the_read_vertices(tmp_path):
    """mesh_bounds reads a binary STL's corners as stored (no merging) and any other file through
    load_mesh: the same box as the vertices load_mesh gives, on every G1 mesh and each format."""
    for path in sorted(G1_MESHES.glob("*.STL")):
        verts, _ = load_mesh(path)
        np.testing.assert_array_equal(mesh_bounds(path), [verts.min(axis=0), verts.max(axis=0)])
    (tmp_path / "square.stl").write_text(ASCII_STL)
    (tmp_path / "thing.obj").write_text(OBJ)
    np.testing.assert_array_equal(mesh_bounds(tmp_path / "square.stl"), [[-0.25, 0, 0], [1, 1, 0]])
    np.testing.assert_array_equal(mesh_bounds(tmp_path / "thing.obj"), [[0, 0, 0], [1, 1, 2]])
    bad = tmp_path / "nan.stl"
    tri = np.array([[0, 0, 0], [np.nan, 0, 0], [0, 1, 0]], dtype=np.float32)
    bad.write_bytes(b"\0" * 80 + struct.pack("<I", 1) + struct.pack("<3f", 0, 0, 1) + tri.tobytes() + b"\0\0")
    with pytest.raises(MeshError, match="non-finite"):
        mesh_bounds(bad)
    with pytest.raises(MeshError):
        mesh_bounds(tmp_path / "missing.stl")
