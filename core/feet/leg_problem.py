"""One planted leg's solve as residuals: its chain shape, its sole's goals, the ground, a prior.

Every frame is its own problem; frames are solved all at once (a projected Levenberg-Marquardt,
`solve`), or their residuals and Jacobians read for a solve of another shape (core.feet.pace).
"""
from __future__ import annotations

import numpy as np

from ..chains.batched import spd_solve
from ..chains.solver import kept_better
from .geometry import pivot_weights


STEP_TOL_RAD = 1e-4  # a leg solve stops for a frame whose step is smaller ...
GAIN_TOL = 1e-4  # ... or whose step lowers the cost by less than this share


class LegProblem:
    """Residuals of one leg over the frames that need solving: shape, sole pose, ground, prior."""

    def __init__(self, tree, leg, frames, q, anchor, hip, points, weight, start, settings):
        """Everything indexed by `frames` (absolute frame numbers), in order. leg: core.feet.plant.Leg,
        settings: core.feet.plant.PlantSettings (not imported: plant imports this module)."""
        self.tree, self.leg, self.q, self.anchor, self.hip = tree, leg, q.copy(), anchor, hip
        self.frames, self.planted = frames, weight >= 1.0
        self.shape_targets = leg.targets[frames]
        self.shape_w = np.sqrt(leg.weights)[None, :, None]
        scale = settings.foot_weight / leg.length ** 2
        self.goal = points - hip[:, None]  # sole goals relative to the hip joint
        self.goal_w = np.sqrt(scale * weight)[:, None, None]
        # the point the goal stands on, weighted more: where the 6D pose cannot be met
        # (a leg without ankle roll), the foot gives in on its tilt, not on its place
        self.pivot = pivot_weights(points[..., 2] - leg.foot.radius[leg.sole])
        self.pivot_goal = np.einsum("fs,fsi->fi", self.pivot, self.goal)
        self.pivot_w = np.sqrt(settings.pivot_weight * scale * weight)[:, None]
        self.ground_w = np.sqrt(settings.ground_weight * scale)
        self.start, self.prior = start, np.sqrt(settings.prior)
        cols = leg.kin.columns  # bounds: joint limits, and no flip far from the unplanted angles
        self.lower = np.maximum(tree.lower[cols], start - settings.max_change_rad)
        self.upper = np.minimum(tree.upper[cols], start + settings.max_change_rad)
        nshape, nsole, nfoot = len(leg.kin.point_link), len(leg.sole), len(leg.foot.points)
        a = 3 * nshape
        self._bounds = (a, a + 3 * nsole, a + 3 * nsole + 3, a + 3 * nsole + 3 + nfoot)  # where each part ends
        self._rows = self._bounds[-1] + len(cols)
        self._prior_jac = np.eye(len(cols)) * self.prior
        self.apart, self.apart_root = None, None  # separation rows (see _apart) and root poses per row

    def residuals(self, x: np.ndarray, rows: np.ndarray):
        """(r (n, R), J (n, R, V)) for the variables x (n, V) of frames `rows` (local indices).

        Rows: the chain shape (3 per point), the sole points (3 each), their pivot (3), every
        foot point's depth below the ground, the prior (V); written in place, part by part.
        """
        q = self.q[rows]
        q[:, self.leg.kin.columns] = x
        both, bjac = self.leg.solve_kin.evaluate(self.tree, self.anchor[rows], q, True)
        n, nvar = x.shape
        shape, sole, (a, b, c, d) = self.leg.shape_rows, self.leg.sole, self._bounds
        nshape, nsole = shape.stop, len(sole)
        res, jac = np.empty((n, self._rows)), np.empty((n, self._rows, nvar))
        np.multiply(both[:, shape] - self.shape_targets[rows], self.shape_w, out=res[:, :a].reshape(n, nshape, 3))
        np.multiply(bjac[:, shape], self.shape_w[..., None], out=jac[:, :a].reshape(n, nshape, 3, nvar))
        feet, fjac = both[:, nshape:], bjac[:, nshape:]
        soles, sjac = feet[:, sole], fjac[:, sole]
        w = self.goal_w[rows]
        np.multiply(soles - self.goal[rows], w, out=res[:, a:b].reshape(n, nsole, 3))
        np.multiply(sjac, w[..., None], out=jac[:, a:b].reshape(n, nsole, 3, nvar))
        pw, pivot = self.pivot_w[rows], self.pivot[rows]
        res[:, b:c] = (np.einsum("fs,fsi->fi", pivot, soles) - self.pivot_goal[rows]) * pw
        np.multiply(np.einsum("fs,fsiv->fiv", pivot, sjac), pw[..., None], out=jac[:, b:c])
        height = feet[..., 2] + self.hip[rows, 2][:, None] - self.leg.foot.radius
        below = height < 0.0
        np.multiply(np.where(below, height, 0.0), self.ground_w, out=res[:, c:d])
        np.multiply(np.where(below[..., None], fjac[:, :, 2], 0.0), self.ground_w, out=jac[:, c:d])
        np.multiply(x - self.start[rows], self.prior, out=res[:, d:])
        jac[:, d:] = self._prior_jac
        if self.apart is not None:
            h_res, h_jac = self.apart.residuals(q, self.apart_root[rows])
            return np.concatenate([res, h_res], axis=1), np.concatenate([jac, h_jac], axis=1)
        return res, jac

    def pivot_miss(self, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """How far (n,) horizontally the point a planted foot stands on is from its goal, metres."""
        res, _ = self.residuals(x, rows)
        b = self._bounds[1]
        return np.linalg.norm(res[:, b:b + 2], axis=1) / np.maximum(self.pivot_w[rows, 0], 1e-12)

    def solve(self, x: np.ndarray, rows: np.ndarray, iterations: int) -> tuple[np.ndarray, np.ndarray]:
        """Projected Levenberg-Marquardt from x (len(rows), V), every frame its own problem,
        all at once; returns the solution and its cost per frame."""
        x = x.copy()
        lower, upper = self.lower[rows], self.upper[rows]
        res, jac = self.residuals(x, rows)
        cost = (res ** 2).sum(1)
        lam = np.full(len(x), 1e-3)
        eye = np.eye(x.shape[1])
        active = np.arange(len(x))
        r, j = res, jac  # the active frames' residuals and Jacobians, in the order of `active`
        for _ in range(iterations):
            if len(active) == 0:
                break
            before = x[active]
            hess = j.transpose(0, 2, 1) @ j
            grad = (j.transpose(0, 2, 1) @ r[..., None])[..., 0]
            # active set: a variable on a bound that the gradient pushes further out stays there,
            # so the others take a full Gauss-Newton step instead of a clipped one
            free = ~(((before <= lower[active] + 1e-9) & (grad > 0)) | ((before >= upper[active] - 1e-9) & (grad < 0)))
            hess = hess * (free[:, :, None] & free[:, None, :]) + eye * ~free[:, None, :]
            grad = grad * free
            diag = np.einsum("fii->fi", hess)
            step = -spd_solve(hess + lam[active, None, None] * (eye * (diag[:, None, :] + 1e-6)), grad)
            trial = np.clip(before + step, lower[active], upper[active])
            t_res, t_jac = self.residuals(trial, rows[active])
            t_cost = (t_res ** 2).sum(1)
            better = t_cost < cost[active]
            gain = cost[active] - t_cost
            won = active[better]
            x[won], cost[won] = trial[better], t_cost[better]
            r, j = kept_better(better, (r, j), (t_res, t_jac))
            lam[active] = np.where(better, np.maximum(lam[active] * 0.3, 1e-7), np.minimum(lam[active] * 10, 1e7))
            # done: the step is below 0.1 mrad (0.1 mm at a leg's length) or buys no relative gain
            stepping = np.abs(trial - before).max(axis=1) > STEP_TOL_RAD
            gaining = gain > GAIN_TOL * t_cost + 1e-12
            going = stepping & (gaining | ~better) & (lam[active] < 1e6)
            active = active[going]
            if not going.all():
                r, j = r[going], j[going]
        return x, cost
