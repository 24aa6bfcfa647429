"""Re-rigged copies of a BVH clip: the same motion in the world, other rest poses and conventions.

A clip is re-rested by turning each joint's rest frame: joint j's child offsets
(and End Site) become R_j @ offset, and its per-frame local rotation becomes
R_parent @ L_j @ R_j^T, so every head and tail lands where it did on every frame
while the all-zero pose is something else (a T-pose, arms down, a straight line
of bones along local X). Other variants rename bones, add bones that are not
limbs, change units or the up axis. Invariance tests bake each variant and
require the original's result.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from core.motion.bvh import BVHClip
from core.motion.source import SourceMotion

ORDER = "ZXY"  # rotation channels written for every joint


def rotation_between(a, b) -> np.ndarray:
    """The smallest rotation taking direction a onto direction b."""
    a, b = np.asarray(a, float) / np.linalg.norm(a), np.asarray(b, float) / np.linalg.norm(b)
    axis = np.cross(a, b)
    s, c = np.linalg.norm(axis), float(np.dot(a, b))
    if s < 1e-12:
        if c > 0:
            return np.eye(3)
        perp = np.cross(a, [1.0, 0, 0] if abs(a[0]) < 0.9 else [0, 1.0, 0])
        return Rotation.from_rotvec(np.pi * perp / np.linalg.norm(perp)).as_matrix()
    return Rotation.from_rotvec(axis / s * np.arctan2(s, c)).as_matrix()


def _local(clip: BVHClip) -> tuple[np.ndarray, np.ndarray]:
    return clip._local_transforms()


def rerest(clip: BVHClip, turns: dict[str, np.ndarray], world: np.ndarray | None = None) -> BVHClip:
    """The clip with joint rest frames turned by `turns` (name -> 3x3); `world` turns the file's world axes."""
    n = len(clip.names)
    turn = np.stack([np.asarray(turns.get(name, np.eye(3)), float) for name in clip.names])
    q = np.eye(3) if world is None else np.asarray(world, float)
    t, r = _local(clip)
    frames = len(t)
    offsets = np.array(clip.offsets, float)
    new_t = t.copy()
    new_r = np.empty_like(r)
    for j, p in enumerate(clip.parents):
        before = q if p < 0 else turn[p]
        new_t[:, j] = t[:, j] @ before.T
        offsets[j] = before @ clip.offsets[j]
        new_r[:, j] = before @ r[:, j] @ turn[j].T
    ends = {j: turn[j] @ np.asarray(v, float) for j, v in clip.end_sites.items()}
    return _with_motion(clip, offsets, ends, new_t, new_r, frames, n)


def _with_motion(clip, offsets, ends, t, r, frames, n, positions=None) -> BVHClip:
    """A clip whose joints have ZXY rotations and the root (and any joint that had them, or the
    joints flagged in `positions`) positions."""
    channels, columns = [], []
    for j in range(n):
        moved = (any(c.endswith("position") for c in clip.channels[j]) if positions is None
                 else bool(positions[j]))
        chans = (["Xposition", "Yposition", "Zposition"] if moved else []) + [f"{a}rotation" for a in ORDER]
        channels.append(chans)
        if moved:
            columns.append(t[:, j])
        columns.append(Rotation.from_matrix(r[:, j]).as_euler(ORDER, degrees=True))
    motion = np.concatenate(columns, axis=1) if columns else np.zeros((frames, 0))
    return dataclasses.replace(clip, offsets=offsets, channels=channels, end_sites=ends, motion=motion)


def scaled(clip: BVHClip, factor: float) -> BVHClip:
    """Every length times `factor` (metres -> centimetres with 100)."""
    out = rerest(clip, {})
    pos = [k for k, c in enumerate(c for chans in out.channels for c in chans) if c.endswith("position")]
    motion = out.motion.copy()
    motion[:, pos] *= factor
    return dataclasses.replace(out, offsets=out.offsets * factor, motion=motion,
                               end_sites={j: v * factor for j, v in out.end_sites.items()})


