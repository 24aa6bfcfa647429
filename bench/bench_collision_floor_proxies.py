#!/usr/bin/env python3
"""How much of the G1's limb floor is the proxies' fat: bench_collision_floor's least error per
close frame, with the capsules as now, tighter capsules, or the meshes' convex hulls.

bench_collision_floor.py solves each close frame of an arm alone (SLSQP) for the least limb
direction error with every checked pair the margin apart, on the capsules. Here the same, with:

- `--proxy capsules`: the capsules as fitted now (the floor of bench_collision_floor.py);
- `--proxy tight`: capsules fitted with more parts and capsules per body (`--parts`,
  `--part-capsules`, `--split-cost`, `--capsule-cost`, `--split-tighter`) and radii `--shrink` metres thinner
  (the issue's rule lets a proxy miss up to 2 mm of mesh); the bake itself runs on them (the
  disk cache is off, so the usual fit is neither read nor overwritten);
- `--proxy hulls`: each mesh's convex hull (one per link of a body; a body of spheres keeps
  its capsules), exact convex distances (GJK), overlap along the hulls' face normals inside;
- `--proxy smooth`: the G1's trunk (pelvis, torso) as smooth proxies (core.collision.smooth,
  ROBOT_RETARGET_SMOOTH_TRUNK=1), the other bodies as capsules; the bake runs on them (disk cache
  off);
- `--proxy part-hulls`: the hulls of each body's mesh split into `--parts` compact parts
  (core.collision.parts' k-means): a convex decomposition, what no capsule fitted to those
  parts can beat.

For hulls the bake (and which pairs are checked) is the capsules' own: the bake's answer clears
the capsules, which hold the meshes, so it is a feasible start; only frames where the hulls come
within the margin are solved and counted. Frames where a pair is further than `SKIP_M` beyond
the margin by capsules keep the capsule distance for it (a lower bound that does not bind).

    .venv/bin/python bench/bench_collision_floor_proxies.py --proxy hulls [--stride 10] [--clips walk,hop]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np
from scipy.spatial import ConvexHull

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from bench_collision_floor import ArmFrames, arm_figures, separation_inputs  # noqa: E402
from core.collision import parts as parts_module  # noqa: E402
from core.collision import fit as fit_module  # noqa: E402
from core.feet.geometry import body_points, rigid_links  # noqa: E402
from core.model.kinematics import REVOLUTE, KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map  # noqa: E402

SKIP_M = 0.03  # a pair this far beyond the margin by capsules is not looked at on its hulls


class Piece:
    """A convex piece of a body in its link's frame: vertices (K, 3), a sample of its face normals (H, 3)."""

    def __init__(self, points: np.ndarray):
        hull = ConvexHull(points)
        self.points = points[hull.vertices]
        step = max(1, len(hull.equations) // SAT_NORMALS)
        self.normals = hull.equations[::step, :3]  # a sample: the overlap along them bounds the depth above
        self.centre = self.points.mean(axis=0)
        self.reach = float(np.linalg.norm(self.points - self.centre, axis=1).max())


_SUBSETS = {k: [s for n in range(1, k + 1) for s in combinations(range(k), n)] for k in range(1, 5)}


def simplex_closest(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights (k,) of the point of conv(points) (k <= 4, 3) nearest the origin, zero but on the
    points that carry it: each face's affine nearest point (all faces' small systems solved at
    once), the nearest whose weights are all >= 0."""
    faces = _SUBSETS[len(points)]
    system = np.zeros((len(faces), 5, 5))
    gram = points @ points.T
    for k, rows in enumerate(faces):
        n = len(rows)
        system[k, :n, :n] = gram[np.ix_(rows, rows)]
        system[k, :n, n] = system[k, n, :n] = 1.0
        system[k, n + 1:, n + 1:] = np.eye(4 - n)
    right = np.zeros((len(faces), 5))
    right[np.arange(len(faces)), [len(rows) for rows in faces]] = 1.0
    solved = np.einsum("fij,fj->fi", np.linalg.pinv(system), right)
    best, out = np.inf, None
    for k, rows in enumerate(faces):
        weights = solved[k, :len(rows)]
        if (weights < -1e-12).any():
            continue
        point = weights @ points[list(rows)]
        if point @ point < best - 1e-18:
            best, out = point @ point, np.zeros(len(points))
            out[list(rows)] = weights
    return out, out > 1e-12


def hull_distance(a: np.ndarray, b: np.ndarray, tolerance: float = 1e-6,
                  start: np.ndarray | None = None) -> tuple[float, np.ndarray, np.ndarray] | None:
    """(distance (m), nearest point on a, on b) between the convex hulls of points a (Ka, 3) and
    b (Kb, 3) by GJK: the origin's distance from their Minkowski difference, from support
    points, each simplex's nearest point over its faces; None when they overlap. start: a
    direction from b toward a to begin from (the last answer's: a solver's next look is near)."""
    ia, ib = (0, 0) if start is None else (int(np.argmax(a @ -start)), int(np.argmax(b @ start)))
    corners = np.array([[ia, ib]])
    v, weights = a[ia] - b[ib], np.ones(1)
    for _ in range(100):
        ia, ib = int(np.argmax(a @ -v)), int(np.argmax(b @ v))
        w = a[ia] - b[ib]
        if v @ v - v @ w <= tolerance * max(v @ v, 1e-12) or ((corners == (ia, ib)).all(axis=1)).any():
            break
        corners = np.vstack([corners, [ia, ib]])
        weights, keep = simplex_closest(a[corners[:, 0]] - b[corners[:, 1]])
        corners, weights = corners[keep], weights[keep] / weights[keep].sum()
        v = weights @ (a[corners[:, 0]] - b[corners[:, 1]])
        if len(corners) == 4 or v @ v < 1e-16:
            return None
    return float(np.sqrt(v @ v)), weights @ a[corners[:, 0]], weights @ b[corners[:, 1]]


def overlap(a: np.ndarray, na: np.ndarray, b: np.ndarray, nb: np.ndarray) -> tuple[float, np.ndarray, int, int]:
    """Two overlapping hulls (vertices a, b, face normals na, nb, world): the least of their face
    normals' overlaps (an upper bound of the penetration depth, m), as m . (a[i] - b[j]) with
    unit m: the value's -1 times that, a witness on each."""
    normals = np.vstack([na, nb])
    pa, pb = a @ normals.T, b @ normals.T
    up, down = pa.max(axis=0) - pb.min(axis=0), pb.max(axis=0) - pa.min(axis=0)
    k = int(np.argmin(np.minimum(up, down)))
    if up[k] <= down[k]:  # a below b along the normal: apart is a down, b up
        return float(up[k]), -normals[k], int(np.argmax(pa[:, k])), int(np.argmin(pb[:, k]))
    return float(down[k]), normals[k], int(np.argmin(pa[:, k])), int(np.argmax(pb[:, k]))


SAT_NORMALS = 300  # face normals per piece the overlap inside is measured along, at most
_LAST: dict = {}  # each piece pair's last direction, GJK's next start


def signed_distance(pieces_a, pose_a, pieces_b, pose_b, within: float, depth: bool = True) -> tuple:
    """Least signed distance between two bodies' pieces posed at (4, 4), with the direction it
    is measured along (3,) and its witness points on a and on b (world; None where the bound
    stands); pieces whose bounding spheres are further than `within` apart count as that bound.
    Overlapping pieces: minus their overlap along face normals (depth), or 0 (not depth)."""
    best = (np.inf, None, None, None)
    for pa in pieces_a:
        ca = pose_a[:3, :3] @ pa.centre + pose_a[:3, 3]
        for pb in pieces_b:
            cb = pose_b[:3, :3] @ pb.centre + pose_b[:3, 3]
            bound = float(np.linalg.norm(ca - cb)) - pa.reach - pb.reach
            if bound > within or bound >= best[0]:
                best = min(best, (bound, None, None, None), key=lambda item: item[0])
                continue
            wa = pa.points @ pose_a[:3, :3].T + pose_a[:3, 3]
            wb = pb.points @ pose_b[:3, :3].T + pose_b[:3, 3]
            key = (id(pa), id(pb))
            found = hull_distance(wa, wb, start=_LAST.get(key))
            if found is not None:
                d, near_a, near_b = found
                _LAST[key] = near_a - near_b
                here = (d, (near_a - near_b) / max(d, 1e-12), near_a, near_b)
            elif not depth:
                return 0.0, None, None, None
            else:
                inside, m, i, j = overlap(wa, pa.normals @ pose_a[:3, :3].T, wb, pb.normals @ pose_b[:3, :3].T)
                here = (-inside, m, wa[i], wb[j])
            best = min(best, here, key=lambda item: item[0])
    return best


def mesh_hulls(tree, model) -> dict:
    """Per body: one Piece per mesh (each link's hull), None for a body of spheres."""
    out = {}
    for body, link in enumerate(model.body_links):
        pieces = []
        for i in rigid_links(tree, link):
            found = body_points(tree, link, [i])
            if found.radius.any():
                pieces = None
                break
            if len(found.points) > 4 and found.points.any():
                pieces.append(Piece(found.points))
        out[body] = pieces or None
    return out


def part_hulls(tree, model, count: int) -> dict:
    """Per body: the hulls of its mesh split into `count` parts (core.collision.parts' split)."""
    from core.collision.proxies import body_mesh
    out = {}
    for body, link in enumerate(model.body_links):
        mesh = body_mesh(tree, link)
        if mesh is None or mesh.radii.any():
            out[body] = None
            continue
        splits = parts_module._splits(mesh)
        labels = splits[min(count, len(splits) + 1) - 2] if count > 1 and splits else np.zeros(len(mesh.triangles), int)
        pieces = []
        for part in np.unique(labels[:len(mesh.triangles)]):
            rows = np.unique(mesh.triangles[labels[:len(mesh.triangles)] == part].ravel())
            if len(rows) > 4:
                pieces.append(Piece(mesh.points[rows]))
        out[body] = pieces
    return out


class HullArm(ArmFrames):
    """An arm's frames with every checked pair its joints move measured on convex pieces."""

    def __init__(self, motion, mapping, seen: dict, side: str, pieces: dict):
        super().__init__(motion, mapping, seen, side)
        model, term = self.term.model, self.term
        self.pieces = pieces
        body_pairs, owner = np.unique(model.capsule_body[term.capsules].reshape(-1, 2), axis=0, return_inverse=True)
        self.body_pairs, self.owner = body_pairs, owner.reshape(-1)
        self.order = np.argsort(self.owner, kind="stable")
        self.starts = np.searchsorted(self.owner[self.order], np.arange(len(body_pairs)))
        tree = self.tree
        column_of = {int(c): k for k, c in enumerate(self.cols)}
        self.joints = [(i, column_of[int(tree.qindex[i])]) for i in range(len(tree.link_names))
                       if int(tree.qindex[i]) in column_of]
        assert all(tree.kind[i] == REVOLUTE for i, _ in self.joints), "a slide: the point Jacobian turns only"
        bodies = [int(model.body_links[b]) for b in np.unique(body_pairs)]
        self.posed = sorted(set(bodies) | {i for i, _ in self.joints})
        self.above = {link: self._ancestors(link) for link in bodies}
        capsule_close, self.depth = self.close, False  # whether a frame is close needs no depth
        self.close = np.array([f for f in capsule_close
                               if self.clearance(self.q[f, self.cols], int(f)).min() < 0.0], dtype=int)
        self.capsule_close, self.depth = capsule_close, True

    def _ancestors(self, link: int) -> set:
        out = set()
        while link >= 0:
            out.add(link)
            link = int(self.tree.parent[link])
        return out

    def clearance(self, x: np.ndarray, f: int) -> np.ndarray:
        """Each checked body pair's distance beyond the margin (m) on frame f, on the pieces."""
        return self._look(x, f)[0]

    def clearance_jacobian(self, x: np.ndarray, f: int) -> np.ndarray:
        """(P, V) the clearances' gradient over the group's joints: along each pair's direction,
        each joint's turn of its witness points (a pair measured by its capsules' bound: 0)."""
        return self._look(x, f)[1]

    def _look(self, x: np.ndarray, f: int) -> tuple[np.ndarray, np.ndarray]:
        key = (f, x.tobytes(), self.depth)
        if getattr(self, "_looked", (None,))[0] == key:
            return self._looked[1]
        q = self.pose(x, f)
        capsules = self.term.distance(q[None], self.root[f:f + 1])[0][self.order]
        by_body = np.minimum.reduceat(capsules, self.starts) - self.term.margin
        poses = {k: v[0] for k, v in self.tree.poses(q[None], self.root[f:f + 1], self.posed).items()}
        model, out = self.term.model, by_body.copy()
        jacobian = np.zeros((len(out), len(self.cols)))
        for p, (a, b) in enumerate(self.body_pairs):
            if by_body[p] > SKIP_M or self.pieces.get(a) is None or self.pieces.get(b) is None:
                continue
            la, lb = model.body_links[a], model.body_links[b]
            d, m, near_a, near_b = signed_distance(self.pieces[a], poses[la], self.pieces[b], poses[lb],
                                                   self.term.margin + SKIP_M, self.depth)
            out[p] = d - self.term.margin
            if m is not None:
                jacobian[p] = m @ (self._point_jacobian(poses, la, near_a) - self._point_jacobian(poses, lb, near_b))
        self._looked = (key, (out, jacobian))
        return out, jacobian

    def _point_jacobian(self, poses: dict, link: int, point: np.ndarray) -> np.ndarray:
        """(3, V) how a point fixed to `link` moves with the group's joints (revolute: axis x lever)."""
        out = np.zeros((3, len(self.cols)))
        for joint, column in self.joints:
            if joint in self.above[link]:
                axis = poses[joint][:3, :3] @ self.tree.axes[joint]
                out[:, column] += self.tree.qscale[joint] * np.cross(axis, point - poses[joint][:3, 3])
        return out

    def constraint(self, f: int) -> dict:
        """The constraints' gradient analytic: finite differences of hull distances cost seven looks each."""
        return {"type": "ineq", "fun": self.clearance, "jac": self.clearance_jacobian, "args": (f,)}


def mesh_vertices(tree, link: int) -> np.ndarray:
    """Every vertex (N, 3) of a body's meshes in its link's frame (as tests/core/test_collision.py reads them)."""
    from core.model.meshes import load_mesh
    from core.model.mesh_paths import resolve_mesh_path
    zero, out = tree.zero_pose(), [np.zeros((0, 3))]
    for i in rigid_links(tree, link):
        urdf = tree.robot.links[tree.link_names[i]]
        for geom in urdf.collisions or urdf.visuals:
            if geom.kind == "mesh":
                verts, _ = load_mesh(resolve_mesh_path(geom.filename, tree.robot.source_path))
                local = (verts * np.asarray(geom.scale)) @ geom.origin[:3, :3].T + geom.origin[:3, 3]
                offset = np.linalg.inv(zero[link]) @ zero[i]
                out.append(local @ offset[:3, :3].T + offset[:3, 3])
    return np.concatenate(out)


def rule_check(tree, postures: int = 40) -> tuple[float, float, int]:
    """The issue's 2 mm rule on the robot's proxies: the farthest mesh vertex outside its body's
    capsules (m), and over random postures (seed 5) the most a checked pair's proxy distance
    exceeds its brute-force vertex distance where the meshes come within 5 cm (m), pairs seen."""
    from core.collision import collision_pairs
    from core.collision.distance import segment_closest
    from core.collision.pairs import pair_distances
    pairs = collision_pairs(tree)
    model = pairs.model
    verts = {b: mesh_vertices(tree, link) for b, link in enumerate(model.body_links)}
    outside = 0.0
    for body, pts in verts.items():
        if not len(pts):
            continue
        gap = np.full(len(pts), np.inf)
        for c in np.flatnonzero(model.capsule_body == body):
            a, b = model.ends[c]
            near, _ = segment_closest(np.broadcast_to(a, pts.shape), np.broadcast_to(b, pts.shape), pts, pts)
            gap = np.minimum(gap, np.linalg.norm(pts - near, axis=1) - model.radius[c])
        outside = max(outside, float(gap.max()))
    rng = np.random.default_rng(5)
    q = tree.lower + rng.random((postures, tree.dof)) * (tree.upper - tree.lower)
    proxy = pairs.body_distance(pair_distances(tree, pairs, q, None))
    thin = {b: v[::7] for b, v in verts.items()}
    worst, seen = -np.inf, 0
    for f in range(len(q)):
        poses = tree.forward(q[f:f + 1])[0]
        for p, (a, b) in enumerate(pairs.bodies):
            if proxy[f, p] > 0.05 or not len(thin[a]) or not len(thin[b]):
                continue
            wa = thin[a] @ poses[model.body_links[a], :3, :3].T + poses[model.body_links[a], :3, 3]
            wb = thin[b] @ poses[model.body_links[b], :3, :3].T + poses[model.body_links[b], :3, 3]
            worst = max(worst, float(proxy[f, p] - np.sqrt(((wa[:, None] - wb[None]) ** 2).sum(-1).min())))
            seen += 1
    return outside, worst, seen


def tighten(args) -> None:
    """The capsule fit's parameters for --proxy tight, and the radii shrunk after the fit."""
    os.environ["ROBOT_RETARGET_CACHE"] = ""  # neither read nor overwrite the usual fit
    parts_module.MAX_PARTS = args.parts
    parts_module.PART_CAPSULES = args.part_capsules
    parts_module.SPLIT_CAPSULE_COST_M = args.split_cost
    parts_module.SPLIT_TIGHTER = args.split_tighter
    fit_module.CAPSULE_COST_M = args.capsule_cost
    if args.shrink:
        import core.collision.proxies as proxies
        fit = proxies.fit_model

        def thinner(tree):
            model = fit(tree)
            model.radius = np.maximum(model.radius - args.shrink, 1e-4)
            return model
        proxies.fit_model = thinner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proxy", choices=("capsules", "tight", "hulls", "part-hulls", "smooth"), default="capsules")
    parser.add_argument("--stride", type=int, default=10)
    parser.add_argument("--reach", type=float, default=0.5)
    parser.add_argument("--clips", default="walk,hop")
    parser.add_argument("--parts", type=int, default=6)
    parser.add_argument("--part-capsules", type=int, default=4)
    parser.add_argument("--split-cost", type=float, default=0.0005)
    parser.add_argument("--capsule-cost", type=float, default=0.0002)
    parser.add_argument("--split-tighter", type=float, default=0.5, help="1.01: the least volume's split always")
    parser.add_argument("--shrink", type=float, default=0.0)
    parser.add_argument("--rule", action="store_true", help="check the 2 mm rule on the proxies and stop")
    args = parser.parse_args()
    if args.proxy == "tight":
        tighten(args)
    if args.proxy == "smooth":
        from core.collision import hulls, store
        hulls.SMOOTH_TRUNK = True
        os.environ[store.CACHE_ENV] = ""
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    from core.collision import collision_model
    model = collision_model(tree)
    print(f"proxy {args.proxy}: {len(model.radius)} capsules", flush=True)
    if args.rule:
        outside, worst, seen = rule_check(tree)
        print(f"  farthest mesh vertex outside its capsules {1e3 * outside:.2f} mm; proxy over brute-force "
              f"vertex distance at most {1e3 * worst:+.2f} mm ({seen} close pairs; the rule: 2 mm)")
        return
    pieces = None
    if args.proxy == "hulls":
        pieces = mesh_hulls(tree, model)
    elif args.proxy == "part-hulls":
        pieces = part_hulls(tree, model, args.parts)
    for name in args.clips.split(","):
        motion = clips.load({"walk": clips.WALK, "hop": clips.HOP}[name])
        mapping = auto_map(motion, tree)
        seen = separation_inputs(motion, tree, mapping)
        totals = np.zeros(2)
        for side in ("left", "right"):
            started = time.process_time()
            arm = HullArm(motion, mapping, seen, side, pieces) if pieces is not None \
                else ArmFrames(motion, mapping, seen, side)
            least, bake, solved = arm_figures(arm, seen["after"], args.stride, args.reach) \
                if len(arm.close) else (0.0, 0.0, 0)
            share = len(arm.close) / len(arm.q)
            totals += np.array([least, bake]) * share / 4.0
            extra = f" (capsules {len(arm.capsule_close)})" if pieces is not None else ""
            print(f"  {name:<5} {side:<5} arm: {len(arm.close)} close frames{extra}, {solved} of "
                  f"{len(arm.close[::args.stride])} sampled solved: {least:+.2f} deg on them alone "
                  f"(the bake's {bake:+.2f}); over all frames {least * share:+.2f} ({bake * share:+.2f}) "
                  f"({time.process_time() - started:.0f} s)", flush=True)
        print(f"  {name:<5} floor over all frames and the four limbs: {totals[0]:+.2f} deg "
              f"(the bake's {totals[1]:+.2f}), proxy {args.proxy}", flush=True)


if __name__ == "__main__":
    main()
