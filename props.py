"""Scene properties of Robot Retarget: the chain mapping and bake settings.

The mapping lives on the scene as editable rows; `mapping_from_settings` and
`settings_from_mapping` convert to and from core.chains.mapping.Mapping, the same
data the JSON presets and the command line use.
"""
from __future__ import annotations

from dataclasses import fields

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty,
                       FloatVectorProperty, IntProperty, PointerProperty, StringProperty)

from .core.chains.mapping import (CHAIN_RANGES, ROLES, SETTING_RANGES, ChainMapping, Mapping, MappingError,
                                  RetargetSettings)

_SIDES = [("NONE", "None", "Not a sided limb"), ("LEFT", "Left", ""), ("RIGHT", "Right", "")]
_LIST_FIELDS = ("source_tips", "robot_tips", "source_landmarks", "robot_landmarks")
_FLOAT_LIST_FIELDS = ("source_fractions", "robot_fractions")


def _bounds(ranges: dict[str, tuple], key: str) -> dict:
    """min/max of a number field: the ranges a preset is checked against (core.chains.mapping)."""
    low, high = ranges[key]
    return {"min": low} if high is None else {"min": low, "max": high}


def _is_armature(self, obj) -> bool:
    return obj.type == 'ARMATURE'


class RobotRetargetChain(bpy.types.PropertyGroup):
    """One row of the chain mapping: a source chain paired with a robot chain."""

    name: StringProperty(name="Name", default="chain")
    enabled: BoolProperty(name="Enabled", default=True, description="Solve this chain when baking")
    role: EnumProperty(name="Role", items=[(r.upper(), r.title(), "") for r in ROLES], default="LIMB",
                       description="What the chain is; legs and arms also give the body frame")
    side: EnumProperty(name="Side", items=_SIDES, default="NONE")
    source_base: StringProperty(name="Source Base", description="Bone where the source chain starts (the limb's first joint)")
    source_tips: StringProperty(name="Source Tip", description="Tip bone; several comma-separated for a branched chain")
    robot_base: StringProperty(name="Robot Base", description="Link (bone) where the robot chain starts")
    robot_tips: StringProperty(name="Robot Tip", description="Tip link; several comma-separated for a branched chain")
    source_tip_tail: BoolProperty(name="Include Tip Tail", description="End the source chain at the tip bone's tail")
    use_tip_offset: BoolProperty(name="Tip Offset", description="End the robot chain at a point fixed in the tip link")
    robot_tip_offset: FloatVectorProperty(name="Tip Offset", size=3, subtype='TRANSLATION', unit='LENGTH')
    points: IntProperty(name="Points", **_bounds(CHAIN_RANGES, "points"), default=0,
                        description="Reference points along the chain (0: one more than the robot chain's joints)")
    tip_weight: FloatProperty(name="Tip Weight", **_bounds(CHAIN_RANGES, "tip_weight"), default=3.0,
                              description="Weight of the tip reference point")
    weight: FloatProperty(name="Weight", **_bounds(CHAIN_RANGES, "weight"), default=1.0,
                          description="Weight of the other reference points")
    source_landmarks: StringProperty(name="Source Landmarks", description="Comma-separated joints matched to robot landmarks (knee, ankle)")
    robot_landmarks: StringProperty(name="Robot Landmarks", description="Comma-separated robot links matching the source landmarks")
    robot_start: StringProperty(name="Robot Shape Start", description="Link where the robot limb's shape begins (empty: the base)")
    source_fractions: StringProperty(name="Source Fractions", description="Comma-separated fractions 0-1 (empty: uniform)")
    robot_fractions: StringProperty(name="Robot Fractions", description="Comma-separated fractions 0-1 (empty: matched)")