def renamed(clip: BVHClip, names: dict[str, str]) -> BVHClip:
    return dataclasses.replace(clip, names=[names.get(n, n) for n in clip.names])


def with_extra_bones(clip: BVHClip, extra: list[tuple[str, str, np.ndarray]]) -> BVHClip:
    """Add motionless leaf joints (name, parent name, offset in the parent's frame), e.g. twist
    bones, fingers, an IK target or a prop; each ends in an End Site along its offset."""
    names, parents = list(clip.names), list(clip.parents)
    t, r = _local(clip)
    offsets = [np.asarray(o, float) for o in clip.offsets]
    ends = dict(clip.end_sites)
    channels = list(clip.channels)
    for name, parent, offset in extra:
        names.append(name)
        parents.append(names.index(parent))
        offsets.append(np.asarray(offset, float))
        ends[len(names) - 1] = 0.3 * np.asarray(offset, float) if np.linalg.norm(offset) > 0 else np.array([0, 0.02, 0])
        channels.append(["Zrotation", "Xrotation", "Yrotation"])
        t = np.concatenate([t, np.broadcast_to(offset, (len(t), 1, 3))], axis=1)
        r = np.concatenate([r, np.broadcast_to(np.eye(3), (len(r), 1, 3, 3))], axis=1)
    grown = dataclasses.replace(clip, names=names, parents=np.array(parents), channels=channels)
    return _with_motion(grown, np.array(offsets), ends, t, r, len(t), len(names))


def with_leaf_bones(clip: BVHClip, suffix: str = "_end") -> BVHClip:
    """Blender's FBX exporter's leaf bones (its default): every End Site becomes a motionless joint
    named after its parent plus `suffix`, as long as its parent and pointing the same way."""
    leaves = sorted(clip.end_sites)
    extra = [(f"{clip.names[j]}{suffix}", clip.names[j], np.asarray(clip.end_sites[j], float)) for j in leaves]
    out = with_extra_bones(clip, extra)
    ends = {j: e for j, e in out.end_sites.items() if j not in leaves}
    for k, j in enumerate(leaves):
        ends[len(clip.names) + k] = np.asarray(clip.end_sites[j], float)
    return dataclasses.replace(out, end_sites=ends)


def main_child_direction(clip: BVHClip, j: int) -> np.ndarray | None:
    """The rest direction a joint's bone points: its End Site, else its longest child offset."""
    if j in clip.end_sites and np.linalg.norm(clip.end_sites[j]) > 1e-9:
        return np.asarray(clip.end_sites[j], float)
    kids = [k for k in range(len(clip.names)) if clip.parents[k] == j]
    best = max(kids, key=lambda k: _subtree_size(clip, k), default=None)
    if best is None or np.linalg.norm(clip.offsets[best]) < 1e-9:
        return None
    return np.asarray(clip.offsets[best], float)


def _subtree_size(clip: BVHClip, j: int) -> int:
    return 1 + sum(_subtree_size(clip, k) for k in range(len(clip.names)) if clip.parents[k] == j)


def along_x(clip: BVHClip) -> BVHClip:
    """Every joint's main child offset lies along its local +X: all-zero rotations are a line of bones."""
    turns = {}
    for j, name in enumerate(clip.names):
        d = main_child_direction(clip, j)
        if d is not None:
            turns[name] = rotation_between(d, [1.0, 0, 0])
    return rerest(clip, turns)


def arms_posed(clip: BVHClip, arm_joints: dict[str, list[str]], down_deg: float, forward_deg: float = 0.0) -> BVHClip:
    """Both arms straight, `down_deg` below horizontal and swung `forward_deg` to the front, in the
    file's rest (0, 0: T-pose; 45, 0: A-pose; 0, 90: arms straight forward); the arm joints are listed
    per side, shoulder first. BVH +X is the actor's left and +Z the front in CMU files."""
    turns = {}
    a, b = np.radians(down_deg), np.radians(forward_deg)
    for side, joints in arm_joints.items():
        sign = 1.0 if side == "left" else -1.0
        want = np.array([sign * np.cos(a) * np.cos(b), -np.sin(a), np.cos(a) * np.sin(b)])
        for name in joints:
            d = main_child_direction(clip, clip.names.index(name))
            if d is not None:
                turns[name] = rotation_between(d, want)
    return rerest(clip, turns)


