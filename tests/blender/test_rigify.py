"""A real Rigify rig as the source: Blender's own human metarig, generated, driven by the walk.

Rigify ships inside Blender. Its generated rig has about 700 bones: DEF- bones that
deform (and are the body), ORG-, MCH- and control bones that drive them, with the
DEF- limbs parented to ORG- bones. Here the DEF- bones are made to follow the
imported CMU walk (their heads copy the BVH joints, their tails track the next
joint), then auto-map must pick the DEF- chains and the bake must show the robot's
limbs where the BVH bake does.
"""
from __future__ import annotations

import json
from pathlib import Path

import bpy
import pytest

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"

FRAMES = (1, 90)
# DEF bone -> (BVH bone its head sits on, how far along that bone, BVH bone its tail tracks)
FOLLOW = {}
for s, side in (("L", "Left"), ("R", "Right")):
    short = s
    FOLLOW.update({
        f"DEF-thigh.{s}": (f"{side}Hip", 0.0, f"{side}Knee"), f"DEF-thigh.{s}.001": (f"{side}Hip", 0.5, f"{side}Knee"),
        f"DEF-shin.{s}": (f"{side}Knee", 0.0, f"{side}Ankle"), f"DEF-shin.{s}.001": (f"{side}Knee", 0.5, f"{side}Ankle"),
        f"DEF-foot.{s}": (f"{side}Ankle", 0.0, f"{side}Toe"), f"DEF-toe.{s}": (f"{side}Toe", 0.0, None),
        f"DEF-shoulder.{s}": (f"{side}Collar", 0.0, f"{side}Shoulder"),
        f"DEF-upper_arm.{s}": (f"{side}Shoulder", 0.0, f"{side}Elbow"),
        f"DEF-upper_arm.{s}.001": (f"{side}Shoulder", 0.5, f"{side}Elbow"),
        f"DEF-forearm.{s}": (f"{side}Elbow", 0.0, f"{side}Wrist"),
        f"DEF-forearm.{s}.001": (f"{side}Elbow", 0.5, f"{side}Wrist"),
        f"DEF-hand.{s}": (f"{side}Wrist", 0.0, f"{short.lower()}hand"),
        f"DEF-pelvis.{s}": ("Hips", 0.0, f"{side}Hip"),
    })
FOLLOW.update({"DEF-spine": ("Hips", 0.0, "Chest"), "DEF-spine.001": ("lowerback", 0.0, "Chest"),
               "DEF-spine.002": ("Chest", 0.0, "Chest2"), "DEF-spine.003": ("Chest2", 0.0, "lowerneck"),
               "DEF-spine.004": ("lowerneck", 0.0, "Neck"), "DEF-spine.005": ("Neck", 0.0, "Head"),
               "DEF-spine.006": ("Head", 0.0, None)})


@pytest.fixture
def rigify_walk(clean_scene, rigify):
    """(settings, rigify rig, walk armature, robot) with the rig's DEF bones following the walk."""
    assert bpy.ops.import_anim.bvh(filepath=str(WALK), update_scene_fps=True) == {'FINISHED'}
    walk = bpy.context.view_layer.objects.active
    bpy.ops.object.select_all(action='DESELECT')
    assert bpy.ops.object.armature_human_metarig_add() == {'FINISHED'}
    assert bpy.ops.pose.rigify_generate() == {'FINISHED'}
    rig = bpy.context.view_layer.objects.active
    assert sum(b.use_deform for b in rig.data.bones) < len(rig.data.bones) / 2  # mostly machinery
    for name, (bone, along, toward) in FOLLOW.items():
        pb = rig.pose.bones[name]
        at = pb.constraints.new('COPY_LOCATION')
        at.target, at.subtarget, at.head_tail = walk, bone, along
        if toward is not None:
            aim = pb.constraints.new('DAMPED_TRACK')
            aim.target, aim.subtarget = walk, toward
    _carry_the_rest(rig)
    rig.animation_data_create()
    rig.animation_data.action = bpy.data.actions.new("rigify_walk")  # the action range is the clip's
    rig.animation_data.action.frame_range = walk.animation_data.action.frame_range
    rig.animation_data.action.use_frame_range = True
    assert bpy.ops.robot_retarget.import_urdf(filepath=str(G1), import_meshes=False) == {'FINISHED'}
    robot = bpy.context.view_layer.objects.active
    settings = clean_scene.robot_retarget
    clean_scene.frame_start, clean_scene.frame_end = FRAMES
    settings.use_scene_range = True
    settings.plant_feet = False
    return settings, rig, walk, robot


def _carry_the_rest(rig) -> None:
    """Every other deforming bone (face, fingers, breasts) rides rigidly on its nearest followed
    ancestor, as it sits at rest: a body part left behind would not be a body."""
    from core.retarget.names import deform_skeleton

    bones = rig.data.bones
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    kept, parents = deform_skeleton(names, [index[b.parent.name] if b.parent else -1 for b in bones],
                                    [b.use_deform for b in bones])
    kept_names = [names[i] for i in kept]
    for k, name in enumerate(kept_names):
        if name in FOLLOW or any(a.name in FOLLOW for a in bones[name].parent_recursive):
            continue  # followed, or already riding on a followed bone (Rigify's fingers hang from DEF-hand)
        carrier = parents[k]
        while carrier >= 0 and kept_names[carrier] not in FOLLOW:
            carrier = parents[carrier]
        if carrier < 0:
            continue
        ride = rig.pose.bones[name].constraints.new('CHILD_OF')
        ride.target, ride.subtarget = rig, kept_names[carrier]
        ride.inverse_matrix = (rig.matrix_world @ bones[kept_names[carrier]].matrix_local).inverted()


def _bake(settings, source, robot) -> dict:
    settings.source, settings.robot = source, robot
    settings.chains.clear()
    assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    return json.loads(robot.animation_data.action["robot_retarget_report"])


def test_auto_map_picks_the_deform_chains(rigify_walk):
    settings, rig, walk, robot = rigify_walk
    settings.source, settings.robot = rig, robot
    assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
    chains = {row.name: row for row in settings.chains}
    assert {"spine", "left_leg", "right_leg", "left_arm", "right_arm"} <= set(chains)
    for row in settings.chains:
        for bone in [row.source_base, *row.source_tips.split(",")]:
            assert bone.startswith("DEF-"), (row.name, bone)
    assert chains["left_leg"].source_base.startswith("DEF-thigh.L")
    assert chains["right_arm"].source_base.startswith("DEF-upper_arm.R")


def test_rigify_bakes_like_the_bvh(rigify_walk):
    settings, rig, walk, robot = rigify_walk
    from_bvh = _bake(settings, walk, robot)
    from_rigify = _bake(settings, rig, robot)
    assert from_rigify["frames"] == from_bvh["frames"] == FRAMES[1] - FRAMES[0] + 1
    assert from_rigify["automap_confidence"] == 1.0
    by_limb = from_rigify["limb_direction_error_by_limb"]
    assert set(by_limb) == {"left_leg", "right_leg", "left_arm", "right_arm"}
    for limb, error in by_limb.items():  # the rig's own proportions differ from the actor's
        assert error < from_bvh["limb_direction_error_by_limb"][limb] + 3.0, (limb, error)
    assert from_rigify["torso_orientation_error_deg"] < 5.0
