"""The gait generator on the bundled walk (issue 12): steps kept, feet still and level in stance,
the multibody ZMP over the feet, a one-leg hold made from the walk, the hop refused.

The issue's targets that today's generator does not reach are strict xfail tests that say
what they measure and why: they fail loudly the day the generator reaches them.
"""
from __future__ import annotations

import dataclasses

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.balance import BalanceError
from core.balance.gait import GaitSettings, generate_gait
from core.balance.inertia import multibody_zmp
from core.balance.legs import leg_iks
from core.balance.phases import swing_phases
from core.balance.support import CONTACT_M, foot_bodies, foot_links, support_margins
from core.feet.contacts import Contacts, detect_contacts, flags_to_intervals
from core.model.kinematics import KinematicTree
from core.model.transforms import pose_matrices
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.motion.source import SourceMotion
from core.retarget.automap import auto_map
from tests.variants import mirrored_motion

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
ROBOTS = {"g1": ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf",
          "h1": ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"}
REPORT_KEYS = {"steps", "swing_phases", "representative_points", "zmp_max_error_m", "zmp_rms_error_m",
               "multibody_zmp_max_error_m", "multibody_zmp_rms_error_m", "zmp_outside_support_pct",
               "min_support_margin_m", "stance_slide_m", "com_height_m", "rate_hz", "period_s", "warnings"}


def _gait(motion: SourceMotion, robot: str, settings: GaitSettings | None = None):
    tree = KinematicTree(parse_urdf(ROBOTS[robot]))
    mapping = auto_map(motion, tree)
    return tree, mapping, generate_gait(motion, tree, mapping, settings=settings)


@pytest.fixture(scope="module")
def walk():
    return load_bvh(WALK).to_source_motion()


@pytest.fixture(scope="module")
def g1_walk(walk):
    return _gait(walk, "g1")


@pytest.fixture(scope="module")
def h1_walk(walk):
    return _gait(walk, "h1")  # its waist rolled (GaitSettings.sagittal_waist's default for its legs)


@pytest.fixture(scope="module")
def h1_upright_walk(walk):
    """The H1 walk with its waist held upright (its default before 2026-12-02): a gait that leaves its feet."""
    return _gait(walk, "h1", GaitSettings(sagittal_waist=False))


def _feet(tree, result):
    """Per foot: its body's points in the world over the samples (N, P, 3), and the body."""
    root = pose_matrices(result.root_rotation, result.root_position)
    feet = foot_links(tree)
    poses = tree.poses(result.q, root, feet)
    return [(body.world(poses[body.link]), body) for body in foot_bodies(tree, feet)]


@pytest.mark.parametrize("robot", ["g1", "h1"])
def test_the_report_and_the_samples_are_the_issues(robot, g1_walk, h1_walk):
    tree, _, result = {"g1": g1_walk, "h1": h1_walk}[robot]
    report = result.report
    assert REPORT_KEYS <= set(report)
    assert report["rate_hz"] == pytest.approx(200.0) and report["period_s"] == pytest.approx(0.005)
    # the generation's own time, as a user would time it (issue 12's "10 s clip in under 2 s on one core")
    assert 0 < report["cpu_seconds"] and 0 < report["total_seconds"] < 600
    # the walk's travel is within issue 12's 20 % on both (87 / 84 %): no warning of it
    assert abs(report["travel_m"] / report["source_travel_m"] - 1) <= 0.2
    assert not [w for w in report["warnings"] if w.startswith("the robot travels")]
    assert np.allclose(np.diff(result.time_s), 0.005) and result.time_s[0] == 0.0
    assert len(result.q) == len(result.time_s) and np.isfinite(result.q).all()
    assert result.joint_names == tree.joint_names
    inside = (result.q >= tree.lower - 1e-6) & (result.q <= tree.upper + 1e-6)
    assert inside.all(), f"joints outside their limits: {np.array(tree.joint_names)[~inside.all(axis=0)]}"
    for point in report["representative_points"]:
        assert point["kind"] in {"lift_off", "peak", "preparatory", "touch_down"}
        swings = report["swing_phases"][point["foot"]]
        assert any(s["lift_off_s"] - 1e-9 <= point["time_s"] <= s["touch_down_s"] + 1e-9 for s in swings)


@pytest.mark.parametrize("robot", ["g1", "h1"])
def test_every_step_of_the_clip_is_kept(robot, walk, g1_walk, h1_walk):
    tree, mapping, result = {"g1": g1_walk, "h1": h1_walk}[robot]
    clip_swings = swing_phases(detect_contacts(walk, mapping))
    assert result.report["steps"] == sum(len(s) for s in clip_swings.values())
    for side, swings in result.report["swing_phases"].items():
        assert len(swings) == len(clip_swings[side])
        kinds = [p["kind"] for p in result.report["representative_points"] if p["foot"] == side]
        assert kinds.count("lift_off") == kinds.count("touch_down") == len(swings)
        assert kinds.count("preparatory") == 2 * len(swings)


def test_the_gaits_zmp_is_the_balance_readouts(g1_walk):
    """The correction weighs the links no leg moves once (core.balance.correction._SplitBody):
    its ZMP must still be the readout's, computed from the whole robot."""
    tree, _, result = g1_walk
    root = pose_matrices(result.root_rotation, result.root_position)
    zmp, com = multibody_zmp(tree, result.q, root, 1.0 / result.period_s)
    assert np.abs(zmp - result.zmp).max() < 1e-9 and np.abs(com - result.com).max() < 1e-9


def test_the_h1_gaits_zmp_is_the_balance_readouts_to_a_micrometre(h1_walk):
    """The H1's passes weigh each ankle with its six 1 g parts as one body (correction.RIGID_LEGS): its
    gait's ZMP is still the readout's, to well under a micrometre (the low-pass smooths the body's points)."""
    tree, _, result = h1_walk
    root = pose_matrices(result.root_rotation, result.root_position)
    zmp, com = multibody_zmp(tree, result.q, root, 1.0 / result.period_s)
    assert np.abs(zmp - result.zmp).max() < 1e-6 and np.abs(com - result.com).max() < 1e-9


def _soles(tree, mapping, result) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per side: where its foot is down by the report's swing phases (N,), the height of each
    point of its sole above the ground (N, S) (the points on the ground when the foot stands
    level), and where those points touch the ground in the world (N, S, 3)."""
    from core.balance.plan import foot_sides
    from core.feet.geometry import standing_rotation

    zero = tree.zero_pose()
    sides = foot_sides(tree, mapping, foot_links(tree))
    out = {}
    for points, body in _feet(tree, result):
        bottom = (body.points @ standing_rotation(body, zero[body.link, :3, :3]).T)[:, 2] - body.radius
        sole = bottom <= bottom.min() + 1e-4
        side = sides[body.link]
        down = np.ones(len(result.time_s), dtype=bool)
        for swing in result.report["swing_phases"][side]:
            down &= ~((result.time_s > swing["lift_off_s"]) & (result.time_s < swing["touch_down_s"]))
        contact = points[:, sole].copy()
        contact[..., 2] -= body.radius[sole]  # where each point (a sphere's centre) touches the ground
        out[side] = (down, contact[..., 2], contact)
    return out


def _grounded(heights: np.ndarray) -> str:
    """What is wrong with sole point heights (N, S) that should all be on the ground (within
    CONTACT_M: on it and flat), or '' where nothing is."""
    worst_up, worst_down = heights.max(), heights.min()
    if worst_up <= CONTACT_M and worst_down >= -CONTACT_M:
        return ""
    return (f"sole up to {1000 * worst_up:.1f} mm above and {-1000 * worst_down:.1f} mm below the ground on "
            f"{100 * np.mean((np.abs(heights) > CONTACT_M).any(axis=1)):.1f} % of its stance samples")


def _on_an_edge(heights: np.ndarray) -> str:
    """As _grounded, but a stance foot may also stand on an edge of its sole (heel-off before a
    long step: the toe edge on the ground, the heel up): at least two of its points on the
    ground on every sample and none below it; '' where that holds."""
    on = np.abs(heights) <= CONTACT_M
    if heights.min() >= -CONTACT_M and (on.sum(axis=1) >= 2).all():
        return ""
    return (f"sole down to {-1000 * heights.min():.1f} mm below the ground; fewer than two points on it on "
            f"{100 * np.mean(on.sum(axis=1) < 2):.1f} % of its stance samples")


def test_swing_feet_stay_above_the_ground_and_stance_feet_on_it(g1_walk):
    """No foot below the ground; every stance sole on it (within the support's contact distance),
    flat or on its toe edge (heel-off), on every sample where the report says the foot is down."""
    tree, mapping, result = g1_walk
    for points, body in _feet(tree, result):
        lowest = (points[..., 2] - body.radius).min(axis=1)
        # 3 mm: the rear leg lifting off after a heel-off is at the end of its reach; on the walk its
        # toe dips 2.0 mm for 35 ms after lift-off at 6.05 s
        assert lowest.min() > -0.003, f"a foot {-1000 * lowest.min():.1f} mm below the ground"
    for side, (down, heights, _) in _soles(tree, mapping, result).items():
        assert down.mean() > 0.3, side
        assert not _on_an_edge(heights[down]), f"{side} stance foot: {_on_an_edge(heights[down])}"


def test_rear_feet_roll_onto_their_toes_before_long_steps(g1_walk):
    """Heel-off: before some lift-offs of the G1 walk the rear foot's heel is up while its toe edge
    stays on the ground where it stood (core.balance.rollover), and the support is then that edge."""
    tree, _, result = g1_walk
    rolled = 0
    for points, body in _feet(tree, result):
        bottom = points[..., 2] - body.radius
        toes = np.argsort(body.points[:, 0])[-2:]  # the G1's two toe spheres (its forward is x)
        heel_up = (bottom[:, toes].max(axis=1) < 0.001) & (bottom.max(axis=1) > 0.01)
        for start, end in flags_to_intervals(heel_up):
            rolled += 1
            still = np.linalg.norm(points[start:end, toes, :2] - points[start, toes, :2], axis=-1)
            assert still.max() < 0.001, f"a toe edge moved {1000 * still.max():.1f} mm while the heel was up"
    assert rolled >= 2


def test_the_walk_on_g1_meets_the_issues_balance_targets(g1_walk):
    """Multibody ZMP inside the support shrunk by 10 mm at every 5 ms cycle, 10 mm RMS from its
    target at most, stance feet still to a millimetre, knees and hips within their speed."""
    tree, _, result = g1_walk
    report = result.report
    assert report["min_support_margin_m"] >= 0.010 and report["zmp_outside_support_pct"] == 0.0
    assert report["multibody_zmp_rms_error_m"] <= 0.010
    assert report["zmp_rms_error_m"] < 0.002  # the cart-table model itself follows the target closely
    assert report["stance_slide_m"] < 0.001
    legs = np.concatenate([leg.columns for leg in leg_iks(tree, foot_links(tree))])
    speed = np.abs(np.diff(result.q[:, legs], axis=0)) / result.period_s
    assert (speed / tree.velocity[legs]).max() < 3.0


def test_the_walk_standing_before_and_after_meets_the_balance_targets(walk):
    """The speed benchmark's 10 s clip (bench/bench_gait.py): the walk with its first and last frames
    held, on the walk's own contacts (on the held clip the detector reads another walk). Its last
    stance lasts 2.5 s; the left foot lands there with its knee straight, and the waist's height
    fitted for that stance's later samples rose over the touch-down (the foot 2.8 mm off its
    footprint, a 1.4 mm slide) until the fit was checked again where it moved the waist."""
    extra = int(round(10.0 * walk.fps)) - walk.frames
    index = np.r_[np.zeros(extra // 2, int), np.arange(walk.frames), np.full(extra - extra // 2, walk.frames - 1)]
    tree = KinematicTree(parse_urdf(ROBOTS["g1"]))
    contacts = detect_contacts(walk, auto_map(walk, tree))
    held = Contacts({side: down[index] for side, down in contacts.feet.items()}, contacts.fps)
    clip = walk.at_frames(index, "walk_held")
    report = generate_gait(clip, tree, auto_map(clip, tree), contacts=held).report
    assert report["steps"] == 11 and report["duration_s"] == pytest.approx(10.0, abs=0.01)
    assert report["min_support_margin_m"] >= 0.010 and report["zmp_outside_support_pct"] == 0.0
    assert report["multibody_zmp_rms_error_m"] <= 0.010
    assert report["stance_slide_m"] < 0.001


def _walk_contacts_edited(walk, tree, edits: list[tuple[str, int, int, int]]) -> Contacts:
    """The walk's detected contacts with frames taken out: per edit, a foot, which of its contacts,
    and how many frames off its start (positive) or its end (negative)."""
    contacts = detect_contacts(walk, auto_map(walk, tree))
    feet = {side: down.copy() for side, down in contacts.feet.items()}
    for side, index, start_off, end_off in edits:
        start, end = flags_to_intervals(contacts.feet[side])[index]
        feet[side][start:start + start_off] = False
        feet[side][end - end_off:end] = False
    return Contacts(feet, contacts.fps)


# the left foot's third contact starting a sixth of a second later (its first 20 frames are a hovering
# toe dipping under height_on by under a millimetre; the heel lands then), and its fourth 3 frames later too;
# the right foot's second contact ending 4 frames earlier
EDITED_CONTACTS = {"later touch-down": [("left", 2, 20, 0)],
                   "two later touch-downs": [("left", 2, 20, 0), ("left", 3, 3, 0)],
                   "earlier lift-off": [("right", 1, 0, 4)]}


@pytest.mark.parametrize("edit", sorted(EDITED_CONTACTS))
def test_the_walk_on_g1_keeps_its_targets_with_contacts_a_little_off(walk, edit):
    """A gait for users' clips and contact files must not hinge on a contact's first or last frames:
    with the later touch-down the double support held the right foot down 20 frames after the person
    lifted it, its sole tilted 5.5 degrees, and with the second one too the ZMP went 254 mm outside."""
    tree = KinematicTree(parse_urdf(ROBOTS["g1"]))
    contacts = _walk_contacts_edited(walk, tree, EDITED_CONTACTS[edit])
    report = generate_gait(walk, tree, auto_map(walk, tree), contacts=contacts).report
    assert report["steps"] == 11
    assert report["min_support_margin_m"] >= 0.010 and report["zmp_outside_support_pct"] == 0.0
    assert report["multibody_zmp_rms_error_m"] <= 0.010
    assert report["stance_slide_m"] < 0.001 and report["stance_tilt_deg"] < 1.0


def test_the_reports_source_travel_is_the_scaled_actors(walk, g1_walk):
    """source_travel_m is the scaled source: where an unplanted bake's root goes (the actor's hip
    centre times the leg-length ratio), whatever the gait's own bake does with its feet."""
    from core.retarget import retarget

    tree, mapping, result = g1_walk
    plain = retarget(walk, tree, mapping, contacts="off")
    travel = np.linalg.norm(plain.root_position[-1, :2] - plain.root_position[0, :2])
    assert result.report["source_travel_m"] == pytest.approx(travel, rel=0.03)