# Blender's BVH import with axis_up='Z' reads a file whose up is Z; this writes one.
Y_UP_TO_Z_UP = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])


def z_up(clip: BVHClip) -> BVHClip:
    """The same clip in a file whose world and rest offsets are Z-up (read it with up='Z')."""
    return rerest(clip, {name: Y_UP_TO_Z_UP for name in clip.names}, world=Y_UP_TO_Z_UP)


def write_bvh(clip: BVHClip, path: Path) -> Path:
    kids = {j: [k for k in range(len(clip.names)) if clip.parents[k] == j] for j in range(len(clip.names))}
    lines = ["HIERARCHY"]

    def joint(j: int, depth: int) -> None:
        pad = "\t" * depth
        order.append(j)
        lines.append(f"{pad}{'ROOT' if clip.parents[j] < 0 else 'JOINT'} {clip.names[j]}")
        lines.append(pad + "{")
        lines.append(f"{pad}\tOFFSET " + " ".join(f"{v:.6f}" for v in clip.offsets[j]))
        lines.append(f"{pad}\tCHANNELS {len(clip.channels[j])} " + " ".join(clip.channels[j]))
        for k in kids[j]:
            joint(k, depth + 1)
        if j in clip.end_sites:
            lines.extend([f"{pad}\tEnd Site", pad + "\t{",
                          f"{pad}\t\tOFFSET " + " ".join(f"{v:.6f}" for v in clip.end_sites[j]), pad + "\t}"])
        lines.append(pad + "}")

    order: list[int] = []
    for root in (j for j in range(len(clip.names)) if clip.parents[j] < 0):
        joint(root, 0)
    starts = np.cumsum([0] + [len(c) for c in clip.channels])
    motion = np.concatenate([clip.motion[:, starts[j]:starts[j + 1]] for j in order], axis=1)
    lines += ["MOTION", f"Frames: {clip.frames}", f"Frame Time: {clip.frame_time:.8f}"]
    lines += [" ".join(f"{v:.6f}" for v in row) for row in motion]
    path.write_text("\n".join(lines) + "\n")
    return path


# The CMU skeleton's bones under other naming conventions ({side} is filled per side).
_CMU_SIDED = ["HipJoint", "Hip", "Knee", "Ankle", "Toe", "Collar", "Shoulder", "Elbow", "Wrist", "hand",
              "Fingers", "Thumb"]
