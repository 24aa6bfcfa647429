"""How a URDF robot becomes a Blender armature that describes itself.

Pure numpy: this module decides the bones, their rest matrices and which
pose channel carries each joint; operators/import_urdf.py only builds what
it is told.

Layout rules
------------
* One bone per *body*: the root link plus every link whose parent joint is
  movable (revolute, continuous, prismatic; mimic joints included). Links
  hanging below a body through fixed joints (and the unsupported floating /
  planar types, which the kinematic tree treats as fixed) are merged into
  that body's bone; their meshes ride on it with the constant zero-pose
  offset listed in ``RigBone.merged_links``.
* Bone rest matrix ``M = T_link_zero @ [B]``: the link's frame at q = 0 with
  a constant axis change ``B`` (3x3 rotation, stored as ``RigBone.axis_change``)
  whose first column is the joint axis. So the bone's local X *is* the joint
  axis, local Y points at the first child body's origin (orthogonalised
  against X; fallbacks below) and Z = X x Y.
* Joint value q maps to exactly one channel: revolute/continuous ->
  ``rotation_euler[0]`` (rotation mode 'XYZ'), prismatic -> ``location[0]``.

Why that reproduces the robot: Blender poses a bone as
``pose = parent_pose @ (parent_rest^-1 @ rest) @ basis``. With
``rest = T0 @ B`` and, by induction, ``parent_pose = T_parent(q) @ B_parent``:
``pose = T_parent(q) @ (T0_parent^-1 @ T0) @ B @ basis``. The middle factor is
the constant chain of fixed offsets and the joint origin, and
``B @ Rx(q) = R(axis, q) @ B`` (B maps local X onto the axis), so
``pose = T_parent(q) @ offsets @ R(axis, q) @ B = T_link(q) @ B``. The same
holds for a prismatic slide along local X.

The root bone (rotation mode 'QUATERNION') carries the robot's root pose:
for a root link world transform T (armature object at identity) its local
pose is ``P = M0^-1 @ T @ [B0]``; see root_pose_to_bone.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .kinematics import FIXED, KinematicTree
from .transforms import invert_transform, matrix_to_quat, quat_continuous, quat_to_matrix

MIN_LENGTH = 0.02        # metres; shorter bones are hard to see and pick
ROOT_LENGTH = 0.15       # root bone length when it has no child body
_PERP_EPS = 1e-4         # metres; closer points give no usable Y direction
MAX_NAME_BYTES = 63      # Blender's bone name limit (64 bytes with the NUL)


@dataclass(eq=False)
class RigBone:
    """One bone of the robot rig (one body of the robot)."""

    name: str                 # = the body link's name (clipped to Blender's limit)
    parent: str | None
    link: int                 # KinematicTree link index
    joint: str | None         # movable joint name (None for the root)
    kind: str                 # 'root' | 'revolute' | 'continuous' | 'prismatic'
    matrix: np.ndarray        # (4,4) rest matrix in armature space
    length: float             # metres, >= MIN_LENGTH
    lower: float | None
    upper: float | None
    velocity: float | None
    effort: float | None
    axis: np.ndarray          # joint axis in the link frame (URDF)
    merged_links: list[tuple[str, np.ndarray]] = field(default_factory=list)
    axis_change: np.ndarray = field(default_factory=lambda: np.eye(3))  # B
    link_name: str = ""       # full URDF link name (name may be clipped)
    mimic: tuple[str, float, float] | None = None  # (leader joint, multiplier, offset)

    @property
    def channel(self) -> tuple[str, int] | None:
        """(pose bone property, index) carrying the joint value; None for the root."""
        if self.kind == "root":
            return None
        return ("location" if self.kind == "prismatic" else "rotation_euler", 0)

    @property
    def link_matrix(self) -> np.ndarray:
        """(4,4) zero-pose link frame in armature space (rest matrix without B)."""
        out = self.matrix.copy()
        out[:3, :3] = self.matrix[:3, :3] @ self.axis_change.T
        return out


@dataclass(eq=False)
class RigLayout:
    bones: list[RigBone]                          # parents before children
    joint_channels: list[tuple[str, str, int]]    # per q column: (bone, property, index)
    robot_name: str = ""
    _by_name: dict[str, RigBone] = field(init=False, repr=False, default_factory=dict)
    _by_link: dict[str, RigBone] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._by_name = {b.name: b for b in self.bones}
        for bone in self.bones:
            for link, _ in bone.merged_links:
                self._by_link[link] = bone

    @property
    def root(self) -> RigBone:
        return self.bones[0]

    def bone(self, name: str) -> RigBone:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"robot rig {self.robot_name!r} has no bone {name!r}") from None

    def bone_of_link(self, link: str) -> RigBone:
        """The bone a URDF link rides on (its own, or the body it is merged into)."""
        try:
            return self._by_link[link]
        except KeyError:
            raise KeyError(f"robot rig {self.robot_name!r} has no link {link!r}") from None


# ------------------------------------------------------------------ layout ---

def _clip_name(name: str, taken: set[str]) -> str:
    """`name` cut to Blender's byte limit and made unique among `taken`."""
    def clip(text: str, limit: int) -> str:
        data = text.encode("utf-8")[:limit]
        return data.decode("utf-8", errors="ignore")

    out = clip(name, MAX_NAME_BYTES)
    k = 1
    while out in taken:
        suffix = f".{k:03d}"
        out = clip(name, MAX_NAME_BYTES - len(suffix)) + suffix
        k += 1
    taken.add(out)
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _perpendicular(x: np.ndarray, v: np.ndarray) -> np.ndarray | None:
    """Unit component of v perpendicular to unit x, None if (nearly) parallel."""
    p = v - x * float(x @ v)
    n = float(np.linalg.norm(p))
    return p / n if n > _PERP_EPS * max(1.0, float(np.linalg.norm(v))) else None