def test_the_walk_on_g1_travels_as_far_as_the_scaled_source(g1_walk):
    """The stances stand on the person's footprints (the unplanted bake's feet), each step checked
    with the legs: the walk travels within 20 % of the scaled source although its steps are
    shortened to what the G1 stands across (every one of them on this turning walk)."""
    report = g1_walk[2].report
    assert report["steps_moved"] > 0
    assert report["travel_m"] == pytest.approx(report["source_travel_m"], rel=0.2)


def _walk_at(fps: float, tmp_path: Path | None) -> SourceMotion:
    """The bundled walk resampled to fps (tests/variants.py), written to a BVH file and read back
    as a clip from elsewhere would come (tmp_path), or as resampled (None)."""
    from tests.variants import resampled, write_bvh

    clip = resampled(load_bvh(WALK), fps)
    if tmp_path is not None:
        clip = load_bvh(write_bvh(clip, tmp_path / f"walk_{fps:g}.bvh"))
    return clip.to_source_motion()


def test_the_walk_at_30_hz_meets_the_g1_targets(tmp_path):
    """Rate invariance: the same walk as a 30 Hz file (clips from elsewhere are often at 30 or 60 Hz).
    Its contacts end on a 33 ms grid: a rear leg straight by then let its foot go before the contact's
    end (a 13.4 mm slide), and the waist's height fitted for it fought the next stance's. Within that
    frame a foot lifts off where its leg lets go and lands where it reaches (core.balance.lift_off),
    never further from the contacts' times. Since the height fit moves heights instead of spreading
    increments (core.balance.correction._bounded, 2026-12-03) it no longer fights there, and no foot
    lets go early on this clip (the same figures without core.balance.lift_off: worst margin +20.4 mm,
    slide 0.10 mm; +13.6 mm, 0.23 mm before)."""
    from core.balance.gait import walkable_contacts

    clip = _walk_at(30.0, tmp_path)
    tree, mapping, result = _gait(clip, "g1")
    report = result.report
    assert report["steps"] == 11
    assert report["min_support_margin_m"] >= 0.010 and report["zmp_outside_support_pct"] == 0.0
    assert report["multibody_zmp_rms_error_m"] <= 0.010
    assert report["stance_slide_m"] < 0.001
    assert report["travel_m"] == pytest.approx(report["source_travel_m"], rel=0.2)
    contacts = swing_phases(walkable_contacts(clip, mapping, "auto", []))
    for side, swings in report["swing_phases"].items():
        lift, touch = (np.array([s[key] for s in swings]) for key in ("lift_off_s", "touch_down_s"))
        clip_lift, clip_touch = (np.array([getattr(s, key) for s in contacts[side]])
                                 for key in ("lift_off_s", "touch_down_s"))
        assert ((lift <= clip_lift + 1e-6) & (lift > clip_lift - 1.0 / clip.fps)).all()
        assert ((touch >= clip_touch - 1e-6) & (touch < clip_touch + 1.0 / clip.fps)).all()