_CENTRE = ["Hips", "lowerback", "Chest", "Chest2", "lowerneck", "Neck", "Head"]
CONVENTIONS = {
    "mixamo": (["mixamorig:{S}HipJoint", "mixamorig:{S}UpLeg", "mixamorig:{S}Leg", "mixamorig:{S}Foot",
                "mixamorig:{S}ToeBase", "mixamorig:{S}Shoulder", "mixamorig:{S}Arm", "mixamorig:{S}ForeArm",
                "mixamorig:{S}Hand", "mixamorig:{S}HandMiddle1", "mixamorig:{S}HandMiddle2",
                "mixamorig:{S}HandThumb1"],
               ["mixamorig:Hips", "mixamorig:Spine", "mixamorig:Spine1", "mixamorig:Spine2", "mixamorig:Neck",
                "mixamorig:Neck1", "mixamorig:Head"], {"left": "Left", "right": "Right"}),
    "rigify": (["DEF-pelvis.{S}", "DEF-thigh.{S}", "DEF-shin.{S}", "DEF-foot.{S}", "DEF-toe.{S}",
                "DEF-shoulder.{S}", "DEF-upper_arm.{S}", "DEF-forearm.{S}", "DEF-hand.{S}",
                "DEF-f_middle.01.{S}", "DEF-f_middle.02.{S}", "DEF-thumb.01.{S}"],
               ["DEF-spine", "DEF-spine.001", "DEF-spine.002", "DEF-spine.003", "DEF-spine.004", "DEF-spine.005",
                "DEF-spine.006"], {"left": "L", "right": "R"}),
    "unreal": (["hip_{S}", "thigh_{S}", "calf_{S}", "foot_{S}", "ball_{S}", "clavicle_{S}", "upperarm_{S}",
                "lowerarm_{S}", "hand_{S}", "middle_01_{S}", "middle_02_{S}", "thumb_01_{S}"],
               ["pelvis", "spine_01", "spine_02", "spine_03", "neck_01", "neck_02", "head"],
               {"left": "l", "right": "r"}),
    "smpl": (["{S}_HipJoint", "{S}_Hip", "{S}_Knee", "{S}_Ankle", "{S}_Foot", "{S}_Collar", "{S}_Shoulder",
              "{S}_Elbow", "{S}_Wrist", "{S}_Hand", "{S}_Fingers", "{S}_Thumb"],
             ["Pelvis", "Spine1", "Spine2", "Spine3", "Neck", "Neck2", "Head"], {"left": "L", "right": "R"}),
    "biped": (["Bip01_{S}_Hip", "Bip01_{S}_Thigh", "Bip01_{S}_Calf", "Bip01_{S}_Foot", "Bip01_{S}_Toe0",
               "Bip01_{S}_Clavicle", "Bip01_{S}_UpperArm", "Bip01_{S}_Forearm", "Bip01_{S}_Hand",
               "Bip01_{S}_Finger2", "Bip01_{S}_Finger21", "Bip01_{S}_Finger0"],
              ["Bip01_Pelvis", "Bip01_Spine", "Bip01_Spine1", "Bip01_Spine2", "Bip01_Neck", "Bip01_Neck1",
               "Bip01_Head"], {"left": "L", "right": "R"}),
    "simulation": (["{S}_hip_joint", "{S}_hip", "{S}_knee", "{S}_ankle", "{S}_toe", "{S}_clavicle",
                    "{S}_shoulder", "{S}_elbow", "{S}_wrist", "{S}_hand", "{S}_fingers", "{S}_thumb"],
                   ["pelvis", "abdomen", "chest", "upper_chest", "neck", "neck_upper", "head"],
                   {"left": "left", "right": "right"}),
}


def convention_names(convention: str) -> dict[str, str]:
    """CMU bone name -> the same bone's name under `convention`."""
    sided, centre, sides = CONVENTIONS[convention]
    out = dict(zip(_CENTRE, centre))
    cmu = {"left": lambda b: ("L" + b if b in ("HipJoint", "Fingers", "Thumb") else "l" + b if b == "hand"
                              else "Left" + b),
           "right": lambda b: ("R" + b if b in ("HipJoint", "Fingers", "Thumb") else "r" + b if b == "hand"
                               else "Right" + b)}
    for side in ("left", "right"):
        for bone, theirs in zip(_CMU_SIDED, sided):
            out[cmu[side](bone)] = theirs.replace("{S}", sides[side])
    return out


def cmu_extra_bones(clip: BVHClip) -> BVHClip:
    """Twist bones on both upper arms, an extra finger, foot IK targets under the root (placed at the
    rest feet, so they ride with the hips) and a long prop in the right hand."""
    off = {n: np.asarray(o, float) for n, o in zip(clip.names, clip.offsets)}
    extra = []
    for s, side in (("L", "Left"), ("R", "Right")):
        extra.append((f"{side}ArmTwist", f"{side}Shoulder", 0.5 * off[f"{side}Elbow"]))
        extra.append((f"{side}ForeArmTwist", f"{side}Elbow", 0.5 * off[f"{side}Wrist"]))
        foot = off[f"{s}HipJoint"] + off[f"{side}Hip"] + off[f"{side}Knee"] + off[f"{side}Ankle"]
        extra.append((f"ik_foot_{s.lower()}", "Hips", foot))
    extra.append(("LIndex1", "lhand", 0.5 * off["LFingers"] + [0, 0, 0.01]))
    extra.append(("prop_sword", "RightWrist", np.array([0.0, 0.0, 0.6])))
    return with_extra_bones(clip, extra)


