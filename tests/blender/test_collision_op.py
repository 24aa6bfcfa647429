"""Self-collision in the Robot tab: Avoid Self-Collision in Bake Settings, the bake report's
self-collision figures and frames, and what the viewport overlay highlights (headless)."""
from __future__ import annotations

import importlib
import json

import bpy
import numpy as np


def _bake(settings, avoid: bool) -> dict:
    settings.avoid_self_collision = avoid
    settings.action_name = f"walk avoid {avoid}"
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    action = settings.robot.animation_data.action
    return json.loads(action["robot_retarget_report"])


def test_avoidance_setting_report_and_overlay(walk_on_g1, extension):
    settings, _, robot = walk_on_g1(frames=(1, 240))
    assert settings.avoid_self_collision and abs(settings.collision_margin - 0.01) < 1e-9  # on by default (README)
    off = _bake(settings, False)
    on = _bake(settings, True)
    for report in (off, on):
        assert {"self_collision_pct", "self_collision_worst", "self_collision_pairs"} <= set(report)
    assert off["self_collision_pct"] > on["self_collision_pct"]
    assert on["self_collision_avoided"] and not off["self_collision_avoided"]

    collision = importlib.import_module(extension.__name__ + ".operators.collision")
    line = collision.collision_summary(off, 1)
    assert "frames with contacts:" in line and off["self_collision_worst"]["pair"][0] in line

    # the overlay on the unavoided bake: where the report has contacts, links are highlighted
    robot.animation_data.action = bpy.data.actions["walk avoid False"]
    trace = collision.collision_trace(robot, bpy.context.scene)
    frame = 1 + off["self_collision_worst"]["frame"]
    names = trace.colliding(frame)
    assert tuple(off["self_collision_worst"]["pair"]) in {(a, b) for a, b, _ in names}
    segments = trace.segments(frame, np.array(robot.matrix_world))
    assert len(segments) >= 4 and len(segments) % 2 == 0 and np.isfinite(segments).all()
    clear = [f for f in range(1, 241) if f - 1 not in set(off["self_collision_frames"])]
    if clear:
        assert trace.colliding(clear[0]) == [] and len(trace.segments(clear[0], np.eye(4))) == 0


def test_collision_pair_overrides_survive_the_sidebar_settings(walk_on_g1, extension):
    """A preset's allowed and checked pairs go into the scene's settings and back into the
    mapping a bake uses; a malformed pair stops with an error naming the setting."""
    settings, _, _ = walk_on_g1(frames=(1, 30))
    props = importlib.import_module(extension.__name__ + ".props")
    mapping = props.mapping_from_settings(settings)
    mapping.allow_collision = [["left_rubber_hand", "right_rubber_hand"]]
    mapping.check_collision = [["left_knee_link", "right_knee_link"], ["pelvis", "torso_link"]]
    props.settings_from_mapping(settings, mapping)
    again = props.mapping_from_settings(settings)
    assert again.allow_collision == [["left_rubber_hand", "right_rubber_hand"]]
    assert again.check_collision == [["left_knee_link", "right_knee_link"], ["pelvis", "torso_link"]]
    settings.allow_collision = "left_rubber_hand"
    try:
        props.mapping_from_settings(settings)
    except ValueError as exc:
        assert "allow_collision" in str(exc) and "left_rubber_hand" in str(exc)
    else:
        raise AssertionError("a pair of one link was accepted")
    settings.allow_collision = ""
    assert props.mapping_from_settings(settings).allow_collision == []