class RobotRetargetSettings(bpy.types.PropertyGroup):
    source: PointerProperty(name="Source", type=bpy.types.Object, poll=_is_armature,
                            description="Armature whose animation is retargeted")
    robot: PointerProperty(name="Robot", type=bpy.types.Object, poll=_is_armature,
                           description="Robot rig imported from a URDF")
    chains: CollectionProperty(type=RobotRetargetChain)
    active_chain: IntProperty(name="Active Chain", default=0)
    source_root: StringProperty(name="Source Root")
    robot_root: StringProperty(name="Robot Root")
    objective: EnumProperty(name="Objective", default="l2", items=[
        ("l2", "Least Squares", "Weighted sum of squared reference-point distances"),
        ("l1", "Robust (L1)", "Sum of distances: one bad point pulls less")])
    iterations: IntProperty(name="Iterations", default=RetargetSettings.iterations,
                            **_bounds(SETTING_RANGES, "iterations"))
    smoothness: FloatProperty(name="Smoothness", default=RetargetSettings.smoothness,
                              **_bounds(SETTING_RANGES, "smoothness"),
                              description="Pull toward the previous frame where a chain is redundant")
    rest_prior: FloatProperty(name="Rest Prior", default=RetargetSettings.rest_prior,
                              **_bounds(SETTING_RANGES, "rest_prior"),
                              description="Weak pull toward the robot's neutral posture (zero pose, arms hanging)")
    root_mode: EnumProperty(name="Root", default="follow", items=[
        ("follow", "Follow", "The robot travels like the source, scaled by leg length"),
        ("in_place", "In Place", "The robot keeps its place; heading and height still follow"),
        ("fixed", "Fixed Base", "The robot's base never moves (arms on a stand)")])
    ground: EnumProperty(name="Ground", default="clip", items=[
        ("clip", "Lowest Foot of Clip", "Shift the clip so its lowest foot point touches the ground"),
        ("frame", "Every Frame", "Keep the lowest foot on the ground in every frame"),
        ("none", "None", "Keep the scaled source height")])
    filter: EnumProperty(name="Filter", default="butterworth", items=[
        ("butterworth", "Butterworth", "Zero-phase low-pass"),
        ("moving_average", "Moving Average", "Centred moving average"),
        ("none", "None", "No filtering")])
    cutoff_hz: FloatProperty(name="Cutoff", default=RetargetSettings.cutoff_hz, **_bounds(SETTING_RANGES, "cutoff_hz"),
                             description="Low-pass cutoff frequency in Hz")
    window: IntProperty(name="Window", default=RetargetSettings.window, **_bounds(SETTING_RANGES, "window"),
                        description="Moving-average window in frames")
    avoid_self_collision: BoolProperty(name="Avoid Self-Collision", default=RetargetSettings.avoid_self_collision,
                                       description="Keep the robot's links a margin apart in the solve "
                                                   "(their collision proxies)")
    collision_margin: FloatProperty(name="Margin", default=RetargetSettings.collision_margin,
                                    **_bounds(SETTING_RANGES, "collision_margin"),
                                    unit="LENGTH", description="Least distance kept between checked links")
    allow_collision: StringProperty(name="Allowed Pairs", description="Link pairs that may touch, from the "
                                    "mapping preset: 'link, link; link, link'")
    check_collision: StringProperty(name="Checked Pairs", description="Link pairs checked whatever the robot's "
                                    "matrix says, from the mapping preset: 'link, link; link, link'")
    show_collisions: BoolProperty(name="Show Collisions", default=False,
                                  description="Highlight in red the robot's links that overlap another at "
                                              "the current frame (its active action)")
    use_scene_range: BoolProperty(name="Use Scene Range", default=False,
                                  description="Bake the scene's frame range instead of the source action's")
    action_name: StringProperty(name="Action", description="Name of the new robot action (empty: from the source)")
    replace_action: BoolProperty(name="Replace Existing", default=False,
                                 description="Reuse an action of that name instead of creating a new one")
    automap_notes: StringProperty(name="Auto-Map Notes",
                                  description="What auto-map guessed rather than saw, one note per line")
    program_text: StringProperty(name="Program", description="The Text datablock holding the motion program")
    show_balance: BoolProperty(name="Show in Viewport", default=False,
                               description="Draw the support polygon, the ZMP, the target ZMP and the centre of "
                                           "mass's ground point of the robot's action at the current frame")
    plant_feet: BoolProperty(name="Plant Feet", default=True,
                             description="Keep feet still while the source's contact channels say they are "
                                         "on the ground (Detect Contacts makes them)")


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def mapping_from_settings(settings: RobotRetargetSettings) -> Mapping:
    """The scene's mapping rows and options as a core Mapping (raises MappingError)."""
    chains = []
    for row in settings.chains:
        values = {f.name: getattr(row, f.name) for f in fields(ChainMapping)
                  if f.name not in _LIST_FIELDS + _FLOAT_LIST_FIELDS + ("role", "side", "robot_tip_offset")}
        for key in _LIST_FIELDS:
            values[key] = _split(getattr(row, key)) or (None if "landmarks" in key else [])
        for key in _FLOAT_LIST_FIELDS:
            try:
                values[key] = [float(v) for v in _split(getattr(row, key))] or None
            except ValueError:
                raise MappingError(f"chain {row.name!r}: {key} must be numbers separated by commas") from None
        values["robot_start"] = row.robot_start or None
        values["role"] = row.role.lower()
        values["side"] = "" if row.side == "NONE" else row.side.lower()
        values["robot_tip_offset"] = list(row.robot_tip_offset) if row.use_tip_offset else None
        chains.append(ChainMapping(**values))
    options = RetargetSettings(**{f.name: getattr(settings, f.name) for f in fields(RetargetSettings)})
    notes = [line for line in settings.automap_notes.splitlines() if line.strip()]
    pairs = {key: _pairs_from_text(getattr(settings, key), key) for key in ("allow_collision", "check_collision")}
    return Mapping(chains, settings.source_root, settings.robot_root, options, notes=notes, **pairs)