def ground_root(clip: BVHClip, name: str = "Reference") -> BVHClip:
    """A new root bone on the floor under the hips (game rigs have one): it follows them
    horizontally and turns with their heading; the hips become its child and every joint
    stays where it was on every frame. The file's root rotation then only turns."""
    from core.motion.joint_tree import forward_kinematics

    t, r = _local(clip)
    heads, rots = forward_kinematics(clip.parents, t, r)  # file axes: Y up, CMU faces +Z
    hips = heads[:, 0]
    facing = rots[:, 0] @ np.array([0.0, 0.0, 1.0])
    turn = Rotation.from_rotvec(np.arctan2(facing[:, 0], facing[:, 2])[:, None] * [0.0, 1.0, 0.0]).as_matrix()
    floor = hips.copy()
    floor[:, 1] = heads[..., 1].min()
    new_t = np.concatenate([floor[:, None], np.einsum("fji,fj->fi", turn, hips - floor)[:, None], t[:, 1:]], axis=1)
    new_r = np.concatenate([turn[:, None], (np.swapaxes(turn, 1, 2) @ rots[:, 0])[:, None], r[:, 1:]], axis=1)
    offsets = np.concatenate([np.zeros((1, 3)), np.asarray(clip.offsets, float)])
    offsets[1] = [0.0, float(np.mean(hips[:, 1] - floor[:, 1])), 0.0]
    parents = np.array([-1] + [int(p) + 1 if p >= 0 else 0 for p in clip.parents])
    channels = [["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"], *clip.channels]
    ends = {j + 1: v for j, v in clip.end_sites.items()}
    grown = dataclasses.replace(clip, names=[name, *clip.names], parents=parents, channels=channels)
    return _with_motion(grown, offsets, ends, new_t, new_r, len(t), len(clip.names) + 1)


def without(clip: BVHClip, roots: set[str]) -> BVHClip:
    """The clip without the joints named in `roots` and everything below them (legs off an
    upper-body capture, a hand off an arm); a parent left without children ends where the
    first removed child began."""
    gone: set[int] = set()
    for j, p in enumerate(clip.parents):  # parents come before their children in a BVH
        if clip.names[j] in roots or (p >= 0 and p in gone):
            gone.add(j)
    keep = [j for j in range(len(clip.names)) if j not in gone]
    index = {j: i for i, j in enumerate(keep)}
    t, r = _local(clip)
    ends = {index[j]: v for j, v in clip.end_sites.items() if j in index}
    for j in sorted(gone):
        p = int(clip.parents[j])
        if p in index and index[p] not in ends:
            ends[index[p]] = np.asarray(clip.offsets[j], float)
    kept = dataclasses.replace(clip, names=[clip.names[j] for j in keep], channels=[clip.channels[j] for j in keep],
                               parents=np.array([index[int(clip.parents[j])] if clip.parents[j] >= 0 else -1
                                                 for j in keep]))
    return _with_motion(kept, np.array([clip.offsets[j] for j in keep], float), ends, t[:, keep], r[:, keep],
                        len(t), len(keep))


# ------------------------------------------- third sweep: other skeleton layouts ---

def rested_everywhere(clip: BVHClip, seed: int = 0, max_deg: float = 60.0) -> BVHClip:
    """Every joint, the root too, with its own turned rest frame (OFFSETs turned, channels
    compensating): no bone's zero rotation means what the file's did."""
    rng = np.random.default_rng(seed)
    turns = {name: Rotation.from_rotvec(rng.normal(size=3) / np.sqrt(3) * np.radians(max_deg)).as_matrix()
             for name in clip.names}
    return rerest(clip, turns)