def test_the_walk_resampled_to_30_hz_in_memory_meets_the_g1_targets():
    """The walk resampled to exactly 30 Hz in memory (not 30.000003 as read back from a file: a few
    swing ends on other 5 ms cycles). Until 2026-12-03 a strict xfail: its right foot landed at
    2.70 s with the multibody ZMP 25 mm ahead of its target, worst margin +7.2 mm, slide 0.75 mm;
    with the height fit moving heights (core.balance.correction._bounded) +15.9 mm, 0.13 mm."""
    report = _gait(_walk_at(30.0, None), "g1")[2].report
    assert report["min_support_margin_m"] >= 0.010 and report["stance_slide_m"] < 0.001


def test_h1_walk_meets_the_issue_targets(h1_walk):
    """The H1 walk, its waist rolled (the default for legs without an ankle roll): the multibody ZMP
    at least 10 mm inside the support on every sample and within 10 mm RMS of its target, no stance
    foot sliding 1 mm (each foot the leg cannot meet rolls about its sole's centre, and rolls onto its
    toe (heel) edge before its lift-off (after its touch-down) where the trailing (leading) leg cannot
    stand: 2.4 mm before, four stances whose ankle or hip twist reached its limit, 2026-12-02), every
    step, the travel within 20 %. The margin: +10.8 mm since the last passes aim at the cycles short of
    it (core.balance.margin, 2026-12-03, session 14; +5.7 mm before, at 1.77-1.82 s, 6.00 s and 6.69 s:
    a touch-down's jerk, a heel raised after the target was planned, the last landing's leg out of
    reach). With every frame of the bake solved from its own start: +3.16 mm and slide 1.36 mm (the left
    hip's twist on its limit after the 5.37 s touch-down turned the stance foot); the waist's yaw within
    the hips' twist and the margin aimed 13.5 mm inside: +10.37 mm, slide 0.10 mm (+10.36 to +10.43 mm
    from four starts, bench/h1_sensitivity.py, 2026-12-03). With the waist upright (sagittal_waist=False):
    worst margin -22 mm, outside on 13.1 % of samples, slide 140 mm (test_h1_walks_steps_stand_along)."""
    report = h1_walk[2].report
    assert report["min_support_margin_m"] >= 0.010
    assert report["zmp_outside_support_pct"] == 0.0
    assert report["multibody_zmp_rms_error_m"] <= 0.010
    assert report["stance_slide_m"] < 0.001
    assert report["steps"] == 11
    assert report["travel_m"] == pytest.approx(report["source_travel_m"], rel=0.2)


