"""Orient Waypoints: rotation keys at the location keys of an object or a pose bone.

An IK target keyed only where it goes gets, at each of its keyed frames, the
orientation of core.waypoints.orientations.waypoint_orientations: the first and last keys
keep the rotation they have; the keys between blend the interpolated and the
optimal orientation. Positions and rotations are taken in the space the keys
live in (the parent space of an object, the rest space of a bone), where
directions compare as in the world as long as that space does not move.
In mechanism mode the keyed object stands for a robot rig's tip link (its
frame is the link's frame); keys are taken into the rig's root-link frame as
both stand at the current frame.

Blender notes (bpy 5.0.1): keys are read from and written to the action
slot's channelbag (operators/anim_io.py); Euler keys are made continuous
with mathutils' to_euler(order, compat) so no key jumps by 2 pi.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, FloatProperty, FloatVectorProperty, IntProperty, StringProperty
from bpy_extras.anim_utils import action_get_channelbag_for_slot
from mathutils import Euler, Matrix, Quaternion

from ..core.waypoints import mechanism
from ..core.model.rig import rig_layout
from ..core.model.transforms import matrix_to_quat, quat_continuous
from ..core.waypoints.optimum import StateBlend, waypoint_orientations
from ..core.waypoints.orientations import euler_to_quat, quat_mul
from ..core.waypoints.table import build_table
from . import anim_io
from .common import reports_errors, tree_from_rig

LINKS = "robot_retarget_links"  # WindowManager list of the picked rig's links, for prop_search
CURVE_ITEMS = [
    ("BEZIER", "Bezier (Neighbours)", "Quadratic Bezier through the neighbouring keys, passing the key at r"),
    ("SPLINE", "Spline (All Keys)", "Natural cubic spline through all keys, by their times"),
    ("BSPLINE", "B-Spline (All Keys)", "Interpolating cubic B-spline through all keys, by their times"),
]
AXES = {"X": (1, 0, 0), "Y": (0, 1, 0), "Z": (0, 0, 1), "-X": (-1, 0, 0), "-Y": (0, -1, 0), "-Z": (0, 0, -1)}
CUSTOM_SAMPLES = 7  # interior samples of the custom blend curve at r = 1/8 ... 7/8
_ROTATION_PROPS = {"QUATERNION": ("rotation_quaternion", 4), "AXIS_ANGLE": ("rotation_axis_angle", 4)}
_CHAINS: dict = {}  # (tree, tip, gravity[, table settings]) -> MechanismChain / OrientationTable, per session


@dataclass
class OrientSettings:
    """What the redo panel sets; defaults match the operator's."""

    mode: str = "tangent"              # tangent | bisector | mechanism | tangent_mechanism
    blend: str = "parabola"            # parabola | bspline | custom
    max_blend: float = 1.0
    approach_axis: str = "AUTO"        # AUTO (+Z objects, +Y bones) or a key of AXES
    interpolation: str = "slerp"       # slerp | euler
    custom_curve: tuple = (0.4375, 0.75, 0.9375, 1.0, 0.9375, 0.75, 0.4375)
    robot: str = ""                    # mechanism: the robot rig object's name
    tip_link: str = ""                 # mechanism: URDF link that is the effector
    base_link: str = ""                # mechanism: link the arm hangs from (empty: the root)
    objective: str = "manipulability"  # mechanism: manipulability | gravity
    tangent_share: float = 0.0         # mechanism: weight of the tangent optimum in the mix
    use_table: bool = True
    table_resolution: int = 4
    curve: str = "bezier"              # tangents: bezier | spline | bspline (through all keys, by key times)
    distances: str = "path"            # ratio r: path (polyline) | arc (along the curve) | straight
    state_blend: bool = False          # mechanism: more of the optimum where the arm is at risk
    min_manipulability: float = 0.05
    limit_margin: float = 0.1


@dataclass
class OrientOutcome:
    frames: np.ndarray   # (F,) keyed frames that got rotation keys
    quats: np.ndarray    # (F, 4) wxyz orientations in the keys' space
    keys: int
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------ reading keys ---

