"""The planted root's correction between passes (core.feet.plant: `_Check.root_change`).

After a pass the root moves by what the planted feet still miss (`miss` = goal - foot, where the
foot must go): up where a foot is below its goal, down where it floats above it. Until session 22
the vertical sign was turned, so a floating foot raised the root and floated further the next pass
(the H1 walk: 61 -> 123 planted frames more than 4 mm above their goals over the three passes).

Here the final plant of the walk (its inputs as the pipeline passes them) is solved for one pass,
then the root alone is moved up or down by a few centimetres with the joints held: every planted
foot then misses its goal by that much, and the move asked for must bring it back.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.feet import plant
from core.feet.geometry import Bodies, pivot_weights
from core.model.kinematics import KinematicTree
from core.model.transforms import pose_matrices
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget import pipeline
from core.retarget.automap import auto_map

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
ROBOTS = {"g1": ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf",
          "h1": ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"}  # the H1 has no ankle roll
FRAMES = slice(0, 360)  # 3 s of the walk: standing, steps, a turn
SHIFT_M = 0.03


def _final_plant_inputs(robot: Path) -> tuple:
    """(tree, legs, q, root_rot, root_pos, contacts, fps, settings) of the bake's last plant_feet call."""
    tree = KinematicTree(parse_urdf(robot))
    motion = load_bvh(WALK).to_source_motion()
    motion = dataclasses.replace(motion, heads=motion.heads[FRAMES], tails=motion.tails[FRAMES],
                                 root_rotation=motion.root_rotation[FRAMES])
    calls = []

    def spy(*args, **kwargs):
        calls.append(args)
        return plant.plant_feet(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "plant_feet", spy)
        pipeline.retarget(motion, tree, auto_map(motion, tree), contacts="auto")
    tree, legs, q, root_rot, root_pos, contacts, fps, settings = calls[-1][:8]
    assert settings.passes > 1  # the final plant, not the filtered bake's one-pass draft
    return tree, legs, q, root_rot, root_pos, contacts, fps, settings


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def first_pass(request):
    """The final plant's first pass: its legs, goals and root, the legs' angles after it, and the check."""
    tree, legs, q, root_rot, root_pos, contacts, fps, settings = _final_plant_inputs(ROBOTS[request.param])
    legs = [leg for leg in legs if contacts.feet[leg.side].any()]
    _, root, goals = plant._first_root(tree, legs, q, root_rot, root_pos, contacts, fps, settings)
    one = plant.plant_feet(tree, legs, q, root_rot, root_pos, contacts, fps,
                           dataclasses.replace(settings, passes=1, lift=False))
    np.testing.assert_allclose(one.root_position, root)  # one pass moves no root
    planted = np.any([goals[leg.side].weight >= 1.0 for leg in legs], axis=0)
    check = plant._Check(tree, legs, Bodies(tree), settings)
    return check, goals, one.q, root_rot, root, planted


def _vertical_miss(check, q, world, goals) -> np.ndarray:
    """How far (L, F) each leg's planted foot's standing point is below its goal, metres (0 unplanted)."""
    out = []
    for leg in check.legs:
        goal, planted = goals[leg.side].planted, goals[leg.side].weight >= 1.0
        pose = check.tree.link_transform(q, leg.link, world)
        soles = leg.foot.world(pose)[:, leg.sole]
        w = pivot_weights(goal[..., 2] - leg.foot.radius[leg.sole])  # the goal's lowest points
        out.append(np.einsum("fs,fs->f", w, goal[..., 2] - soles[..., 2]) * planted)
    return np.array(out)


@pytest.mark.parametrize("shift", [SHIFT_M, -SHIFT_M], ids=["root_too_high", "root_too_low"])
def test_the_root_moves_toward_the_planted_feet_goals(first_pass, shift):
    check, goals, q, root_rot, root, planted = first_pass
    assert planted.sum() > 100
    moved = root + [0.0, 0.0, shift]
    left = np.abs(_vertical_miss(check, q, pose_matrices(root_rot, root), goals)).max(axis=0)  # the first pass's
    assert np.abs(_vertical_miss(check, q, pose_matrices(root_rot, moved), goals)).max(axis=0)[planted].min() > \
        SHIFT_M - left.max()
    move = check.root_change(q, pose_matrices(root_rot, moved), goals)
    assert move is not None
    # a foot lifted off its goal asks the root down by as much, give or take what the first pass left (a
    # tilt the leg cannot undo, two feet that disagree); one pushed into the ground up, at least as far
    # (further where an edge of a foot the leg cannot lay flat, or another body, sinks deeper)
    off = move[planted, 2] + shift
    assert (off >= -left[planted] - 0.001).all()
    assert shift < 0 or (off <= left[planted] + 0.001).all()
    back = np.abs(_vertical_miss(check, q, pose_matrices(root_rot, moved + move), goals)).max(axis=0)
    assert back[planted].mean() < left[planted].mean() + 0.001