def floor_root(clip: BVHClip, name: str = "Root") -> BVHClip:
    """A "Root" bone on the floor below the hips that carries the clip's position channels; the
    hips keep only their rotation channels, at a fixed height above it."""
    t, r = _local(clip)
    height = float(np.mean(t[:, 0, 1]))
    lift = np.array([0.0, height, 0.0])
    new_t = np.concatenate([(t[:, 0] - lift)[:, None], np.broadcast_to(lift, (len(t), 1, 3)), t[:, 1:]], axis=1)
    new_r = np.concatenate([np.broadcast_to(np.eye(3), (len(t), 1, 3, 3)), r], axis=1)
    offsets = np.concatenate([np.zeros((1, 3)), np.asarray(clip.offsets, float)])
    offsets[1] = lift
    parents = np.array([-1] + [int(p) + 1 if p >= 0 else 0 for p in clip.parents])
    grown = dataclasses.replace(clip, names=[name, *clip.names], parents=parents,
                                channels=[["Xposition", "Yposition", "Zposition"], *clip.channels])
    positions = [True] + [False] * len(clip.names)
    return _with_motion(grown, offsets, {j + 1: v for j, v in clip.end_sites.items()}, new_t, new_r, len(t),
                        len(clip.names) + 1, positions)


def inserted(clip: BVHClip, child: str, name: str, fraction: float = 0.5, twist_deg: float = 0.0) -> BVHClip:
    """A joint `name` inserted between `child` and its parent at `fraction` of the bone (a twist
    bone): it turns about the bone by `twist_deg` times a slow sine and `child` turns back, so
    every head stays where it was."""
    c = clip.names.index(child)
    t, r = _local(clip)
    frames = len(t)
    length = np.linalg.norm(clip.offsets[c])
    axis = np.asarray(clip.offsets[c], float) / length if length > 0 else np.zeros(3)  # no twist on no bone
    angle = np.radians(twist_deg) * np.sin(np.linspace(0.0, 2.0 * np.pi, frames))
    twist = Rotation.from_rotvec(angle[:, None] * axis).as_matrix()
    names = clip.names[:c] + [name] + clip.names[c:]
    old_parents = [int(p) for p in clip.parents]
    parents = [(p if p < c else p + 1) if p >= 0 else -1 for p in old_parents]
    parents = parents[:c] + [parents[c]] + [c] + parents[c + 1:]
    offsets = np.asarray(clip.offsets, float)
    offsets = np.concatenate([offsets[:c], [fraction * offsets[c]], [(1 - fraction) * offsets[c]], offsets[c + 1:]])
    new_t = np.concatenate([t[:, :c], fraction * t[:, c:c + 1], (1 - fraction) * t[:, c:c + 1], t[:, c + 1:]], axis=1)
    r_child = np.swapaxes(twist, 1, 2) @ r[:, c]
    new_r = np.concatenate([r[:, :c], twist[:, None], r_child[:, None], r[:, c + 1:]], axis=1)
    ends = {(j if j < c else j + 1): v for j, v in clip.end_sites.items()}
    channels = clip.channels[:c] + [["Zrotation", "Xrotation", "Yrotation"]] + clip.channels[c:]
    grown = dataclasses.replace(clip, names=names, parents=np.array(parents), channels=channels)
    return _with_motion(grown, offsets, ends, new_t, new_r, frames, len(names))