def _held_walk(walk):
    """The walk held 2.4 s on one leg in mid-swing (frame 4.5 s repeated: a dance pose)."""
    k, hold = int(4.5 * walk.fps), int(2.4 * walk.fps)
    index = np.r_[np.arange(k), np.full(hold, k), np.arange(k, walk.frames)]
    return walk.at_frames(index, "walk_hold")


@pytest.fixture(scope="module")
def held_walk_gait(walk):
    return _gait(_held_walk(walk), "g1")


@pytest.fixture(scope="module")
def h1_held_walk_gait(walk):
    return _gait(_held_walk(walk), "h1")  # its waist rolled


H1_HOLD = ("no posture of the H1 within its joint limits stands its CoM over one flat foot (measured 2026-12-02, "
           "session 13, bench/h1_one_leg.py): its hip pitch joints are 0.20 m either side of the pelvis and its hip "
           "roll stops at 0.43 rad, so the whole-body CoM stays at least 22.6 mm across from the standing foot's "
           "centre line (60.7 mm with the arms and torso still), outside its sole's 20 mm half-width. Held 2.4 s, "
           "the lateral plan's CoM is up to 101 mm past what the waist's roll carries; the passes put the "
           "multibody ZMP on its target by rolling the stance foot 10.8 degrees onto its edge (sole points up to "
           "11 mm above and 10 mm below the ground on 19 % of the hold), and at lift-off the ZMP is 191 mm outside")


@pytest.mark.parametrize("robot", ["g1", pytest.param("h1", marks=pytest.mark.xfail(strict=True, reason=H1_HOLD))])
def test_a_one_leg_hold_keeps_the_zmp_under_the_stance_foot(robot, request):
    """The walk held 2.4 s on one leg in mid-swing (a dance pose made from the walk): what a user
    sees on every sample of the hold, the stance sole on the ground and flat, the multibody ZMP
    inside that foot alone, the foot still."""
    tree, mapping, result = request.getfixturevalue({"g1": "held_walk_gait", "h1": "h1_held_walk_gait"}[robot])
    long = [(side, s) for side, items in result.report["swing_phases"].items() for s in items
            if s["touch_down_s"] - s["lift_off_s"] >= 2.0]
    assert len(long) == 1, "the hold is one swing of at least 2 s"
    swing_side, swing = long[0]
    during = (result.time_s > swing["lift_off_s"]) & (result.time_s < swing["touch_down_s"])
    soles = _soles(tree, mapping, result)
    (stance_side, (down, heights, sole)), = [item for item in soles.items() if item[0] != swing_side]
    assert down[during].all(), f"the {stance_side} foot stands through the hold"
    assert not _grounded(heights[during]), f"{stance_side} stance foot during the hold: {_grounded(heights[during])}"
    for side, (side_down, side_heights, _) in soles.items():  # and on every other stance of the clip
        assert not _on_an_edge(side_heights[side_down]), f"{side} stance foot: {_on_an_edge(side_heights[side_down])}"
    steady = during & (result.time_s > swing["lift_off_s"] + 0.2) & (result.time_s < swing["touch_down_s"] - 0.2)
    margins = support_margins(sole[during], result.zmp[during], 0.0)
    assert support_margins(sole[steady], result.target_zmp[steady], 0.0).min() > 0.02
    assert margins.min() > 0.0, f"ZMP {-1000 * margins.min():.0f} mm outside the stance foot during the hold"
    error = np.linalg.norm(result.zmp[steady] - result.target_zmp[steady], axis=1)
    assert np.sqrt(np.mean(error ** 2)) < 0.01
    slide = np.linalg.norm(sole[during, :, :2] - sole[during][:1, :, :2], axis=-1).max()
    assert slide < 0.001 and result.report["stance_slide_m"] < 0.001, f"the stance foot slides {1000 * slide:.2f} mm"


def test_a_hold_the_rolled_waist_cannot_carry_is_said(h1_held_walk_gait, h1_walk, held_walk_gait):
    """The H1 held on one foot (the xfail above): the report says where the waist's roll cannot
    carry the CoM over the standing foot, and that its sole then tilts; the H1's walk (single
    supports of 0.4-0.9 s, the CoM passing beside the foot) and the G1 (an ankle roll) say neither."""
    warned = [w for w in h1_held_walk_gait[2].report["warnings"] if "roll cannot carry the CoM" in w]
    assert len(warned) == 1
    start, end, short = map(float, re.search(r"at (\d+\.\d+)-(\d+\.\d+) s \(up to (\d+) mm short", warned[0]).groups())
    assert start < 5.0 and end > 6.8 and short > 50  # the hold is 4.41-7.07 s
    assert h1_held_walk_gait[2].report["stance_tilt_deg"] > 5.7  # its level tolerance: it stands on an edge
    for result in (h1_walk[2], held_walk_gait[2]):
        assert not any("roll cannot carry the CoM" in w for w in result.report["warnings"])


def test_the_hop_is_refused_with_its_flight_times():
    hop = load_bvh(HOP).to_source_motion()
    with pytest.raises(BalanceError, match=r"flight phase\(s\).*\d\.\d\d-\d\.\d\d s"):
        _gait(hop, "g1")


