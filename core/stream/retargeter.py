"""A causal, per-frame retarget: plans once, then each frame as it comes (issue 14, item 1).

The offline pipeline (core.retarget.pipeline) solves all frames together and filters with
zero phase; here the same chain plans, body frame, root and targets are evaluated on one
frame, every chain is solved in tree order from the last output (a warm start) within an
evaluation budget, and joint and velocity limits hold against the previous output. Nothing
but the frame and earlier ones is used.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..chains.frame import FrameKinematics, clip_values, solve_frame
from ..chains.mapping import Mapping, RetargetSettings
from ..chains.solver import SolveOptions
from ..model.kinematics import KinematicTree
from ..retarget.facing import solved_robot
from ..model.transforms import pose_matrices
from ..motion.filtering import step_limits
from ..motion.source import SourceMotion
from ..retarget.neutral import neutral_posture, standing_root
from ..retarget.chain_plans import RetargetError, RootPlan, body_landmarks_of, plan_chains
from ..retarget.torso import SpineShape, chest_bones
from ..retarget.viewer import chest_frames
from ..retarget.pipeline import HAND_FREE_PRIOR
from .body import CausalBodyFrame, frame_of
from .wrist import hold_free_turn

EVALUATIONS = 2  # per chain and frame: from the last output one step lands (walk onto G1: limbs 0.71 deg, 0.65 with 3)
FIRST_EVALUATIONS = 40  # the first frame starts from the neutral posture, far from the actor's: solved in full
FIRST_HAND_STEPS = 10  # the first frame's hands, solved in full from neutral, then pulled along their free turn


@dataclass
class RobotPose:
    """One output: joint positions q (n,) (radians, metres for prismatic) and the root pose."""

    q: np.ndarray
    root_position: np.ndarray  # (3,) metres, world
    root_rotation: np.ndarray  # (3, 3)


class _FrameTargets:
    """core.retarget.pipeline.chain_targets for one frame of every chain at once: all paths'
    polylines in one array, sampled at their fractions by one search over a running length
    that never falls back between paths, then scaled and turned into the robot in one product."""

    def __init__(self, plans, bones: int):
        points, starts, samples, paths, scales = [], [], [], [], []
        self.slices, row = [], 0
        for plan in plans:
            first = row
            for path, frac, rpath in zip(plan.source.paths, plan.source_fractions, plan.robot.paths):
                idx = list(path) + ([bones + path[-1]] if plan.source.tail else [])  # tails follow heads
                starts.append(len(points))
                points += idx
                samples.append(np.asarray(frac, dtype=float))
                paths.append(len(starts) - 1)
                scales.append(float(rpath.length))
                row += len(frac)
            self.slices.append(slice(first, row))
        self.points = np.array(points)
        self.starts = np.array(starts)
        self.ends = np.append(self.starts[1:], len(points)) - 1  # each path's last point
        count = np.array([len(f) for f in samples])
        self.sample_path = np.repeat(np.arange(len(samples)), count)
        self.fractions = np.concatenate(samples)
        self.lengths = np.array(scales)
        inner = np.ones(len(points) - 1, dtype=bool)
        inner[self.starts[1:] - 1] = False  # no segment joins one path to the next
        self.inner = inner.astype(float)
        self._cum = np.zeros(len(points))
        self.first_point = self.starts[self.sample_path]  # per sample, its path's first point and segments
        self.first_segment, self.last_segment = self.first_point, self.ends[self.sample_path] - 1
        self.weights = [np.concatenate([w / rp.length ** 2 for w, rp in zip(plan.weights, plan.robot.paths)])
                        for plan in plans]

    def __call__(self, heads: np.ndarray, tails: np.ndarray, to_robot: np.ndarray) -> list[np.ndarray]:
        """Per chain, targets (M, 3) relative to its robot origin; heads, tails (B, 3); to_robot (3, 3)."""
        pts = np.concatenate([heads, tails])[self.points]  # (P, 3)
        step = pts[1:] - pts[:-1]
        seg = np.sqrt(np.add.reduce(step * step, axis=1)) * self.inner
        cum = self._cum  # running length, flat across path joins
        np.add.accumulate(seg, out=cum[1:])
        base = cum[self.starts]
        total = cum[self.ends] - base
        path = self.sample_path
        at = base[path] + self.fractions * total[path]
        k = clip_values(np.searchsorted(cum, at, side="left") - 1, self.first_segment, self.last_segment)
        after = k + 1
        span = cum[after] - cum[k]
        moving = span > 0
        alpha = np.where(moving, (at - cum[k]) / np.where(moving, span, 1.0), 0.0)
        shape = pts[k] + alpha[:, None] * (pts[after] - pts[k]) - pts[self.first_point]
        scale = (self.lengths / np.maximum(total, 1e-9))[path]
        out = (scale[:, None] * shape) @ to_robot.T
        return [out[s] for s in self.slices]


def _shape(fk: FrameKinematics) -> tuple:
    return fk.batch.shape[1:], tuple(fk.parent_slot), tuple(fk.at_root), tuple(fk.variable_slot), \
        tuple(fk.place_slot), fk.points


class StreamRetargeter:
    """Retarget one frame at a time onto `tree`; `skeleton` is the source's rest (one frame)."""

    def __init__(self, skeleton: SourceMotion, tree: KinematicTree, mapping: Mapping,
                 settings: RetargetSettings | None = None, evaluations: int = EVALUATIONS):
        self.settings = settings or mapping.settings
        self.robot, self.mapping, self.evaluations = tree, mapping, evaluations
        self.warnings: list[str] = []
        tree, self.rerooted = solved_robot(tree, mapping.robot_root)
        self.tree = tree
        self.plans = plan_chains(skeleton, tree, mapping, self.warnings)
        if not self.plans:
            raise RetargetError("no chain could be mapped between the source and the robot")
        self.marks = body_landmarks_of(skeleton, tree, mapping)
        self.floating = any(p.mapping.role == "leg" for p in self.plans) and self.settings.root_mode != "fixed"
        self.root_plan = RootPlan.build(skeleton, tree, self.plans, self.settings) if self.floating else None
        self.fixed_root = standing_root(tree, any(p.mapping.role == "leg" for p in self.plans))  # as the bake
        self.targets = _FrameTargets(self.plans, len(skeleton.bone_names))
        weights = {id(p): (None, w) for p, w in zip(self.plans, self.targets.weights)}  # neutral_posture reads these
        neutral = neutral_posture(skeleton, tree, self.plans, weights, self.marks.axes_rob, self.settings.rest_prior)
        self.options = SolveOptions(self.settings.iterations, self.settings.smoothness, self.settings.rest_prior,
                                    self.settings.objective, rest=neutral)
        # hands: the turn their direction leaves free is pulled toward neutral, as the bake's (hold_free_turn)
        self.hand_pull = [HAND_FREE_PRIOR * self.settings.rest_prior if p.mapping.role == "hand" else 0.0
                          for p in self.plans]
        self.spine = next((k for k, p in enumerate(self.plans) if p.mapping.role == "spine" and p.kin.chain.variables),
                          None)
        single = [FrameKinematics(tree, p.kin) for p in self.plans]
        anchors = {p.robot.anchor for p in self.plans if p.robot.anchor > 0}
        self.carries = [bool(anchors & set(fk.links)) for fk in single]  # another chain hangs from it
        # where each chain's anchor pose comes from: the root (None), an earlier chain's link
        # (its index, the link's slot in that chain's frames) or the tree (its link index)
        self.anchor_of = []
        for k, plan in enumerate(self.plans):
            earlier = [(j, fk.links.index(plan.robot.anchor) + 1) for j, fk in enumerate(single[:k])
                       if plan.robot.anchor in fk.links and self.carries[j]]
            self.anchor_of.append(None if plan.robot.anchor <= 0 else earlier[-1] if earlier else plan.robot.anchor)
        self.groups = self._side_by_side(single)
        self.fks = [FrameKinematics(tree, [self.plans[k].kin for k in group]) for group in self.groups]
        self.member = {k: (g, b) for g, group in enumerate(self.groups) for b, k in enumerate(group)}
        self.group_weights = [np.stack([self.targets.weights[k] for k in group]) for group in self.groups]
        self._anchors = [np.zeros((len(group), 4, 4)) for group in self.groups]  # each group's anchor poses
        legs = [p for p in self.plans if p.mapping.role == "leg" and p.mapping.side in ("left", "right")]
        self._feet = {p.mapping.side: int(p.robot.paths[0].tip_local[0]) for p in legs}  # side: foot link
        # the legs' own chain kinematics, both placed in one batch when they are shaped alike
        alike = len(legs) == 2 and _shape(FrameKinematics(tree, legs[0].kin)) == _shape(FrameKinematics(tree, legs[1].kin))
        self._legs = [(legs, FrameKinematics(tree, [p.kin for p in legs]))] if alike else \
            [([p], FrameKinematics(tree, [p.kin])) for p in legs]
        self._feet_lock = threading.Lock()
        self._chest_bones = chest_bones(skeleton, mapping.chains)
        self._spine_shape = SpineShape(tree, self.plans[self.spine].kin, mapping.chains) \
            if self.spine is not None and self._chest_bones is not None else None
        self.body = CausalBodyFrame(self.marks)
        self.q = neutral.copy()  # the first frame starts from the neutral posture
        self.last_time: float | None = None

    def step(self, frame: SourceMotion, time_s: float, stop=None) -> tuple[np.ndarray, np.ndarray]:
        """Joint positions q (n,) and root pose (4, 4) for `frame` (a one-frame SourceMotion) at
        `time_s` seconds, in the solved tree (see output_pose).

        stop(): True when a newer frame has arrived: the current iterate is output at once.
        """
        tree = self.tree
        body_src = self.body(frame.heads[0], frame.tails[0], frame.root_rotation[0], frame.rest_root_rotation)[None]
        axes_rob = self.marks.axes_rob
        if self.floating:
            root_rot = body_src @ axes_rob.T
            root_pos = self.root_plan(frame.heads, root_rot)
        else:
            root_rot, root_pos = np.eye(3)[None], self.fixed_root[None]
        body_rob = root_rot @ axes_rob
        root = pose_matrices(root_rot, root_pos)[0]
        dt = (time_s - self.last_time) if self.last_time is not None and time_s > self.last_time else 1.0 / frame.fps
        max_step = step_limits(tree.velocity, 1.0 / dt)
        previous = self.q.copy()
        q = self.q.copy()
        first = self.last_time is None  # no output yet: nothing to hold the speed against
        lower_all = tree.lower if first else np.maximum(tree.lower, previous - max_step)  # joint limits, velocity reach
        upper_all = tree.upper if first else np.minimum(tree.upper, previous + max_step)
        stopped = False
        to_robot = body_rob[0] @ body_src[0].T  # source world -> robot world directions
        heads, tails = frame.heads[0], frame.tails[0]
        all_targets = self.targets(heads, tails, to_robot)
        if self.spine is not None:
            all_targets[self.spine] = self._spine_targets(frame, to_robot[None], root_rot, all_targets[self.spine][None])[0]
        for group, fk, weights, anchor in zip(self.groups, self.fks, self.group_weights, self._anchors):
            for b, k in enumerate(group):
                anchor[b] = self._anchor(k, q, root)
            targets = all_targets[group[0]][None] if len(group) == 1 else \
                np.concatenate([all_targets[k] for k in group]).reshape(len(group), -1, 3)
            cols = fk.variable_columns
            budget = 1 if stopped else FIRST_EVALUATIONS if first else self.evaluations
            pull = self.hand_pull[group[0]] if budget > 1 and not self.carries[group[0]] else 0.0
            if pull > 0.0 and not first:
                # a hand: its step pays the pull along the turn its direction leaves free, as the bake's do (the
                # step solve_frame would take from one evaluation, budget 2, the pull added)
                hold_free_turn(fk, anchor, q, targets, weights, self.options, previous[cols], lower_all[cols],
                               upper_all[cols], pull)
                stopped = stopped or (stop is not None and stop())
                continue
            result = solve_frame(fk, lower_all[cols], upper_all[cols], anchor, q, targets, weights, self.options,
                                 previous[cols], budget, stop, check=self.carries[group[0]])
            stopped = stopped or result.stopped
            for _ in range(FIRST_HAND_STEPS if pull > 0.0 and not stopped else 0):  # settled from neutral, then pulled
                hold_free_turn(fk, anchor, q, targets, weights, self.options, previous[cols], lower_all[cols],
                               upper_all[cols], pull)
        self.q, self.last_time = q, time_s
        return q.copy(), root

    def _anchor(self, k: int, q: np.ndarray, root: np.ndarray) -> np.ndarray:
        """World pose (4, 4) of chain k's anchor this frame: the root, a link of a chain solved
        before it, or the tree's."""
        source = self.anchor_of[k]
        if source is None:
            return root
        if isinstance(source, tuple):  # a link of a chain solved this frame
            group, member = self.member[source[0]]
            return self.fks[group].batch[member, source[1]]
        return self.tree.link_transform(q[None], source, root[None])[0]

    def _side_by_side(self, fks: list[FrameKinematics]) -> list[list[int]]:
        """Chains solved together, in tree order: a run of chains of one shape (left and right
        limbs), none hanging from another of the run, all checking their step or none."""
        groups: list[list[int]] = []
        for k, fk in enumerate(fks):
            last = groups[-1] if groups else None
            if last and k != self.spine and last[0] != self.spine and self.carries[k] == self.carries[last[0]] \
                    and fk.serial == fks[last[0]].serial and _shape(fk) == _shape(fks[last[0]]) \
                    and (self.anchor_of[k] is None or isinstance(self.anchor_of[k], tuple)
                         and self.anchor_of[k][0] not in last):
                last.append(k)
            else:
                groups.append([k])
        return groups

    def _spine_targets(self, frame, to_robot, root_rot, targets):
        """The spine aimed so the torso follows the actor's chest (core.retarget.torso): the
        chest frame (core.retarget.viewer.chest_frames) of this one frame in plain numbers."""
        if self._spine_shape is None:
            return targets
        left_shoulder, right_shoulder, left_hip, right_hip = frame.heads[0, self._chest_bones]
        try:
            chest = frame_of(left_shoulder - right_shoulder, (left_shoulder + right_shoulder - left_hip - right_hip) / 2.0)
        except ValueError:  # shoulders together, or the spine along their line: the offline frame's fallback
            chest = chest_frames(*(point[None] for point in (left_shoulder, right_shoulder, left_hip, right_hip)))[0]
        return self._spine_shape((to_robot[0] @ chest)[None], root_rot)

    def foot_links(self) -> dict[str, int]:
        """The link at the tip of each sided leg chain."""
        return dict(self._feet)

    def foot_poses(self, q: np.ndarray, root: np.ndarray) -> dict[str, np.ndarray]:
        """World pose (4, 4) of each foot link for q (n,) and root (4, 4), from the leg chains.

        Its own chain kinematics behind a lock: a control-cycle thread may ask while a frame is
        being solved."""
        out = {}
        with self._feet_lock:
            for legs, fk in self._legs:
                anchor = [root if p.robot.anchor <= 0 else self.tree.link_transform(q[None], p.robot.anchor, root[None])[0]
                          for p in legs]
                frames = fk.place_batch(np.array(anchor), q)
                for b, plan in enumerate(legs):
                    out[plan.mapping.side] = frames[b, fk.links_of[b].index(self._feet[plan.mapping.side]) + 1].copy()
        return out

    def output_pose(self, q: np.ndarray, root: np.ndarray) -> RobotPose:
        """The pose in the URDF's own root (a torso-rooted robot is solved from its pelvis)."""
        if self.rerooted is not None:
            link = self.robot.robot.root_link
            root = self.rerooted.original_pose(link, self.tree.link_transform(q[None], self.tree.link_index(link),
                                                                           root[None]))[0]
        return RobotPose(q.copy(), root[:3, 3].copy(), root[:3, :3].copy())