def merged(clip: BVHClip, gone: set[str]) -> BVHClip:
    """The joints named in `gone` removed and their children hung from the nearest joint kept
    (a spine of fewer segments): those children get position channels carrying what the removed
    joints did, so every kept head stays where it was on every frame."""
    t, r = _local(clip)
    keep = [j for j, n in enumerate(clip.names) if n not in gone]
    index = {j: i for i, j in enumerate(keep)}
    new_t, new_r = t.copy(), r.copy()
    offsets = np.asarray(clip.offsets, float).copy()
    parents, positions = [], []
    for j in keep:
        p, moved = int(clip.parents[j]), any(c.endswith("position") for c in clip.channels[j])
        while p >= 0 and clip.names[p] in gone:  # compose the removed parent into this joint
            new_t[:, j] = t[:, p] + np.einsum("fab,fb->fa", r[:, p], new_t[:, j])
            new_r[:, j] = r[:, p] @ new_r[:, j]
            offsets[j] = offsets[p] + offsets[j]
            p, moved = int(clip.parents[p]), True
        parents.append(index[p] if p >= 0 else -1)
        positions.append(moved)
    ends = {index[j]: v for j, v in clip.end_sites.items() if j in index}
    kept = dataclasses.replace(clip, names=[clip.names[j] for j in keep], parents=np.array(parents),
                               channels=[clip.channels[j] for j in keep])
    return _with_motion(kept, offsets[keep], ends, new_t[:, keep], new_r[:, keep], len(t), len(keep), positions)


def resampled(clip: BVHClip, fps: float) -> BVHClip:
    """The clip at another frame rate over the same time span: positions interpolated linearly,
    rotations by slerp, joint by joint."""
    from scipy.spatial.transform import Slerp

    t, r = _local(clip)
    times = np.arange(clip.frames) * clip.frame_time
    new_times = np.arange(0.0, times[-1] + 1e-9, 1.0 / fps)
    new_t = np.stack([np.stack([np.interp(new_times, times, t[:, j, a]) for a in range(3)], axis=-1)
                      for j in range(len(clip.names))], axis=1)
    new_r = np.stack([Slerp(times, Rotation.from_matrix(r[:, j]))(new_times).as_matrix()
                      for j in range(len(clip.names))], axis=1)
    out = _with_motion(clip, np.asarray(clip.offsets, float), clip.end_sites, new_t, new_r, len(new_times),
                       len(clip.names))
    return dataclasses.replace(out, frame_time=1.0 / fps)


def rest_pose_first(clip: BVHClip, frames: int) -> BVHClip:
    """`frames` frames of the file's rest pose (the CMU T-pose) standing where the clip starts,
    before the clip: exporters write a calibration pose first."""
    t, r = _local(clip)
    still_t = np.repeat(np.asarray(clip.offsets, float)[None], frames, axis=0)
    still_t[:, 0] = t[0, 0]
    still_r = np.repeat(np.eye(3)[None, None], frames, axis=0).repeat(len(clip.names), axis=1)
    still_r[:, 0] = r[0, 0]
    return _with_motion(clip, np.asarray(clip.offsets, float), clip.end_sites, np.concatenate([still_t, t]),
                        np.concatenate([still_r, r]), frames + len(t), len(clip.names))


def mirrored_name(name: str) -> str:
    """CMU's side words swapped: LeftHip <-> RightHip, LHipJoint <-> RHipJoint, lhand <-> rhand."""
    for a, b in (("Left", "Right"), ("Right", "Left"), ("L", "R"), ("R", "L"), ("l", "r"), ("r", "l")):
        if name.startswith(a) and (len(a) > 1 or name[1:2].isupper() or name[1:] == "hand"):
            return b + name[len(a):]
    return name


def mirrored_motion(motion: SourceMotion) -> SourceMotion:
    """The clip seen in a mirror: world x negated, left and right names swapped (a left-footed actor)."""
    flip = np.diag([-1.0, 1.0, 1.0])
    names = [mirrored_name(n) for n in motion.bone_names]
    assert sorted(names) == sorted(motion.bone_names), "a side word this helper does not know"
    return SourceMotion(names, motion.parents, motion.heads @ flip, motion.tails @ flip,
                        flip @ motion.root_rotation @ flip, motion.rest_heads @ flip, motion.rest_tails @ flip,
                        flip @ motion.rest_root_rotation @ flip, motion.fps, f"{motion.name}_mirrored")