def _target(obj: bpy.types.Object, bone: str | None):
    """(owner of the channels, data-path prefix, label) for an object or one of its pose bones."""
    if not bone:
        return obj, "", f"object {obj.name!r}"
    if obj.type != 'ARMATURE' or obj.pose is None or bone not in obj.pose.bones:
        raise KeyError(f"object {obj.name!r} has no pose bone {bone!r}")
    return obj.pose.bones[bone], f'pose.bones["{bpy.utils.escape_identifier(bone)}"].', f"bone {bone!r}"


def _action_slot(obj: bpy.types.Object):
    adt = obj.animation_data
    return (adt.action, adt.action_slot) if adt is not None else (None, None)


def _fcurves(obj: bpy.types.Object, path: str, count: int):
    """The action, slot and the `count` F-curves (None where missing) of one property."""
    action, slot = _action_slot(obj)
    bag = action_get_channelbag_for_slot(action, slot) if action is not None and slot is not None else None
    curves = [bag.fcurves.find(path, index=i) if bag is not None else None for i in range(count)]
    return action, slot, curves


def _location_keys(obj, owner, prefix: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Keyed frames (F,) of the location channels and the location (F, 3) at each."""
    action, slot, curves = _fcurves(obj, prefix + "location", 3)
    present = [i for i, c in enumerate(curves) if c is not None and len(c.keyframe_points)]
    if not present:
        raise ValueError(f"{label} has no location keys: key where it goes at 3 or more frames first")
    keyed = {i: anim_io.read_channels(action, slot, [(prefix + "location", i)]) for i in present}
    frames = np.unique(np.concatenate([keyed[i][0] for i in present]))
    if frames.size < 3:
        raise ValueError(f"{label} has {frames.size} location key(s); orienting waypoints needs at least 3 "
                         "(start, one or more via points, end)")
    positions = np.empty((frames.size, 3))
    for i in range(3):
        if i in keyed and np.array_equal(keyed[i][0], frames):
            positions[:, i] = keyed[i][1][:, 0]
        elif curves[i] is not None:
            positions[:, i] = [curves[i].evaluate(f) for f in frames]
        else:
            positions[:, i] = owner.location[i]
    if np.ptp(positions, axis=0).max() < 1e-6:
        raise ValueError(f"all location keys of {label} are at the same place (coincident points): "
                         "there is no path to orient along")
    return frames, positions


def _rotation_values(obj, owner, prefix: str, mode: str, frame: float) -> np.ndarray:
    """The rotation channel values (as stored for `mode`) at `frame`: keyed, else the current value."""
    prop, count = _ROTATION_PROPS.get(mode, ("rotation_euler", 3))
    _, _, curves = _fcurves(obj, prefix + prop, count)
    current = getattr(owner, prop)
    return np.array([c.evaluate(frame) if c is not None and len(c.keyframe_points) else current[i]
                     for i, c in enumerate(curves)])


def _to_quat(values: np.ndarray, mode: str) -> np.ndarray:
    if mode == "QUATERNION":
        if np.linalg.norm(values) < 1e-12:
            raise ValueError("the rotation quaternion at the first or last key is zero")
        return values / np.linalg.norm(values)
    if mode == "AXIS_ANGLE":
        return np.array(Quaternion(values[1:], values[0]))
    return euler_to_quat(values, mode)


# --------------------------------------------------------------- mechanism ---

def keys_space(obj, owner):
    """World matrix (mathutils) of the space the location keys of an object (its parent space) or a pose
    bone (its rest space) live in."""
    basis = owner.matrix_basis.inverted_safe()
    return obj.matrix_world @ (owner.matrix @ basis if owner is not obj else basis)


def rigid(matrix) -> np.ndarray:
    """(4, 4) array of a mathutils matrix with its scale removed (the nearest rotation)."""
    out = np.array(matrix)
    u, _, vt = np.linalg.svd(out[:3, :3])
    out[:3, :3] = u @ vt
    return out


def _robot_frame(obj, owner, robot: bpy.types.Object, tree) -> tuple[np.ndarray, np.ndarray]:
    """(4, 4) from the keys' space to the robot's root-link frame (scale removed, at the
    current frame) and world gravity (3,) m/s^2 in that root-link frame."""
    layout_root = rig_layout(tree).root
    root = robot.pose.bones.get(layout_root.name) if robot.pose else None
    b0 = Matrix(layout_root.axis_change.tolist()).to_4x4()
    base = robot.matrix_world @ (root.matrix @ b0.transposed() if root is not None else Matrix())
    return rigid(base.inverted_safe() @ keys_space(obj, owner)), rigid(base)[:3, :3].T @ np.array(mechanism.GRAVITY)


def _mechanism_options(settings: OrientSettings, tree, positions: np.ndarray, gravity: np.ndarray) -> dict:
    """chain (and table over the keys' box) for mechanism mode, cached for redo-panel reruns."""
    if not settings.tip_link:
        raise ValueError("mechanism mode needs Tip Link: the URDF link that is the effector "
                         f"(one of {', '.join(tree.link_names[-4:])}, ...)")
    key = (tree, settings.tip_link, settings.base_link, tuple(np.round(gravity, 6)))  # the tree: its id is never reused
    chain = _CHAINS.get(key)
    if chain is None:
        chain = mechanism.make_chain(tree, settings.tip_link, settings.base_link or None, gravity=gravity)
        _CHAINS.clear()
        _CHAINS[key] = chain
    options = {"chain": chain, "objective": settings.objective}
    if settings.use_table:
        box = np.stack([positions.min(axis=0), positions.max(axis=0)]) + [[-0.05], [0.05]]
        tkey = key + (settings.objective, settings.table_resolution, tuple(np.round(box, 4).ravel()))
        if tkey not in _CHAINS:
            _CHAINS[tkey] = build_table(chain, settings.objective, settings.table_resolution, box)
        options["table"] = _CHAINS[tkey]
    return options


def _solve(settings: OrientSettings, positions, q_start, q_end, axis, euler, mechanism_frame, frames, fps, notes):
    """Core call; in mechanism mode in the robot's frame (frame = (matrix (4,4), tree, gravity)).
    Via keys the robot cannot reach are named in `notes` with their frame."""
    options = {"interpolation": settings.interpolation, "curve": settings.curve, "distances": settings.distances,
               "times": (frames - frames[0]) / fps}
    if settings.blend == "custom":
        options["blend_curve"] = [0.0, *settings.custom_curve, 0.0]
    if euler is not None:
        options.update(euler_order=euler[0], start_euler=euler[1], end_euler=euler[2])
    mode = settings.mode
    turn = np.array([1.0, 0.0, 0.0, 0.0])
    if mode in ("mechanism", "tangent_mechanism"):
        for name in ("start_euler", "end_euler"):  # keyed Euler angles mean nothing in the robot's frame
            options.pop(name, None)
        matrix, tree, gravity = mechanism_frame
        positions = positions @ matrix[:3, :3].T + matrix[:3, 3]
        turn = matrix_to_quat(matrix[:3, :3])
        q_start, q_end = quat_mul(turn, q_start), quat_mul(turn, q_end)
        options.update(_mechanism_options(settings, tree, positions, gravity))
        if settings.state_blend:
            options["state_blend"] = StateBlend(settings.min_manipulability, settings.limit_margin)
        out_of_reach = np.flatnonzero(~mechanism.reachable(options["chain"], positions[1:-1]))
        notes += [f"key at frame {frames[i + 1]:g} is out of the robot's reach: it keeps the "
                  f"{'tangent' if settings.mode == 'tangent_mechanism' else 'interpolated'} orientation"
                  for i in out_of_reach]
        share = settings.tangent_share
        mode = {settings.mode: 1.0 - share, "tangent": share} if share > 0 else settings.mode
    quats = waypoint_orientations(positions[0], q_start, positions[-1], q_end, positions[1:-1], mode=mode,
                                  blend=settings.blend, max_blend=settings.max_blend, approach_axis=axis,
                                  **options)
    return quat_mul(turn * [1, -1, -1, -1], quats)


# ------------------------------------------------------------------ public ---

def orient_waypoints(obj: bpy.types.Object, bone: str | None = None,
                     settings: OrientSettings | None = None) -> OrientOutcome:
    """Fill rotation keys at every location key of `obj` (or its pose bone `bone`).

    Raises ValueError / KeyError / URDFError with a message for the user;
    nothing is written then. Existing keys of the rotation channels are
    replaced (the first and last keep their orientation).
    """
    settings = settings or OrientSettings()
    owner, prefix, label = _target(obj, bone)
    frames, positions = _location_keys(obj, owner, prefix, label)
    mode, notes = owner.rotation_mode, []
    first = _rotation_values(obj, owner, prefix, mode, frames[0])
    last = _rotation_values(obj, owner, prefix, mode, frames[-1])
    q_start, q_end = _to_quat(first, mode), _to_quat(last, mode)
    euler = (mode, first, last) if mode not in _ROTATION_PROPS else None
    if settings.interpolation == "euler" and euler is None:
        notes.append(f"{label} rotates by {mode.lower().replace('_', ' ')}: Euler interpolation uses XYZ angles")
    axis = AXES[settings.approach_axis] if settings.approach_axis != "AUTO" else ((0, 1, 0) if bone else (0, 0, 1))
    frame = None
    if settings.mode in ("mechanism", "tangent_mechanism"):
        robot = bpy.data.objects.get(settings.robot)
        if robot is None or robot.type != 'ARMATURE':
            raise ValueError("mechanism mode needs Robot: a robot rig (File > Import > URDF Robot)")
        tree = tree_from_rig(robot)
        matrix, gravity = _robot_frame(obj, owner, robot, tree)
        frame = (matrix, tree, gravity)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    vias = _solve(settings, positions, q_start, q_end, axis, euler, frame, frames, fps, notes)
    quats = quat_continuous(np.vstack([q_start, vias, q_end]))
    if mode == "AXIS_ANGLE":
        owner.rotation_mode = mode = "QUATERNION"
        notes.append(f"{label}: rotation mode switched from Axis Angle to Quaternion")
    values = quats if mode == "QUATERNION" else _continuous_euler(quats, mode, first, last)
    prop = "rotation_quaternion" if mode == "QUATERNION" else "rotation_euler"
    group = bone or "Object Transforms"
    channels = [(prefix + prop, i, group) for i in range(values.shape[1])]
    action, slot = _action_slot(obj)
    keys = anim_io.write_channels(action, slot, channels, frames, values)
    return OrientOutcome(frames, quats, keys, notes)


def _continuous_euler(quats: np.ndarray, order: str, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Euler keys: the keyed ends as they were, each key between the closest to the one before."""
    out = np.empty((len(quats), 3))
    out[0], out[-1] = first, last
    previous = Euler(first, order)
    for i in range(1, len(quats) - 1):
        previous = Quaternion(quats[i]).to_euler(order, previous)
        out[i] = previous
    return out


# ---------------------------------------------------------------- operator ---

def rig_links(robot) -> list[str]:
    """The URDF links a robot rig's bones stand for (each bone's link, then the fixed links merged into it)."""
    names = []
    for pb in robot.pose.bones if robot is not None and robot.pose is not None else ():
        names += [pb.get("urdf_link", pb.name), *pb.get("urdf_merged_links", [])]
    return names


def picked_robot(operator, context):
    """The rig named in the operator's Robot, else the Robot tab's (None when neither is set)."""
    robot = bpy.data.objects.get(operator.robot) if operator.robot else None
    return robot if robot is not None else getattr(context.scene.robot_retarget, "robot", None)


def fill_links(context, robot) -> None:
    """Put the rig's links into the window manager's list that Tip Link and Base Link are picked from
    (prop_search cannot read a rig's custom properties, and draw() may not write)."""
    items = getattr(context.window_manager, LINKS)
    names = rig_links(robot)
    if [item.name for item in items] != names:
        items.clear()
        for name in names:
            items.add().name = name


def draw_links(layout, operator, context) -> None:
    """Tip Link and Base Link, picked from the rig's links."""
    for name in ("tip_link", "base_link"):
        layout.prop_search(operator, name, context.window_manager, LINKS, icon='BONE_DATA')


def _active_bone(context) -> str | None:
    bone = getattr(context, "active_pose_bone", None)
    return bone.name if context.mode == 'POSE' and bone is not None else None


class ROBOT_RETARGET_OT_orient_waypoints(bpy.types.Operator):
    """Key the rotation at each location key: interpolated between the first and last keys,
    turned toward the path (or the robot's best posture) between them"""

    bl_idname = "robot_retarget.orient_waypoints"
    bl_label = "Orient Waypoints"
    bl_options = {'REGISTER', 'UNDO'}

    bone: StringProperty(name="Bone", description="Pose bone to orient (empty: the active pose bone "
                         "in Pose Mode, else the object)")
    mode: EnumProperty(name="Mode", items=[
        ("TANGENT", "Tangent", "Approach axis along the path's tangent (a Bezier through the neighbours)"),
        ("BISECTOR", "Bisector", "Approach axis along the bisector of the incoming and outgoing directions"),
        ("MECHANISM", "Mechanism", "The orientation a robot chain holds best (manipulability or gravity)"),
        ("TANGENT_MECHANISM", "Tangent + Mechanism",
         "Approach axis along the tangent, the roll about it the robot chain holds best"),
    ], default="TANGENT")
    blend: EnumProperty(name="Blend", items=[
        ("PARABOLA", "Parabola", "u = 4 r (1 - r), r = share of the path done"),
        ("BSPLINE", "B-Spline Bump", "A smooth cubic B-spline bump, flat at both ends"),
        ("CUSTOM", "Custom", "The curve given by the samples below"),
    ], default="PARABOLA")
    max_blend: FloatProperty(name="Maximum", min=0.0, max=1.0, default=1.0, subtype='FACTOR',
                             description="How far the orientation turns toward the optimum at most")
    custom_curve: FloatVectorProperty(name="Curve", size=CUSTOM_SAMPLES, min=0.0, max=1.0,
                                      default=OrientSettings.custom_curve,
                                      description="Blend at r = 1/8 ... 7/8 (0 at both ends)")
    approach_axis: EnumProperty(name="Approach Axis", items=[
        ("AUTO", "Auto", "+Z for objects, +Y (the bone's axis) for bones"),
        *[(k, k if k.startswith("-") else "+" + k, f"Local {k} axis") for k in AXES]], default="AUTO")
    interpolation: EnumProperty(name="Interpolation", items=[
        ("SLERP", "Spherical", "Shortest-arc interpolation of the start and end orientations"),
        ("EULER", "Euler", "Linear interpolation of the keyed Euler angles"),
    ], default="SLERP")
    robot: StringProperty(name="Robot", description="Robot rig (imported URDF) for mechanism mode "
                          "(empty: the Robot tab's robot)")
    tip_link: StringProperty(name="Tip Link", description="URDF link the keyed object stands for")
    base_link: StringProperty(name="Base Link", description="Link the chain hangs from (empty: the robot's root)")
    objective: EnumProperty(name="Objective", items=[
        ("MANIPULABILITY", "Manipulability", "Stay far from singularities (Yoshikawa's measure)"),
        ("GRAVITY", "Gravity Torques", "Least squared joint torques holding the arm against gravity"),
    ], default="MANIPULABILITY")
    tangent_share: FloatProperty(name="Tangent Share", min=0.0, max=1.0, default=0.0, subtype='FACTOR',
                                 description="Mix the tangent orientation into the mechanism optimum")
    use_table: BoolProperty(name="Lookup Table", default=True,
                            description="Precompute the optimum on a grid around the keys, then interpolate")
    table_resolution: IntProperty(name="Grid", min=2, max=12, default=4, description="Grid points per axis")
    curve: EnumProperty(name="Tangent Curve", items=CURVE_ITEMS, default="BEZIER")
    distances: EnumProperty(name="Ratio", items=[
        ("PATH", "Along the Keys", "r from distances along the straight lines between the keys"),
        ("ARC", "Arc Length", "r from the arc length along the curve through all keys"),
        ("STRAIGHT", "Straight to the Ends", "r from the straight distances to the first and last key"),
    ], default="PATH")
    state_blend: BoolProperty(name="Blend by Robot State", default=False,
                              description="Turn further toward the optimum where the interpolated orientation "
                                          "brings the arm near a singularity or a joint limit")
    min_manipulability: FloatProperty(name="Singular Below", min=0.0, default=0.05,
                                      description="Manipulability (lengths in arm lengths) under which the arm "
                                                  "counts as near a singularity")
    limit_margin: FloatProperty(name="Limit Margin", min=0.0, max=0.5, default=0.1, subtype='FACTOR',
                                description="Share of a joint's range near its limit that counts as at risk")

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def draw(self, context):
        layout = self.layout
        for name in ("bone", "mode", "blend", "max_blend", "approach_axis", "interpolation", "curve", "distances"):
            layout.prop(self, name)
        if self.blend == "CUSTOM":
            layout.prop(self, "custom_curve")
        if self.mode in ("MECHANISM", "TANGENT_MECHANISM"):
            layout.prop_search(self, "robot", bpy.data, "objects")
            draw_links(layout, self, context)
            for name in ("objective", "tangent_share", "use_table", "table_resolution",
                         "state_blend", "min_manipulability", "limit_margin"):
                layout.prop(self, name)

    def settings(self) -> OrientSettings:
        return OrientSettings(
            mode=self.mode.lower(), blend=self.blend.lower(),
            max_blend=self.max_blend, approach_axis=self.approach_axis,
            interpolation=self.interpolation.lower(), custom_curve=tuple(self.custom_curve),
            robot=self.robot, tip_link=self.tip_link, base_link=self.base_link, objective=self.objective.lower(),
            tangent_share=self.tangent_share, use_table=self.use_table, table_resolution=self.table_resolution,
            curve=self.curve.lower(), distances=self.distances.lower(), state_blend=self.state_blend,
            min_manipulability=self.min_manipulability, limit_margin=self.limit_margin)

    def invoke(self, context, event):
        fill_links(context, picked_robot(self, context))  # before the redo panel draws
        return self.execute(context)

    @reports_errors
    def execute(self, context):
        obj = context.object
        bone = self.bone or _active_bone(context)
        robot = picked_robot(self, context)
        fill_links(context, robot)
        settings = self.settings()
        if not settings.robot and robot is not None:  # the Robot tab's rig
            settings.robot = robot.name
        outcome = orient_waypoints(obj, bone, settings)
        for note in outcome.notes:
            self.report({'INFO'}, note)
        label = f"bone {bone!r}" if bone else f"object {obj.name!r}"
        self.report({'INFO'}, f"Oriented {len(outcome.frames)} keys of {label} ({self.mode.lower()})")
        return {'FINISHED'}


def _menu(self, context):
    self.layout.separator()
    self.layout.operator(ROBOT_RETARGET_OT_orient_waypoints.bl_idname)
    self.layout.operator("robot_retarget.follow_path")


classes = (ROBOT_RETARGET_OT_orient_waypoints,)


def register():
    setattr(bpy.types.WindowManager, LINKS, CollectionProperty(type=bpy.types.PropertyGroup))
    bpy.types.VIEW3D_MT_object_animation.append(_menu)  # Object > Animation, and Pose > Animation


def unregister():
    bpy.types.VIEW3D_MT_object_animation.remove(_menu)
    delattr(bpy.types.WindowManager, LINKS)
