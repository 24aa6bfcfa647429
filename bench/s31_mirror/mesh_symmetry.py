"""How far each G1 left body's mesh, mirrored (y -> -y in its link frame), lies from its right partner's: the
Hausdorff distance (mm) between their vertices, and whether the vertex lists match.

    .venv/bin/python bench/s31_mirror/mesh_symmetry.py
"""
import sys; from pathlib import Path; sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from scipy.spatial import cKDTree
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.collision.proxies import body_mesh
tree = KinematicTree(parse_urdf(str(Path(__file__).resolve().parents[2]) + "/data/robots/g1/unitree_g1_29dof.urdf"))
M = np.array([1, -1, 1.0])
for i, n in enumerate(tree.link_names):
    if not n.startswith("left"): continue
    j = tree.link_index(n.replace("left", "right"))
    a, b = body_mesh(tree, i), body_mesh(tree, j)
    if a is None or b is None: print(n, "none"); continue
    pa, pb = a.points * M, b.points
    d1 = cKDTree(pb).query(pa)[0].max(); d2 = cKDTree(pa).query(pb)[0].max()
    print(f"{n:28s} verts {len(pa)} {len(pb)} tris {len(a.triangles)} {len(b.triangles)} hausdorff {1000*max(d1,d2):.3f} mm", 
          "same order" if len(pa)==len(pb) and np.abs(pa-pb).max()<1e-6 else "")