def _pairs_from_text(text: str, what: str) -> list[list[str]]:
    """'a, b; c, d' -> [[a, b], [c, d]]: the preset's collision pair overrides kept as text."""
    pairs = [_split(part) for part in text.split(";") if part.strip()]
    for pair in pairs:
        if len(pair) != 2:
            raise MappingError(f"{what}: {', '.join(pair)!r} is not two link names separated by a comma")
    return pairs


def settings_from_mapping(settings: RobotRetargetSettings, mapping: Mapping) -> None:
    """Replace the scene's rows and options with `mapping`."""
    settings.chains.clear()
    for chain in mapping.chains:
        row = settings.chains.add()
        for f in fields(ChainMapping):
            value = getattr(chain, f.name)
            if f.name in _LIST_FIELDS:
                setattr(row, f.name, ",".join(value or []))
            elif f.name in _FLOAT_LIST_FIELDS:
                setattr(row, f.name, ",".join(repr(v) for v in value or []))
            elif f.name == "robot_tip_offset":
                row.use_tip_offset = value is not None
                row.robot_tip_offset = value or (0.0, 0.0, 0.0)
            elif f.name == "role":
                row.role = value.upper()
            elif f.name == "side":
                row.side = value.upper() if value else "NONE"
            elif f.name == "robot_start":
                row.robot_start = value or ""
            else:
                setattr(row, f.name, value)
    settings.active_chain = 0
    settings.source_root, settings.robot_root = mapping.source_root, mapping.robot_root
    settings.automap_notes = "\n".join(mapping.notes)
    for key in ("allow_collision", "check_collision"):
        setattr(settings, key, "; ".join(", ".join(pair) for pair in getattr(mapping, key)))
    for f in fields(RetargetSettings):
        setattr(settings, f.name, getattr(mapping.settings, f.name))


classes = (RobotRetargetChain, RobotRetargetSettings)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Scene.robot_retarget = PointerProperty(type=RobotRetargetSettings)


def unregister():
    del bpy.types.Scene.robot_retarget
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