def test_a_robot_without_legs_is_refused_naming_what_it_has(walk):
    """An arm (the Panda) maps the actor's arm and hand: the gait says it has no legs, not that the
    clip has no foot contacts."""
    tree = KinematicTree(parse_urdf(ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"))
    with pytest.raises(BalanceError, match=r"robot 'panda': no left and no right leg mapped \(chains: arm, hand\)"):
        generate_gait(walk, tree, auto_map(walk, tree))


def test_another_control_period(walk):
    frames = walk.frames
    short = SourceMotion(walk.bone_names, walk.parents, walk.heads[:frames // 2], walk.tails[:frames // 2],
                         walk.root_rotation[:frames // 2], walk.rest_heads, walk.rest_tails,
                         walk.rest_root_rotation, walk.fps, "walk_half")
    _, _, result = _gait(short, "g1", GaitSettings(period_s=0.01))
    assert np.allclose(np.diff(result.time_s), 0.01)
    assert result.report["rate_hz"] == pytest.approx(100.0)
    assert result.time_s[-1] <= (short.frames - 1) / short.fps + 1e-9


@pytest.mark.parametrize("period_s", [0.003, 0.004, 0.005, 0.02])
def test_a_cut_walk_keeps_its_stance_feet_down_at_any_control_period(walk, period_s):
    """Issue 12's "any period" on a cut clip (`gait --frames 100:400`, a new user's trial): it starts
    with the left foot in the air and ends in a crouch deeper than the G1 can make. Before
    (2026-12-03), at every period the rear foot stood on its ankle's limit before its first
    lift-off (slide 4 mm, tilted 8 degrees), and the waist raised for the crouch reached back to the
    straight stance leg before it: at 5 ms that foot rose 6.9 mm at 1.72-1.82 s (17 samples
    without a foot down), worst margin -87 mm at 4 ms and -165 mm at 3 ms."""
    _assert_the_cut_stands(walk, 100, 400, period_s)


@pytest.mark.parametrize("start, end, period_s", [
    (200, 500, 0.003),  # slid 35 mm (a strict xfail since session 16) and
    (200, 500, 0.005),  # 8.9-36.7 mm (a strict xfail since session 14): mended in session 18, below
    (600, 995, 0.005),
    (600, 995, 0.003),  # its left, the first step's rear foot, slid 2.5 mm before a lift-off may come back to
    # the given contacts' own (core.balance.lift_off.swing_limits, 2026-12-03): 0.23 mm
])
def test_a_cut_walk_ending_with_a_foot_in_the_air_keeps_its_stance_feet_down(walk, start, end, period_s):
    """The cut's end: 200:500 ends with the right foot lifted at 2.00 s, stood on its last footprint
    to the end, where the target eases from the left foot to between the feet (a double support to
    the end) while the person's waist walks on over the left foot: at 5 ms the right foot is 14 mm
    off its footprint at 2.49 s, its hip roll on its limit (0.07 mm at 3 ms). The target kept on the
    left foot from the lift-off mends it (0.74 mm) but ends other cuts with the ZMP at the hull's
    edge (50:350 at 5 ms -0.3 mm): not kept (2026-12-03). What moved the stances was the cut's start
    (session 18, s18-unseen): its right foot, in the air for 0.17 s, stood on its first footprint from
    the start, a step within the bounds but out of the legs' reach from over the left foot; that step is
    now checked with the waist over its standing foot (core.balance.plan._stances), and 200:500 slides
    0.05 / 0.04 mm at 5 / 3 ms (36.7 / 35.4 mm before)."""
    _assert_the_cut_stands(walk, start, end, period_s)


def _assert_the_cut_stands(walk, start: int, end: int, period_s: float) -> None:
    cut = walk.at_frames(np.arange(start, end), f"walk_{start}_{end}")
    tree, mapping, result = _gait(cut, "g1", GaitSettings(period_s=period_s))
    report = result.report
    assert report["samples_without_support"] == 0
    assert report["zmp_outside_support_pct"] == 0.0 and report["min_support_margin_m"] >= 0.010
    assert report["stance_slide_m"] < 0.001
    for side, (down, heights, _) in _soles(tree, mapping, result).items():
        assert not _on_an_edge(heights[down]), f"{side} stance foot: {_on_an_edge(heights[down])}"


def test_a_robot_without_masses_gets_a_clear_error(walk, tmp_path):
    text = ROBOTS["g1"].read_text()
    massless = re.sub(r"<inertial>.*?</inertial>", "", text, flags=re.S)
    path = tmp_path / "g1_massless.urdf"
    path.write_text(massless)
    tree = KinematicTree(parse_urdf(path))
    with pytest.raises(BalanceError, match="no link has an <inertial>"):
        generate_gait(walk, tree, auto_map(walk, tree))


def test_the_gait_does_not_depend_on_where_the_clip_faces(walk, g1_walk):
    """The walk turned a quarter about the up axis and moved 3 m: the same steps, and the same
    balance figures within a millimetre or two."""
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    shift = np.array([3.0, -2.0, 0.0])
    turned = SourceMotion(walk.bone_names, walk.parents, walk.heads @ turn.T + shift, walk.tails @ turn.T + shift,
                          turn @ walk.root_rotation, walk.rest_heads, walk.rest_tails, walk.rest_root_rotation,
                          walk.fps, "walk_turned")
    _, _, result = _gait(turned, "g1")
    base, report = g1_walk[2].report, result.report
    assert report["steps"] == base["steps"]
    for side in ("left", "right"):
        assert [s["lift_off_s"] for s in report["swing_phases"][side]] == \
            pytest.approx([s["lift_off_s"] for s in base["swing_phases"][side]], abs=0.02)
    assert report["travel_m"] == pytest.approx(base["travel_m"], abs=0.02)
    assert report["multibody_zmp_rms_error_m"] == pytest.approx(base["multibody_zmp_rms_error_m"], abs=0.002)
    assert report["min_support_margin_m"] >= 0.008 and report["stance_slide_m"] < 0.002


def test_the_mirrored_walk_walks_the_mirrored_gait(walk, g1_walk):
    """The walk seen in a mirror (x negated, left and right names swapped): each foot steps when the
    other did. Where both feet read up but the body does not fall, the foot kept down was the left
    on a tie, whichever it was, so the mirrored walk stood on other feet there."""
    mirrored = mirrored_motion(walk)
    _, _, result = _gait(mirrored, "g1")
    base, report = g1_walk[2].report, result.report
    assert report["steps"] == base["steps"]
    for side, other in (("left", "right"), ("right", "left")):
        for key in ("lift_off_s", "touch_down_s"):
            assert [s[key] for s in report["swing_phases"][side]] == \
                pytest.approx([s[key] for s in base["swing_phases"][other]], abs=0.02)
    assert report["min_support_margin_m"] == pytest.approx(base["min_support_margin_m"], abs=0.003)


def test_a_robot_rooted_at_its_torso_walks_the_same_gait(walk, g1_walk):
    """The G1 described from its torso (legs hanging from the waist joints): the same gait, its
    output the torso's own pose and the URDF's joints."""
    report = _same_gait_from_the_torso(walk, g1_walk, ("left_ankle_roll_link", "right_ankle_roll_link"))
    assert report["steps"] == g1_walk[2].report["steps"]
    assert report["min_support_margin_m"] == pytest.approx(g1_walk[2].report["min_support_margin_m"], abs=1e-4)


def _same_gait_from_the_torso(walk, gait, feet: tuple[str, str], root: str = "torso_link",
                              tol_m: float = 1e-6) -> dict:
    """The robot of `gait` rooted at its torso (or `root`) walks `walk`: its output is that link's own
    pose and the URDF's joints, and its feet and torso are where the gait had them to tol_m (a
    micrometre unless told). Its report."""
    from tests.robot_variants import rooted_at

    tree, _, base = gait
    torso = KinematicTree(rooted_at(tree.robot, root))
    result = generate_gait(walk, torso, auto_map(walk, torso))
    assert result.joint_names == torso.joint_names
    root = pose_matrices(result.root_rotation, result.root_position)
    base_root = pose_matrices(base.root_rotation, base.root_position)
    for name in feet + ("torso_link",):
        here = torso.link_transform(result.q, torso.link_index(name), root)
        there = tree.link_transform(base.q, tree.link_index(name), base_root)
        assert np.abs(here[:, :3, 3] - there[:, :3, 3]).max() < tol_m, name
    return result.report


def test_a_robot_rooted_at_its_ankle_walks_the_same_gait(walk, g1_walk):
    """The G1 described from its left ankle: hung from its pelvis, the pelvis frame sat on the
    left hip joint and the gait's waist turned and tilted about it (right hip pitch 0.19 rad
    apart on 1,238 of 1,657 samples); its frame is moved to the waist joint, where the G1's is."""
    report = _same_gait_from_the_torso(walk, g1_walk, ("left_ankle_roll_link", "right_ankle_roll_link"),
                                       root="left_ankle_roll_link")
    assert report["steps"] == g1_walk[2].report["steps"]
    assert report["min_support_margin_m"] == pytest.approx(g1_walk[2].report["min_support_margin_m"], abs=1e-6)


def test_the_h1_rooted_at_its_torso_walks_the_same_gait(walk, h1_walk):
    """The H1 (five-joint legs: its stances are placed parallel, within the widths its legs were
    probed to stand flat at) described from its torso: the same stances, feet and figures. Its rolled
    waist's passes amplify the re-rooting's 1e-6 m start difference: measured 2026-12-02, feet and torso
    apart by 3e-8 m at the median sample but up to 0.04-0.06 mm (run to run) near the last stance
    (samples 1338-1391 of 1657), joints up to 1.0 mrad, the figures within 3e-5 m and 1e-4 degree
    (0.5 mm before its height fit judged the placed waist; 1e-6 m with the waist upright); session 13,
    the planned soles keeping a share of their width: feet 2.4e-5 m, joints 1 mrad (bench/h1_sensitivity.py).
    In whole test runs (other tests and BLAS threads before it) the feet came 0.22-0.26 mm apart (sessions
    13, 14), and four starts that differ by rounding put the feet 0.29 mm apart (bench/h1_sensitivity.py,
    session 14): the tolerances are the float32 twin's below, the rolled waist's own noise floor."""
    report = _same_gait_from_the_torso(walk, h1_walk, ("left_ankle_link", "right_ankle_link"), tol_m=1e-3)
    base = h1_walk[2].report
    for key in ("steps", "steps_moved"):
        assert report[key] == base[key]
    for key, tol in (("min_support_margin_m", 5e-4), ("stance_slide_m", 5e-4), ("multibody_zmp_rms_error_m", 2e-4),
                     ("travel_m", 1e-3)):
        assert report[key] == pytest.approx(base[key], abs=tol), key
    assert report["stance_tilt_deg"] == pytest.approx(base["stance_tilt_deg"], abs=0.05)


def test_the_h1_walk_rounded_to_float32_walks_the_same_gait(walk, h1_walk):
    """The walk's positions rounded to float32 (as Blender's BVH importer hands them to the CLI): the
    same H1 gait, feet within a millimetre and figures within a few tenths (measured 2026-12-02,
    session 13: feet 0.1 mm apart, margin 0.02 mm, slide 0.15 mm). Before the lateral plan's soles
    kept a share of their width (gait.SHRINK_WIDTH_SHARE) a 30 mm sole shrunk by 15 mm was a line, and
    this start walked another gait: feet 7.8 mm, joints 0.35 rad apart, margin +8.2 against +5.6 mm,
    slide 2.1 against 0.5 mm (bench/h1_sensitivity.py)."""
    rounded = dataclasses.replace(walk, heads=walk.heads.astype(np.float32).astype(float),
                                  tails=walk.tails.astype(np.float32).astype(float),
                                  root_rotation=walk.root_rotation.astype(np.float32).astype(float))
    tree, mapping, base = h1_walk
    result = generate_gait(rounded, tree, mapping)
    root, base_root = (pose_matrices(r.root_rotation, r.root_position) for r in (result, base))
    for name in ("left_ankle_link", "right_ankle_link"):
        here = tree.link_transform(result.q, tree.link_index(name), root)[:, :3, 3]
        there = tree.link_transform(base.q, tree.link_index(name), base_root)[:, :3, 3]
        assert np.abs(here - there).max() < 1e-3, name
    report, before = result.report, base.report
    assert report["steps"] == before["steps"]
    for key, tol in (("min_support_margin_m", 5e-4), ("stance_slide_m", 5e-4), ("multibody_zmp_rms_error_m", 2e-4)):
        assert report[key] == pytest.approx(before[key], abs=tol), key


def _step_bounds(tree: KinematicTree, sagittal_waist: bool = False):
    """The robot's step bounds probed as the gait probes them, its waist 5 cm below its zero pose's
    (sagittal_waist: as GaitSettings.sagittal_waist has them)."""
    from core.balance.foot_path import sole_height
    from core.balance.plan import foot_width
    from core.balance.reach import step_bounds
    from core.feet.geometry import standing_rotation

    feet = foot_links(tree)
    zero = tree.zero_pose()
    bodies = dict(zip(feet, foot_bodies(tree, feet)))
    flat = {f: standing_rotation(bodies[f], zero[f, :3, :3]) for f in feet}
    side = {f: "left" if zero[f, 1, 3] > zero[0, 1, 3] else "right" for f in feet}
    legs = {side[leg.foot]: leg for leg in leg_iks(tree, feet, flat)}
    heights = {side[f]: sole_height(bodies[f], flat[f]) for f in feet}
    waist = float(zero[0, 2, 3] - zero[feet[0], 2, 3]) + heights[side[feet[0]]] - 0.05  # above the ground
    return step_bounds(tree, legs, np.zeros(tree.dof), waist, 0.97, heights,
                   min(foot_width(bodies[f], flat[f]) for f in feet), {side[f]: flat[f] for f in feet},
                   sagittal_waist)


def test_each_step_is_checked_with_the_waist_where_double_support_has_it():
    """The G1's forward bound is probed with the waist 15-85 % of the way between the feet (the
    walk's double supports), not over either foot; check_steps shortens a step the legs do not
    stand across, and a stance the clip ends in is checked with the waist further toward each foot
    (or, told the foot stood on, behind it)."""
    from core.balance.reach import check_steps

    bounds = _step_bounds(KinematicTree(parse_urdf(ROBOTS["g1"])))
    assert bounds.forward_m > 0.3  # 0.27 m with the waist over each foot
    probe = bounds.probe
    beside = -bounds.natural_m * probe.left  # the right foot where the G1 stands as built

    def share(length: float, last: bool) -> float:
        return float(check_steps(bounds, [(beside + length * probe.forward, 0.0)], [last])[0])

    assert share(0.3, False) == share(0.3, True) == 1.0
    assert share(0.4, False) == 1.0 and share(0.4, True) < 1.0
    assert share(0.45, False) < 1.0
    # a shortened step stands
    short = share(0.45, False)
    assert check_steps(bounds, [(beside + short * 0.45 * probe.forward, 0.0)], [False])[0] == 1.0
    # told the foot it stands on, a last stance is checked with the waist also behind that foot (the
    # final double support's waist trails the target ZMP there): a 0.3 m step is shortened, the
    # stance as built stands
    for standing_left in (True, False):
        assert check_steps(bounds, [(beside + 0.3 * probe.forward, 0.0)], [True], [standing_left])[0] < 1.0
        assert check_steps(bounds, [(beside, 0.0)], [True], [standing_left])[0] == 1.0


def test_h1_steps_are_probed_with_its_waist_going_along_them():
    """A leg without an ankle roll cannot lean sideways with its soles flat (the H1's lean is 0),
    but its waist still goes from one foot to the other along a step: the forward bound is probed
    with the waist 15-85 % of the way along (0.80 m with it held midway, where the H1 walk stepped
    0.74-0.77 m), each step is checked at its length along (a 0.7 m step is shortened), and a rear
    foot whose ankle pitch binds at lift-off, the waist over the front foot, rolls onto its toe edge
    (before, the H1 was neither checked nor rolled)."""
    from core.balance.reach import check_steps, heel_off_angles
    from core.balance.rollover import toe_edge
    from core.feet.geometry import standing_rotation

    h1 = KinematicTree(parse_urdf(ROBOTS["h1"]))
    bounds = _step_bounds(h1)
    probe = bounds.probe
    assert bounds.lean == 0.0
    assert 0.3 < bounds.forward_m < 0.55
    beside = -bounds.natural_m * probe.left  # the right foot where the H1 stands as built

    def share(length: float) -> float:
        return float(check_steps(bounds, [(beside + length * probe.forward, 0.0)], [False])[0])

    assert share(0.5) == 1.0 and share(0.7) < 1.0
    feet = foot_links(h1)
    zero = h1.zero_pose()
    side = {f: "left" if zero[f, 1, 3] > zero[0, 1, 3] else "right" for f in feet}
    bodies = dict(zip(feet, foot_bodies(h1, feet)))
    flats = {side[f]: standing_rotation(bodies[f], zero[f, :3, :3]) for f in feet}
    edges = {side[f]: toe_edge(bodies[f], flats[side[f]], probe.forward) for f in feet}

    def heel_off(length: float) -> float:
        rear, front = np.eye(4), np.eye(4)
        rear[:3, :3], front[:3, :3] = flats["left"], flats["right"]
        front[:2, 3] = beside + length * probe.forward
        return float(heel_off_angles(bounds, flats, edges, [("left", rear, "right", front)])[0])

    assert heel_off(0.4) == 0.0 and heel_off(0.6) > 0.0


def test_h1_walks_steps_stand_along(h1_upright_walk):
    """The H1 walk with its waist upright and its steps bounded and checked along (above): the
    multibody ZMP's worst margin -11 mm (-498 mm with the 0.74-0.77 m steps), still within 20 % of
    the scaled travel (89 %; 99 % before). Its slide and the samples outside are still the xfail
    above (the rolled waist's steps: tests/core/test_sagittal_waist.py). With every frame of the bake
    solved from its own start its height fit raised the waist 10 cm for one sample at 1.09 s, the new
    foot off the ground (-184 mm); its height moves only the way a cause asks since (-22 mm, 88 %,
    2026-12-03)."""
    report = h1_upright_walk[2].report
    assert report["steps"] == 11
    assert report["min_support_margin_m"] > -0.05
    assert abs(report["travel_m"] / report["source_travel_m"] - 1.0) < 0.2


def test_h1_stances_are_placed_parallel_within_the_width_its_legs_stand_flat():
    """Legs without an ankle roll keep each hip near its flat foot's fore-aft plane: a step is
    placed parallel to the foot stepped from (2 degrees at most) and across its heading no wider
    than the H1 is built nor narrower than its legs were probed to stand with parallel level
    soles. A six-joint G1 keeps the turn its hips allow."""
    h1 = KinematicTree(parse_urdf(ROBOTS["h1"]))
    bounds = _step_bounds(h1)
    zero = h1.zero_pose()
    left, right = (h1.link_index(f"{side}_ankle_link") for side in ("left", "right"))
    built = float(np.linalg.norm(zero[left, :2, 3] - zero[right, :2, 3]))
    assert np.degrees(bounds.turn_rad) <= 2.0 + 1e-9
    assert bounds.width_max_m == pytest.approx(built, abs=1e-9)
    assert 0.30 < bounds.width_min_m < built - 0.02  # the probe found narrower stances that stand flat
    ref = np.eye(4)
    ref[:3, :3] = zero[left, :3, :3]
    wide = np.eye(4)  # the person's step: 55 cm across, the foot turned 29 degrees out
    wide[:3, :3] = Rotation.from_euler("z", -29, degrees=True).as_matrix() @ zero[right, :3, :3]
    wide[:2, 3] = [0.3, -0.55]
    placed = bounds.limit(ref, zero[left, :3, :3], wide, zero[right, :3, :3], "right")
    assert abs(placed[1, 3]) == pytest.approx(built, abs=1e-9) and placed[0, 3] == pytest.approx(0.3)
    turn = Rotation.from_matrix(placed[:3, :3] @ zero[right, :3, :3].T).magnitude()
    assert np.degrees(turn) <= 2.0 + 1e-6
    g1 = _step_bounds(KinematicTree(parse_urdf(ROBOTS["g1"])))
    assert np.degrees(g1.turn_rad) > 10.0


def test_a_shortened_step_is_made_up_on_the_next_ones():
    """The person steps 1.5 and 2.25 times as far as the G1 can step forward (0.59 and 0.89 m), then
    stops. Each step aims at the person's footprint, so the walk ends where the person stood (the
    steps after the clamped one taking up the distance, each still within the bounds), not a
    quarter of a bound short."""
    from core.balance.foot_path import plan_stances
    from core.feet.geometry import standing_rotation

    tree = KinematicTree(parse_urdf(ROBOTS["g1"]))
    bounds = _step_bounds(tree)
    zero = tree.zero_pose()
    feet = {"left": tree.link_index("left_ankle_roll_link"), "right": tree.link_index("right_ankle_roll_link")}
    bodies = dict(zip(feet, foot_bodies(tree, list(feet.values()))))
    flats = {side: standing_rotation(bodies[side], zero[link, :3, :3]) for side, link in feet.items()}
    forward = np.r_[bounds.forward_axis, 0.0]
    frames = 100
    far = bounds.forward_m
    person = {"left": [(0, 25, 0.0), (45, 70, 1.5 * far), (90, 100, 2.25 * far)],
              "right": [(0, 35, 0.0), (55, 100, 2.25 * far)]}
    poses, flags = {}, {}
    for side, stances in person.items():
        poses[side] = np.repeat(np.eye(4)[None], frames, axis=0)
        poses[side][:, :3, :3] = flats[side]
        poses[side][:, :3, 3] = zero[feet[side], :3, 3]
        flags[side] = np.zeros(frames, dtype=bool)
        for start, end, x in stances:
            poses[side][start:, :3, 3] = zero[feet[side], :3, 3] + x * forward
            flags[side][start:end] = True

    def nearest(ref, pose, stance):
        return bounds.limit(ref.pose, flats[ref.side], pose, flats[stance.side], stance.side)

    stances, moved = plan_stances(poses, flags, bodies, flats, nearest)
    along = {side: [float((st.pose[:3, 3] - zero[feet[side], :3, 3]) @ forward) for st in items]
             for side, items in stances.items()}
    assert moved == 2
    assert along["left"][1] == pytest.approx(far)  # 1.5 bounds asked, clamped
    assert along["right"][1] == pytest.approx(2 * far)  # 2.25 asked from 1: clamped again
    assert along["left"][2] == pytest.approx(2.25 * far)  # the stop: where the person stood
    assert along["right"][1] - along["left"][1] <= bounds.forward_m + 1e-9


@pytest.fixture(scope="module")
def bent_walk(walk, g1_walk, tmp_path_factory):
    """The G1 with its knees, hips and ankles' zeros turned (its zero pose crouched, ankles not level):
    its gait and the turns (n,) from the G1's joints to its own."""
    from tests.robot_variants import write_urdf, zero_shifted

    bent = {f"{side}_{joint}": turn for side in ("left", "right")
            for joint, turn in (("knee_joint", 0.6), ("hip_pitch_joint", -0.3), ("ankle_pitch_joint", -0.3))}
    path = write_urdf(zero_shifted(g1_walk[0].robot, bent), tmp_path_factory.mktemp("bent") / "g1_bent.urdf")
    tree = KinematicTree(parse_urdf(path))
    return generate_gait(walk, tree, auto_map(walk, tree)), np.array([bent.get(n, 0.0) for n in tree.joint_names])


def test_a_robot_built_with_bent_legs_walks_as_well(bent_walk, g1_walk):
    """Its soles are found level from their geometry, and its legs stand straight by their mechanism
    (core.retarget.neutral.neutral_legs), not by its zero pose, in the bake and in every stage of the
    gait: it walks the G1's gait. Before the gait read the legs' neutral, fed the G1's own bake it
    walked 5.4 deg RMS from it (knees 16 deg apart on frames 1277-1536), its stance sliding 1.66 mm."""
    result, shift = bent_walk
    report, g1 = result.report, g1_walk[2]
    assert report["steps"] == g1.report["steps"]
    assert report["zmp_outside_support_pct"] == 0.0 and report["min_support_margin_m"] >= 0.010
    assert report["multibody_zmp_rms_error_m"] < 0.012
    assert report["stance_slide_m"] < 0.001
    # the G1's own zero leans 0.0004 deg (core.retarget.neutral), which the bent robot's straight legs do not
    assert np.degrees(np.sqrt(np.mean((result.q + shift - g1.q) ** 2))) < 0.001


def test_without_the_upper_body_the_arms_hold_still(walk):
    short = SourceMotion(walk.bone_names, walk.parents, walk.heads[:480], walk.tails[:480], walk.root_rotation[:480],
                         walk.rest_heads, walk.rest_tails, walk.rest_root_rotation, walk.fps, "walk_4s")
    tree, _, result = _gait(short, "g1", GaitSettings(upper_body=False))
    legs = np.concatenate([leg.columns for leg in leg_iks(tree, foot_links(tree))])
    others = np.setdiff1d(np.arange(tree.dof), legs)
    assert np.ptp(result.q[:, others], axis=0).max() < 1e-9
    assert np.ptp(result.q[:, legs], axis=0).min() > 0.01  # the legs still walk


def test_a_clip_named_the_mixamo_way_walks_the_same_gait(g1_walk):
    """The walk with every bone renamed as Mixamo names them: the same steps and balance."""
    from tests import variants

    clip = load_bvh(WALK)
    renamed = variants.renamed(clip, variants.convention_names("mixamo")).to_source_motion()
    report = _gait(renamed, "g1")[2].report
    base = g1_walk[2].report
    assert report["steps"] == base["steps"]
    assert report["min_support_margin_m"] == pytest.approx(base["min_support_margin_m"], abs=1e-6)
    assert report["stance_slide_m"] == pytest.approx(base["stance_slide_m"], abs=1e-6)


def test_a_gait_the_robot_would_not_stand_says_so(g1_walk, h1_upright_walk):
    """The H1's gait with its waist upright leaves its feet, slides and stands its soles on an edge
    (14.1 % outside, 139 mm, 13 degrees): the warnings say it, with the figures; the G1's, which
    stands, says none of it."""
    h1 = h1_upright_walk[2].report
    assert h1["zmp_outside_support_pct"] > 0 and any("the multibody ZMP leaves the feet" in w for w in h1["warnings"])
    assert h1["stance_slide_m"] > 0.001 and any("stance foot slides" in w for w in h1["warnings"])
    assert h1["stance_tilt_deg"] > 10.0 and any("stance sole tilts" in w for w in h1["warnings"])
    assert any("can lean only 0 %" in w for w in h1["warnings"])  # the rolled waist leans: it says none
    g1 = g1_walk[2].report
    assert g1["stance_tilt_deg"] < 1.0
    assert not [w for w in g1["warnings"] if "leaves the feet" in w or "stance foot slides" in w or "tilts" in w]


def test_feet_without_sole_geometry_are_said_before_the_balance_fails(walk):
    """The test humanoid's legs end at the ankle with no foot geometry: a point to stand on. The
    gait still runs, and its warnings say why it cannot balance."""
    tree = KinematicTree(parse_urdf(ROOT / "tests" / "data" / "robots" / "simple_humanoid.urdf"))
    short = dataclasses.replace(walk, heads=walk.heads[:240], tails=walk.tails[:240],
                                root_rotation=walk.root_rotation[:240])
    report = generate_gait(short, tree, auto_map(short, tree)).report
    assert any("stands on soles 0.0 cm across" in w for w in report["warnings"])
    assert report["zmp_outside_support_pct"] > 50.0


def test_a_held_swing_foot_turns_no_further_than_the_person_turned_it(held_walk_gait):
    """The walk held 2.4 s in mid-swing: the person's foot turns 85 degrees just after lift-off and
    then holds. A clamped spline through that quick turn and the long hold swung the held foot
    130 degrees past it and back (it faced backwards for a second)."""
    tree, mapping, result = held_walk_gait
    (side, swing), = [(side, s) for side, items in result.report["swing_phases"].items() for s in items
                      if s["touch_down_s"] - s["lift_off_s"] >= 2.0]
    from core.balance.plan import foot_sides

    foot = {s: link for link, s in foot_sides(tree, mapping, foot_links(tree)).items()}[side]
    root = pose_matrices(result.root_rotation, result.root_position)
    turn = tree.link_transform(result.q, foot, root)[:, :3, :3] @ tree.zero_pose()[foot, :3, :3].T
    heading = np.degrees(np.unwrap(np.arctan2(turn[:, 1, 0], turn[:, 0, 0])))
    during = (result.time_s >= swing["lift_off_s"]) & (result.time_s <= swing["touch_down_s"])
    ends = heading[[np.flatnonzero(during)[0], np.flatnonzero(during)[-1]]]
    # 20 degrees: the person's held foot turns 10 degrees past the heading it lands at
    assert heading[during].min() > ends.min() - 20.0 and heading[during].max() < ends.max() + 20.0, \
        f"the held foot turned to {heading[during].min():.0f}..{heading[during].max():.0f} deg between {ends.round(0)}"
