"""The same mechanism hung from another link: a robot rooted at its torso seen from its pelvis.

The retarget solves a humanoid from its pelvis (the body frame, the legs and the
spine all start there), but a URDF may be rooted at the torso with the legs
hanging from a waist joint. Re-rooting reverses the joints between the old and
the new root; joint names, joint values and limits stay as they were, so a
solution on the re-rooted robot is a solution on the original one. Only the
frames of links on the reversed path move (to the joint they now hang from);
`frame_change` says by how much, so poses can be carried back.

A re-hung root's frame would sit on the joint it hung from (a G1 rooted at its ankle,
hung from its pelvis: on the left hip joint, 12 cm off the G1's pelvis frame), and what
is solved about the root's origin (the gait's waist tilt and turn) would depend on how
the robot was described; so it is moved to its trunk joint (the first moving joint
toward the biggest part of the robot: the waist), where the G1's and H1's own pelvis
frames sit. A URDF's own root keeps its frame (a fixed base stands on it).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .kinematics import FIXED, KinematicTree
from .transforms import invert_transform
from .urdf import Geometry, Joint, Link, Robot


@dataclasses.dataclass
class Rerooted:
    """A re-rooted robot and, per link, C with new frame = old frame @ C (identity if unmoved)."""

    robot: Robot
    frame_change: dict[str, np.ndarray]

    def original_pose(self, link: str, new_pose: np.ndarray) -> np.ndarray:
        """World pose(s) (..., 4, 4) of `link`'s original frame from its re-rooted frame's pose."""
        change = self.frame_change.get(link)
        return new_pose if change is None else new_pose @ invert_transform(change)

    def new_pose(self, link: str, original_pose: np.ndarray) -> np.ndarray:
        """World pose(s) (..., 4, 4) of `link`'s re-rooted frame from its original frame's pose."""
        change = self.frame_change.get(link)
        return original_pose if change is None else original_pose @ change


def reroot(robot: Robot, new_root: str, root_frame: np.ndarray | None = None) -> Rerooted:
    """`robot` with `new_root` as its root link (the robot itself when it already is and
    root_frame is None); root_frame (4, 4): the new root's frame in the one re-rooting gives it."""
    if new_root not in robot.links:
        raise KeyError(f"robot {robot.name!r} has no link {new_root!r}")
    path = robot.path(robot.root_link, new_root)[::-1]  # new root first, old root last
    change = {new_root: np.eye(4) if root_frame is None else np.asarray(root_frame, dtype=float)}
    reversed_joints: dict[str, Joint] = {}
    for lower, upper in zip(path, path[1:]):
        joint = robot.parent_joint(lower)
        change[upper] = joint.origin.copy()  # the upper link now hangs at the joint
        reversed_joints[joint.name] = dataclasses.replace(
            joint, parent=lower, child=upper, origin=invert_transform(change[lower]),
            axis=-np.asarray(joint.axis, dtype=float))
    joints = []
    for joint in robot.joints:
        if joint.name in reversed_joints:
            joints.append(reversed_joints[joint.name])
        elif joint.parent in change:
            joints.append(dataclasses.replace(joint, origin=invert_transform(change[joint.parent]) @ joint.origin))
        else:
            joints.append(joint)
    links = {name: _moved_link(link, change.get(name)) for name, link in robot.links.items()}
    moved = {name: c for name, c in change.items() if not np.allclose(c, np.eye(4))}
    return Rerooted(Robot(robot.name, links, joints, new_root, robot.source_path), moved)


def _moved_link(link: Link, change: np.ndarray | None) -> Link:
    if change is None or np.allclose(change, np.eye(4)):
        return link
    back = invert_transform(change)
    def moved(geometry: Geometry) -> Geometry:
        return dataclasses.replace(geometry, origin=back @ geometry.origin)
    fields = {"visuals": [moved(g) for g in link.visuals], "collisions": [moved(g) for g in link.collisions]}
    if link.inertial is not None:
        fields["inertial"] = dataclasses.replace(link.inertial, origin=back @ link.inertial.origin)
    return dataclasses.replace(link, **fields)


def hung_from(tree: KinematicTree, link: str,
              facing: np.ndarray | None = None) -> tuple[KinematicTree, Rerooted | None]:
    """The kinematic tree of `tree`'s robot re-rooted at `link` (cached on `tree`), its root frame
    moved to its trunk joint (trunk_offset), and the re-rooting; `tree` itself and None when `link`
    is already its root or is empty (a URDF's own root frame stays: a fixed base stands on it).
    facing (3, 3): the root frame also turned by it (a URDF whose root does not face +x, turned to
    face where the robot does: core.retarget.facing), about its own origin at a URDF's own root."""
    if not link or (link == tree.robot.root_link and facing is None):
        return tree, None
    cache = tree.__dict__.setdefault("_hung_from", {})
    key = link if facing is None else (link, np.asarray(facing, dtype=float).tobytes())
    if key not in cache:
        rerooted = reroot(tree.robot, link)
        hung = KinematicTree(rerooted.robot)
        frame = np.eye(4)
        if link != tree.robot.root_link:
            offset = trunk_offset(hung)
            frame[:3, 3] = 0.0 if offset is None else offset
        if facing is not None:
            frame[:3, :3] = facing
        if not np.array_equal(frame, np.eye(4)):
            rerooted = reroot(tree.robot, link, frame)  # the hung root's frame is the link's own, moved
            hung = KinematicTree(rerooted.robot)
        cache[key] = (hung, rerooted)
    return cache[key]


def trunk_offset(tree: KinematicTree, tol_m: float = 1e-9) -> np.ndarray | None:
    """Where (3,) the root's trunk joint is in the root's frame: the first moving joint (past fixed
    links with one child) of the root's child with the most moving joints below it; None when it is
    at the origin already, or no child has more than the others (a pair of legs alone)."""
    children = [i for i in range(len(tree.parent)) if tree.parent[i] == 0]
    below = np.zeros(len(tree.parent), dtype=int)
    for i in sorted(range(1, len(tree.parent)), key=tree.depth, reverse=True):
        below[tree.parent[i]] += below[i] + (tree.kind[i] != FIXED)
    counts = [below[c] + (tree.kind[c] != FIXED) for c in children]
    if not counts or counts.count(max(counts)) > 1:
        return None
    link = children[counts.index(max(counts))]
    while tree.kind[link] == FIXED:
        nexts = [i for i in range(len(tree.parent)) if tree.parent[i] == link]
        if len(nexts) != 1:
            break
        link = nexts[0]
    offset = tree.zero_pose()[link, :3, 3]
    return None if np.abs(offset).max() <= tol_m else offset.copy()