def _axis_change(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rotation whose columns are X, Y (made orthogonal to X) and X x Y."""
    x = _unit(x)
    y = _unit(y - x * float(x @ y))
    return np.column_stack([x, y, np.cross(x, y)])


def _any_perpendicular(x: np.ndarray, hint: np.ndarray | None) -> np.ndarray:
    """`hint` made perpendicular to x when possible, else the least aligned basis axis."""
    if hint is not None:
        p = _perpendicular(x, hint)
        if p is not None:
            return p
    basis = np.eye(3)
    return _perpendicular(x, basis[int(np.argmin(np.abs(x)))])


@dataclass
class _Bodies:
    """The robot's links grouped into bodies (a moving link and the links fixed to it), parents first."""

    body_of: np.ndarray  # (links,) each link's body
    bodies: list[int]
    children: dict[int, list[int]]  # each body's child bodies
    descendants: dict[int, list[int]]  # breadth-first: nearer descendants first
    merged: dict[int, list[int]]  # each body's links


def _bodies(tree: KinematicTree) -> _Bodies:
    n = len(tree.link_names)
    is_body = [i == 0 or tree.kind[i] != FIXED for i in range(n)]
    body_of = np.zeros(n, dtype=int)
    for i in range(1, n):  # parents come first in link_names
        body_of[i] = i if is_body[i] else body_of[tree.parent[i]]
    bodies = [i for i in range(n) if is_body[i]]
    children = {b: [c for c in bodies if c and body_of[tree.parent[c]] == b] for b in bodies}
    descendants = {b: [] for b in bodies}
    for c in bodies[1:]:
        a = body_of[tree.parent[c]]
        while True:
            descendants[a].append(c)
            if a == 0:
                break
            a = body_of[tree.parent[a]]
    merged = {b: [] for b in bodies}
    for i in range(n):
        merged[body_of[i]].append(i)
    return _Bodies(body_of, bodies, children, descendants, merged)


def _bone_axes(tree: KinematicTree, zero: np.ndarray, groups: _Bodies, b: int, y_dir: dict[int, np.ndarray],
               lengths: dict[int, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Body b's bone X (its joint axis), Y (toward what hangs from it), the joint axis and the bone's length."""
    t0 = zero[b]
    if b == 0:
        # Root: an upright bone like Blender's default one (X = link X, Y = link Z),
        # long enough to reach the farthest child body, within reason.
        reach = [float(np.linalg.norm(zero[c][:3, 3] - t0[:3, 3])) for c in groups.children[b]]
        length = min(max(reach), 1.0) if reach else ROOT_LENGTH
        return np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]), np.zeros(3), length
    inv = invert_transform(t0)
    x = _unit(tree.axes[b])
    # Y toward the first child body; then deeper bodies, then merged fixed links.
    targets = groups.children[b] + [d for d in groups.descendants[b] if d not in groups.children[b]]
    targets += [m for m in groups.merged[b] if m != b]
    for c in targets:
        local = inv[:3, :3] @ zero[c][:3, 3] + inv[:3, 3]
        y = _perpendicular(x, local)
        if y is not None:
            return x, y, tree.axes[b].copy(), float(np.linalg.norm(local))
    parent_body = groups.body_of[tree.parent[b]]  # a leaf: continue the parent bone's direction
    return (x, _any_perpendicular(x, t0[:3, :3].T @ y_dir[parent_body]), tree.axes[b].copy(),
            0.5 * lengths[parent_body])


def _rig_bone(tree: KinematicTree, zero: np.ndarray, groups: _Bodies, names: dict[int, str], b: int,
              rest: np.ndarray, basis: np.ndarray, axis: np.ndarray, length: float) -> RigBone:
    joint = tree.joint_of_link[b]
    if b == 0:
        kind, lim = "root", (None, None, None, None)
    else:
        kind = joint.type  # a body's joint is revolute, continuous or prismatic
        lim = (joint.lower, joint.upper, joint.velocity, joint.effort)
    mimic = None
    if joint is not None and joint.mimic is not None:
        mimic = (joint.mimic.joint, float(joint.mimic.multiplier), float(joint.mimic.offset))
    inv = invert_transform(zero[b])
    return RigBone(
        name=names[b],
        parent=None if b == 0 else names[groups.body_of[tree.parent[b]]],
        link=b,
        joint=None if b == 0 else joint.name,
        kind=kind,
        matrix=rest,
        length=length,
        lower=lim[0], upper=lim[1], velocity=lim[2], effort=lim[3],
        axis=axis,
        merged_links=[(tree.link_names[m], np.eye(4) if m == b else inv @ zero[m]) for m in groups.merged[b]],
        axis_change=basis,
        link_name=tree.link_names[b],
        mimic=mimic,
    )


def rig_layout(tree: KinematicTree) -> RigLayout:
    """Bones, rest matrices and joint channels for a robot (see module docstring)."""
    zero = tree.zero_pose()
    groups = _bodies(tree)
    taken: set[str] = set()
    names = {b: _clip_name(tree.link_names[b], taken) for b in groups.bodies}
    bones: list[RigBone] = []
    y_dir: dict[int, np.ndarray] = {}  # bone Y in armature space, for leaf fallbacks
    lengths: dict[int, float] = {}
    for b in groups.bodies:
        x, y, axis, length = _bone_axes(tree, zero, groups, b, y_dir, lengths)
        length = max(MIN_LENGTH, float(length))
        basis = _axis_change(x, y)
        rest = zero[b].copy()
        rest[:3, :3] = zero[b][:3, :3] @ basis
        y_dir[b], lengths[b] = rest[:3, 1], length
        bones.append(_rig_bone(tree, zero, groups, names, b, rest, basis, axis, length))
    by_joint = {bone.joint: bone for bone in bones if bone.joint is not None}
    channels = []
    for jname in tree.joint_names:
        bone = by_joint[jname]
        prop, index = bone.channel
        channels.append((bone.name, prop, index))
    return RigLayout(bones, channels, tree.robot.name)


# ---------------------------------------------------------------- root pose ---

def _bone_b4(bone: RigBone) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = bone.axis_change
    return out


def root_pose_to_bone(layout: RigLayout, root_position, root_rotation):
    """Root bone pose channels for root link world poses (armature at identity).

    root_position (F, 3), root_rotation (F, 3, 3) -> location (F, 3) and
    quaternion (F, 4) wxyz, sign-continuous along the frames.
    """
    pos = np.asarray(root_position, dtype=float).reshape(-1, 3)
    rot = np.asarray(root_rotation, dtype=float).reshape(-1, 3, 3)
    root = layout.root
    world = np.broadcast_to(np.eye(4), (len(pos), 4, 4)).copy()
    world[:, :3, :3] = rot
    world[:, :3, 3] = pos
    local = invert_transform(root.matrix) @ world @ _bone_b4(root)
    return local[:, :3, 3].copy(), quat_continuous(matrix_to_quat(local[:, :3, :3]))


def bone_to_root_pose(layout: RigLayout, location, quaternion):
    """Inverse of root_pose_to_bone: (F, 3) root positions and (F, 3, 3) rotations."""
    loc = np.asarray(location, dtype=float).reshape(-1, 3)
    quat = np.asarray(quaternion, dtype=float).reshape(-1, 4)
    root = layout.root
    local = np.broadcast_to(np.eye(4), (len(loc), 4, 4)).copy()
    local[:, :3, :3] = quat_to_matrix(quat)
    local[:, :3, 3] = loc
    world = root.matrix @ local @ _bone_b4(root).T
    return world[:, :3, 3].copy(), world[:, :3, :3].copy()


def link_matrix_from_bone(bone: RigBone, bone_pose_matrix) -> np.ndarray:
    """Armature-space link frame(s) (..., 4, 4) from posed bone matrices (undo B)."""
    m = np.asarray(bone_pose_matrix, dtype=float)
    out = m.copy()
    out[..., :3, :3] = m[..., :3, :3] @ bone.axis_change.T
    return out
