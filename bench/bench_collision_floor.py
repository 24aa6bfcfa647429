#!/usr/bin/env python3
"""How far the G1's arms could keep out of the body at less limb error: each close frame solved alone.

The bake's avoidance makes room by linearised least changes (core.chains.separation). Here, for
every `--stride`-th frame on which an arm and its hand come within the margin (of the pose the
bake hands to its separate stage), the arm's and hand's joints are solved again by SLSQP for the
least limb direction error a viewer reads (the shoulder -> wrist line against the actor's, both
in their body's heading frame, as core.retarget.viewer measures it) such that every checked pair
those joints move is at least the margin apart, the joints within their limits and within
`--reach` rad of where the bake's shape put them (the bake's MAX_SEPARATION_RAD: 0.5), started
from that pose and from the bake's answer. Each frame alone: no joint speeds, no one answer
per run, so it is what a frame could cost, not yet a motion. Any answer SLSQP finds is one the
capsules allow: the figures are upper bounds of the least (a local solver; frames it leaves
inside are not counted). Printed per arm: the error's mean rise over the frames sampled for
these answers and for the bake's, and both carried over all frames (x close frames / frames)
and the four limbs, as limb_direction_error_deg averages them. --turn: the least turn of the
line from where the shape put it instead (the room alone, no turn toward the actor's line; the
bake's figure then its turn too).

    .venv/bin/python bench/bench_collision_floor.py [--stride 10] [--reach 0.5] [--turn] [--plot PNG]
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
import core.retarget.pipeline as pipeline  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402
from core.retarget.viewer import angle_deg, body_landmarks, limb_ends, unheading  # noqa: E402


def separation_inputs(motion, tree, mapping) -> dict:
    """The bake with avoidance on, and what its separate stage was handed (tree, plans, q before
    the room made, root poses, the Separation) and made of it (q after)."""
    seen = {}
    keep_apart = pipeline.keep_apart

    def watched(tree, plans, q, root, targets, settings, apart, fps):
        seen.update(tree=tree, plans=plans, before=q.copy(), root=root, apart=apart)
        keep_apart(tree, plans, q, root, targets, settings, apart, fps)
        seen["after"] = q.copy()

    pipeline.keep_apart = watched
    try:
        retarget(motion, tree, replace_settings(mapping, True), contacts="auto")
    finally:
        pipeline.keep_apart = keep_apart
    return seen


def replace_settings(mapping, avoid: bool):
    mapping.settings = replace(mapping.settings, avoid_self_collision=avoid)
    return mapping


class ArmFrames:
    """One arm (and the hand hanging from it) of a bake: the viewer's error on a frame as a
    function of the group's joints, and the checked pairs' clearance beyond the margin."""

    def __init__(self, motion, mapping, seen: dict, side: str, from_shape: bool = False):
        tree, root = seen["tree"], seen["root"]
        group = next(g for g in pipeline.room_groups(tree, seen["plans"]) if g[0].mapping.name == f"{side}_arm")
        variables = [v for plan in group for v in plan.kin.chain.variables]
        self.tree, self.root, self.q = tree, root, seen["before"]
        self.cols = np.concatenate([plan.kin.columns for plan in group])
        self.term = seen["apart"].term(variables, root)
        src_base, src_tip, base, tip = limb_ends(group[0].mapping)
        self.links = (tree.link_index(base), tree.link_index(tip))
        heads = {bone: motion.heads[:, motion.index(bone)] for bone in (src_base, src_tip)}
        hips = body_landmarks(mapping.enabled_chains())
        (left_src, left_rob), (right_src, right_rob) = hips["left_hip"], hips["right_hip"]
        poses = tree.poses(self.q, root, [tree.link_index(left_rob), tree.link_index(right_rob)])
        actor_turn = unheading(motion.heads[:, motion.index(left_src)] - motion.heads[:, motion.index(right_src)])
        self.heading = unheading(poses[tree.link_index(left_rob)][:, :3, 3] - poses[tree.link_index(right_rob)][:, :3, 3])
        self.actor = np.einsum("fij,fj->fi", actor_turn, heads[src_tip] - heads[src_base])
        if from_shape:  # measured from the line the shape put it on instead of the actor's
            self.actor = np.stack([self.line(self.q[f, self.cols], f) for f in range(len(self.q))])
        margin = self.term.margin
        self.close = np.flatnonzero(self.term.distance(self.q, root, margin).min(axis=1) < margin)

    def pose(self, x: np.ndarray, f: int) -> np.ndarray:
        q = self.q[f].copy()
        q[self.cols] = x
        return q

    def line(self, x: np.ndarray, f: int) -> np.ndarray:
        """The robot's limb line (3,) on frame f in its heading frame, the group's joints at x."""
        base, tip = self.links
        poses = self.tree.poses(self.pose(x, f)[None], self.root[f:f + 1], [base, tip])
        return self.heading[f] @ (poses[tip][0, :3, 3] - poses[base][0, :3, 3])

    def capsules(self, x: np.ndarray, f: int, names: tuple) -> list:
        """(ends (2, 3) in the body's heading frame about the root, radius) of the capsules of
        the links whose names hold one of `names`, the group's joints at x on frame f."""
        model, tree = self.term.model, self.tree
        links = sorted({int(link) for link in model.capsule_link
                        if any(part in tree.link_names[link] for part in names)})
        poses = tree.poses(self.pose(x, f)[None], self.root[f:f + 1], links)
        centre = self.root[f, :3, 3]
        return [((self.heading[f] @ (poses[int(link)][0, :3, :3] @ ends.T
                                     + poses[int(link)][0, :3, 3:] - centre[:, None])).T, radius)
                for link, ends, radius in zip(model.capsule_link, model.ends, model.radius) if int(link) in links]

    def error(self, x: np.ndarray, f: int) -> float:
        """The viewer's limb direction error (deg) on frame f with the group's joints at x."""
        return float(angle_deg(self.actor[f][None], self.line(x, f)[None])[0])

    def clearance(self, x: np.ndarray, f: int) -> np.ndarray:
        """Each checked pair's distance beyond the margin (m) on frame f with the joints at x."""
        return self.term.distance(self.pose(x, f)[None], self.root[f:f + 1])[0] - self.term.margin

    def constraint(self, f: int) -> dict:
        """SLSQP's inequality on frame f: every pair out of the margin (gradient by differences)."""
        return {"type": "ineq", "fun": self.clearance, "args": (f,)}

    def least(self, f: int, starts: list, reach: float) -> tuple[float, np.ndarray] | None:
        """The least error SLSQP finds on frame f from `starts` with every pair out of the
        margin, and the group's joints there; None when no start ends outside it."""
        x0 = self.q[f, self.cols]
        lower = np.maximum(self.tree.lower[self.cols], x0 - reach)
        upper = np.minimum(self.tree.upper[self.cols], x0 + reach)
        best = None
        for start in starts:
            found = minimize(self.error, np.clip(start, lower, upper), args=(f,), method="SLSQP",
                             bounds=list(zip(lower, upper)), options={"maxiter": 200, "ftol": 1e-6},
                             constraints=[self.constraint(f)])
            if self.clearance(found.x, f).min() > -1e-4 and (best is None or found.fun < best[0]):
                best = (float(found.fun), found.x)
        return best


def arm_figures(arm: ArmFrames, after: np.ndarray, stride: int, reach: float) -> tuple[float, float, int]:
    """(least rise, bake's rise) of the error on the sampled close frames (deg, mean) and how
    many were solved."""
    least, bake = [], []
    for f in arm.close[::stride]:
        before = arm.error(arm.q[f, arm.cols], f)
        found = arm.least(int(f), [arm.q[f, arm.cols], after[f, arm.cols]], reach)
        if found is not None:
            least.append(found[0] - before)
            bake.append(arm.error(after[f, arm.cols], f) - before)
    return float(np.mean(least)), float(np.mean(bake)), len(least)


def plot_frame(arm: ArmFrames, after: np.ndarray, f: int, reach: float, path: str) -> None:
    """The arm's capsules and the pelvis', hips' and torso's from the front on frame f: where the
    shape put them, the bake's room and the least error found (PNG at `path`)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    least = arm.least(f, [arm.q[f, arm.cols], after[f, arm.cols]], reach)
    poses = [("shape (inside)", arm.q[f, arm.cols]), ("bake's room", after[f, arm.cols])]
    poses += [("least error found", least[1])] if least is not None else []
    figure, axes = plt.subplots(2, len(poses), figsize=(4 * len(poses), 8.4), sharey=True, squeeze=False)
    for column, (title, x) in enumerate(poses):
        for row, (across, label, limits) in enumerate(((1, "left of the body (m)", (0.45, -0.3)),
                                                       (0, "ahead of the body (m)", (-0.3, 0.45)))):
            ax = axes[row, column]
            for part, colour in (("pelvis", "0.6"), ("torso", "0.6"), ("hip", "0.75"), ("waist", "0.75"),
                                 ("left_shoulder", "tab:blue"), ("left_elbow", "tab:blue"),
                                 ("left_wrist", "tab:red"), ("left_rubber", "tab:red")):
                for ends, radius in arm.capsules(x, f, (part,)):
                    for point in np.linspace(ends[0], ends[1], 8):  # the capsule's outline, seen across
                        ax.add_patch(plt.Circle((point[across], point[2]), radius, color=colour, alpha=0.25, lw=0))
            ax.set_aspect("equal")
            ax.set_xlim(*limits)  # from the front the robot's left is on the right; from its left, ahead is right
            ax.set_ylim(-0.45, 0.45)
            ax.set_xlabel(label)
            if row == 0:
                ax.set_title(f"{title}: limb error {arm.error(x, f):.1f} deg")
        axes[0, 0].set_ylabel("from the front: up from the root (m)")
        axes[1, 0].set_ylabel("from its left: up from the root (m)")
    figure.suptitle(f"G1 left arm, walk frame {f}: hand (red), arm (blue), pelvis, hips and torso (grey)")
    figure.tight_layout()
    figure.savefig(path, dpi=70)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=10)
    parser.add_argument("--reach", type=float, default=0.5)
    parser.add_argument("--turn", action="store_true", help="the line's least turn, not its error")
    parser.add_argument("--plot", help="PNG of the walk's left arm on its first close frame, and stop")
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    what = "line turned" if args.turn else "error"
    for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
        motion = clips.load(path)
        mapping = auto_map(motion, tree)
        seen = separation_inputs(motion, tree, mapping)
        if args.plot:
            arm = ArmFrames(motion, mapping, seen, "left")
            plot_frame(arm, seen["after"], int(arm.close[0]), args.reach, args.plot)
            return
        totals = np.zeros(2)
        for side in ("left", "right"):
            started = time.process_time()
            arm = ArmFrames(motion, mapping, seen, side, args.turn)
            least, bake, solved = arm_figures(arm, seen["after"], args.stride, args.reach)
            share = len(arm.close) / len(arm.q)
            totals += np.array([least, bake]) * share / 4.0
            print(f"  {name:<5} {side:<5} arm: {len(arm.close)} close frames, {solved} of "
                  f"{len(arm.close[::args.stride])} sampled solved: {what} {least:+.2f} deg on them alone "
                  f"(the bake's {bake:+.2f}); over all frames {least * share:+.2f} ({bake * share:+.2f}) "
                  f"({time.process_time() - started:.0f} s)", flush=True)
        print(f"  {name:<5} {what} over all frames and the four limbs: {totals[0]:+.2f} deg frame by frame "
              f"(the bake's {totals[1]:+.2f}), reach {args.reach} rad")


if __name__ == "__main__":
    main()
