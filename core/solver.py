"""Batched Levenberg-Marquardt for one chain, all frames at once.

Every frame is its own small least-squares problem (a handful of joints);
solving them as stacked arrays with analytic Jacobians is what makes the
retarget run thousands of frames per second in numpy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .chains import RobotChain
from .kinematics import PRISMATIC, REVOLUTE, KinematicTree
from .transforms import axis_angle_to_matrix


@dataclass
class ChainKinematics:
    """Precomputed index arrays to evaluate a chain's reference points quickly."""

    chain: RobotChain
    point_link: np.ndarray  # (M,) link per reference point, all paths stacked
    point_local: np.ndarray  # (M, 3)
    columns: np.ndarray  # (V,) q columns of the chain's variables
    mask: np.ndarray  # (M, V) True where variable v moves point i
    path_slices: list[slice]

    @classmethod
    def build(cls, tree: KinematicTree, chain: RobotChain) -> "ChainKinematics":
        point_link = np.concatenate([p.point_link for p in chain.paths])
        point_local = np.concatenate([p.point_local for p in chain.paths])
        columns = np.array([tree.qindex[v] for v in chain.variables], dtype=int)
        mask = np.zeros((len(point_link), len(chain.variables)), dtype=bool)
        for i, link in enumerate(point_link):
            ancestors = set()
            while link >= 0:
                ancestors.add(int(link))
                link = tree.parent[link]
            mask[i] = [v in ancestors for v in chain.variables]
        slices, start = [], 0
        for p in chain.paths:
            slices.append(slice(start, start + len(p.point_link)))
            start += len(p.point_link)
        return cls(chain, point_link, point_local, columns, mask, slices)

    def evaluate(self, tree: KinematicTree, anchor: np.ndarray, q: np.ndarray, jacobian: bool):
        """Reference points (F, M, 3) and optionally their Jacobian (F, M, 3, V).

        anchor: (F, 4, 4) world pose of the chain's anchor link (root pose if none).
        """
        frames = {}
        axes, origins = {}, {}
        for link in self.chain.links:
            parent = int(tree.parent[link])
            if parent in frames:
                rot, pos = frames[parent]
            else:
                rot, pos = anchor[:, :3, :3], anchor[:, :3, 3]
            if parent < 0:  # the chain starts at the root: the anchor is the root pose
                frames[link] = (rot, pos)
                continue
            origin = tree.origins[link]
            pos = pos + rot @ origin[:3, 3]
            rot = rot @ origin[:3, :3]
            kind = tree.kind[link]
            if kind != 0:
                value = tree.joint_value(q, link)
                axis_w = rot @ tree.axes[link]
                axes[link], origins[link] = axis_w, pos
                if kind == REVOLUTE:
                    rot = rot @ axis_angle_to_matrix(tree.axes[link], value)
                elif kind == PRISMATIC:
                    pos = pos + axis_w * value[:, None]
            frames[link] = (rot, pos)
        rots = np.stack([frames[int(k)][0] for k in self.point_link], axis=1)  # (F, M, 3, 3)
        poss = np.stack([frames[int(k)][1] for k in self.point_link], axis=1)
        points = np.einsum("fmij,mj->fmi", rots, self.point_local) + poss
        if not jacobian:
            return points, None
        jac = np.zeros(points.shape + (len(self.columns),))
        for v, link in enumerate(self.chain.variables):
            axis_w = axes[link][:, None, :]
            if tree.kind[link] == REVOLUTE:
                col = np.cross(axis_w, points - origins[link][:, None, :])
            else:
                col = np.broadcast_to(axis_w, points.shape)
            jac[..., v] = col * self.mask[:, v][None, :, None]
        return points, jac


def solve_chain(tree: KinematicTree, kin: ChainKinematics, anchor: np.ndarray, q: np.ndarray,
                targets: np.ndarray, weights: np.ndarray, *, iterations: int = 12,
                smoothness: float = 0.02, objective: str = "l2") -> np.ndarray:
    """Move the chain's joint columns of q (F, n) so its points reach targets (F, M, 3).

    weights (M,) already include 1/length normalisation squared. Joint limits are
    hard bounds (projected steps). `smoothness` pulls each frame toward the
    previous frame's solution, which picks one answer where the chain is
    redundant and keeps neighbouring frames from flipping between equivalent ones.
    Returns the final (F, M, 3) robot points.
    """
    cols = kin.columns
    if len(cols) == 0:
        return kin.evaluate(tree, anchor, q, False)[0]
    lower, upper = tree.lower[cols], tree.upper[cols]
    x = np.clip(q[:, cols], lower, upper)
    nframes, nvar = x.shape
    lam = np.full(nframes, 1e-3)
    eye = np.eye(nvar)

    def residual_cost(xv, sw):
        q[:, cols] = xv
        pts, jac = kin.evaluate(tree, anchor, q, True)
        res = (pts - targets) * sw[..., None]
        ref = np.concatenate([xv[:1], xv[:-1]], axis=0)
        cost = (res ** 2).sum((1, 2)) + smoothness * ((xv - ref) ** 2).sum(1)
        return pts, jac, res, cost

    sw = np.broadcast_to(np.sqrt(weights), targets.shape[:2])
    pts, jac, res, cost = residual_cost(x, sw)
    for _ in range(iterations):
        if objective == "l1":  # iteratively reweighted least squares
            dist = np.linalg.norm(pts - targets, axis=-1)
            sw = np.sqrt(weights / np.maximum(dist, 1e-3))
            res = (pts - targets) * sw[..., None]
        jw = jac * sw[..., None, None]
        jw = jw.reshape(nframes, -1, nvar)
        ref = np.concatenate([x[:1], x[:-1]], axis=0)
        hess = np.einsum("fki,fkj->fij", jw, jw)
        grad = np.einsum("fki,fk->fi", jw, res.reshape(nframes, -1)) + smoothness * (x - ref)
        diag = np.einsum("fii->fi", hess)
        system = hess + smoothness * eye + lam[:, None, None] * (eye * (diag[:, None, :] + 1e-6))
        step = -np.linalg.solve(system, grad[..., None])[..., 0]
        trial = np.clip(x + step, lower, upper)
        t_pts, t_jac, t_res, t_cost = residual_cost(trial, sw)
        better = t_cost <= cost
        x = np.where(better[:, None], trial, x)
        pts = np.where(better[:, None, None], t_pts, pts)
        jac = np.where(better[:, None, None, None], t_jac, jac)
        res = np.where(better[:, None, None], t_res, res)
        cost = np.where(better, t_cost, cost)
        lam = np.where(better, np.maximum(lam * 0.3, 1e-7), np.minimum(lam * 10.0, 1e7))
        if np.abs(step).max() < 1e-7:
            break
    q[:, cols] = x
    return pts
