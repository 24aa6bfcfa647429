"""Robots from outside the project, baked as a user would (auto-map, default settings).

`tests/data/robots/simple_humanoid.urdf` (example-robot-data, BSD-2-Clause) ends each arm
in three wrist joints stacked on one point with no link beyond: a hand chain there has no
length, and auto-mapping one used to stop the bake ("robot chain 'LARM_LINK5' has no length").
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget.pipeline import retarget

ROOT = Path(__file__).resolve().parents[2]
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
SIMPLE = ROOT / "tests" / "data" / "robots" / "simple_humanoid.urdf"


@pytest.fixture(scope="module")
def hop():
    clip = load_bvh(HOP)
    return dataclasses.replace(clip, motion=clip.motion[:360]).to_source_motion()


@pytest.fixture(scope="module")
def simple_bake(hop):
    tree = KinematicTree(parse_urdf(SIMPLE))
    mapping = auto_map(hop, tree)
    return tree, mapping, retarget(hop, tree, mapping)


def test_stacked_wrist_without_a_hand_link_bakes_arms_without_hands(simple_bake):
    tree, mapping, result = simple_bake
    chains = {c.name: c for c in mapping.chains}
    assert {"spine", "left_leg", "right_leg", "left_arm", "right_arm"} <= set(chains)
    assert not any(c.role == "hand" for c in mapping.chains)
    assert chains["left_arm"].robot_base.startswith("LARM") and chains["right_arm"].robot_base.startswith("RARM")
    assert result.report["limit_violations"] == 0
    by_limb = result.report["limb_direction_error_by_limb"]
    assert max(by_limb[k] for k in ("left_arm", "right_arm")) < 15.0, by_limb


def test_legs_ending_at_the_ankle_raise_no_false_left_right_warning(simple_bake):
    """Its legs end at the ankle (no foot link): the check of left and right took the knee-to-ankle
    direction for the feet's facing and said the legs were crossed on 98 % of frames."""
    _, _, result = simple_bake
    assert not [w for w in result.report["warnings"] if w.startswith("mapping:")], result.report["warnings"]
    assert result.report["automap_confidence"] == 1.0


def _upper_body(tmp_path) -> Path:
    """The H1 without its legs: a torso whose arms hang lowest (as alex_nub_hands of
    example-robot-data, whose arms auto-map took for legs and planted as feet)."""
    import xml.etree.ElementTree as ET
    root = ET.parse(ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf").getroot()
    leg_words = ("hip", "knee", "ankle", "foot")
    for elem in list(root):
        if elem.tag in ("link", "joint") and any(w in elem.get("name", "") for w in leg_words):
            root.remove(elem)
    path = tmp_path / "h1_upper_body.urdf"
    ET.ElementTree(root).write(path)
    return path


def test_arms_hanging_lowest_on_a_legless_robot_are_arms(hop, tmp_path):
    tree = KinematicTree(parse_urdf(_upper_body(tmp_path)))
    mapping = auto_map(hop, tree)
    chains = {c.name: c for c in mapping.chains}
    assert not any(c.role == "leg" for c in mapping.chains)
    assert chains["left_arm"].robot_base == "left_shoulder_pitch_link"
    assert chains["right_arm"].robot_base == "right_shoulder_pitch_link"
    result = retarget(hop, tree, mapping)
    by_limb = result.report["limb_direction_error_by_limb"]
    assert set(by_limb) == {"left_arm", "right_arm"} and max(by_limb.values()) < 15.0, by_limb
    assert any("named as arms" in w for w in result.report["warnings"])


def test_default_export_of_a_bake_within_limits_stays_within_them(simple_bake, hop):
    """The bake holds each joint's key-to-key speed to its limit, but the playback cubic between
    keys ran faster near turns, so `export` with default settings refused the bake of 5 of 6
    robots from elsewhere (simple_humanoid's hop: knee and hip roll over their limits). The
    samples are now held to the limits (by milliradians); keys that are too fast still fail."""
    import numpy as np
    from scipy.spatial.transform import Rotation

    from core.motion.bake_csv import BakeTable
    from core.playback.prepare import ExportSettings, prepare_playback
    from core.playback.sampling import JointLimits, check_limits, resample

    tree, _, result = simple_bake
    limits = JointLimits.from_tree(tree)
    quat = Rotation.from_matrix(result.root_rotation).as_quat()[:, [3, 0, 1, 2]]
    table = BakeTable(list(tree.joint_names), np.arange(len(result.q)) / result.fps, result.root_position, quat,
                      result.q)
    keys_speed = np.abs(np.diff(result.q, axis=0)) * result.fps
    assert (keys_speed <= tree.velocity * (1 + 1e-6)).all()  # the bake itself is within the limits
    plain = prepare_playback(table, limits, ExportSettings())
    assert plain.violations == [], [v.describe() for v in plain.violations[:3]]
    track, warnings = resample(table, ExportSettings().period_s, limits)
    assert any("held to the velocity limits" in w for w in warnings)
    shift = float(warnings[-1].split("up to ")[1].split(" rad")[0])
    assert 0 < shift < 0.01
    fast = BakeTable(table.joint_names, table.time / 1.5, table.root_position, table.root_quaternion, table.q)
    assert any(v.kind == "velocity" for v in check_limits(resample(fast, 0.01, limits)[0], limits))



def test_feet_without_geometry_stand_on_the_leg_tip(simple_bake, hop):
    """simple_humanoid's legs carry no geometry: the foot was the origin of the link holding the
    chain's tip point, the shin, i.e. the knee; the bake planted knee points and its feet never
    came within 8 cm of the ground (contact_preserved_pct 0)."""
    import numpy as np

    tree, mapping, _ = simple_bake
    result = retarget(hop, tree, mapping, contacts="auto")
    assert result.report["feet_planted"] and result.report["contact_preserved_pct"] > 30.0
    root = np.tile(np.eye(4), (len(result.q), 1, 1))
    root[:, :3, :3], root[:, :3, 3] = result.root_rotation, result.root_position
    ankle = tree.link_transform(result.q, tree.link_names.index("LLEG_LINK5"), root)[:, 2, 3]
    assert ankle.min() > -0.005 and np.percentile(ankle, 10) < 0.005  # on the ground, not through it



def test_a_dual_arm_torso_without_legs_gets_both_arms(hop):
    """Baxter (example-robot-data): fixed collision helpers beside its torso made the base look
    like the chest, so auto-map found one jointed branch and drove only one arm."""
    tree = KinematicTree(parse_urdf(ROOT / "tests" / "data" / "robots" / "baxter.urdf"))
    mapping = auto_map(hop, tree)
    arms = {c.side: c for c in mapping.chains if c.role == "arm"}
    assert set(arms) == {"left", "right"} and not any(c.role == "leg" for c in mapping.chains)
    for side, chain in arms.items():
        assert chain.robot_base.startswith(side) and all(t.startswith(side[0]) for t in chain.robot_tips)
    by_limb = retarget(hop, tree, mapping).report["limb_direction_error_by_limb"]
    assert {"left_arm", "right_arm"} <= set(by_limb), by_limb


def test_an_arm_lying_on_the_floor_is_one_arm_not_two_legs(hop):
    """UR5 (example-robot-data) in its zero pose lies along the floor next to a fixed `base`
    frame: the frame and the arm were taken for two legs, and comparing their lengths divided
    by zero (the bake stopped with ZeroDivisionError)."""
    tree = KinematicTree(parse_urdf(ROOT / "tests" / "data" / "robots" / "ur5_robot.urdf"))
    mapping = auto_map(hop, tree)
    roles = sorted(c.role for c in mapping.chains)
    assert "leg" not in roles and roles.count("arm") == 1, roles
    assert retarget(hop, tree, mapping).q.shape == (len(hop.heads), tree.dof)


PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"


def _panda_parts(prefix: str) -> list:
    """The Panda's links and joints, names prefixed (one arm of a dual-arm robot)."""
    import copy
    import xml.etree.ElementTree as ET
    out = []
    for elem in ET.parse(PANDA).getroot():
        if elem.tag not in ("link", "joint"):
            continue
        elem = copy.deepcopy(elem)
        elem.set("name", prefix + elem.get("name"))
        for ref in elem.findall("parent") + elem.findall("child") + elem.findall("mimic"):
            key = "link" if ref.tag != "mimic" else "joint"
            ref.set(key, prefix + ref.get(key))
        out.append(elem)
    return out


def _joint(kind: str, name: str, parent: str, child: str, xyz: str, rpy: str = "0 0 0", axis: str = "0 0 1",
           limits: tuple[float, float] = (-1.0, 1.0)) -> str:
    limit = "" if kind in ("fixed", "continuous") else \
        f'<limit lower="{limits[0]}" upper="{limits[1]}" effort="10" velocity="1"/>'
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>')


def _box(name: str, size: str, xyz: str = "0 0 0") -> str:
    return (f'<link name="{name}"><collision><origin xyz="{xyz}"/><geometry><box size="{size}"/></geometry>'
            f'</collision></link>')


def _mobile_manipulator(tmp_path, sides: tuple[str, ...]) -> Path:
    """Panda arms on a torso that a lift slides up a column, on a wheeled base with a head (as
    PAL's Tiago and Tiago++ of example-robot-data are built)."""
    import xml.etree.ElementTree as ET
    parts = ['<robot name="mobile_panda">', '<link name="base_footprint"/>', _box("base_link", "0.5 0.5 0.3"),
             _joint("fixed", "base_joint", "base_footprint", "base_link", "0 0 0.15")]
    for side, y in (("left", 0.2), ("right", -0.2)):
        parts += [_box(f"wheel_{side}_link", "0.2 0.04 0.2"),
                  _joint("continuous", f"wheel_{side}_joint", "base_link", f"wheel_{side}_link", f"0 {y} -0.05",
                         axis="0 1 0")]
    parts += [_box("torso_fixed_link", "0.2 0.2 0.6", "0 0 0.3"),
              _joint("fixed", "torso_fixed_joint", "base_link", "torso_fixed_link", "-0.05 0 0.15"),
              _box("torso_lift_link", "0.25 0.3 0.2"),
              _joint("prismatic", "torso_lift_joint", "torso_fixed_link", "torso_lift_link", "0 0 0.75",
                     limits=(0.0, 0.35)),
              _box("head_1_link", "0.05 0.05 0.1"), _box("head_2_link", "0.15 0.2 0.1", "0.05 0 0.05"),
              _joint("revolute", "head_1_joint", "torso_lift_link", "head_1_link", "0.1 0 0.1"),
              _joint("revolute", "head_2_joint", "head_1_link", "head_2_link", "0 0 0.1", axis="0 1 0"),
              '</robot>']
    robot = ET.fromstring("".join(parts))
    for side in sides:  # each arm mounted on the torso's side, pointing sideways as Tiago's does
        y = {"left": 0.18, "right": -0.18, "": 0.15}[side]
        prefix = f"{side}_" if side else ""
        for elem in _panda_parts(prefix):
            robot.append(elem)
        robot.append(ET.fromstring(_joint("fixed", f"{prefix}arm_mount", "torso_lift_link", f"{prefix}panda_link0",
                                          f"0.05 {y} -0.05", rpy=f"{np.sign(y) * -1.5708} 0 0")))
    path = tmp_path / f"mobile_panda_{len(sides)}.urdf"
    ET.ElementTree(robot).write(path)
    return path


@pytest.mark.parametrize("sides", [("",), ("left", "right")], ids=["tiago", "tiago_dual"])
def test_an_arm_on_a_lift_starts_at_its_shoulder(sides, hop, tmp_path):
    """Tiago's arm rides a torso lift up a column on a wheeled base: auto-map took the column and
    lift for the arm (upper arm torso_fixed_link, hand torso_lift_link) and Tiago++ (two arms on
    that lift) got one arm, as wheels beside the column made the base no chest."""
    tree = KinematicTree(parse_urdf(_mobile_manipulator(tmp_path, sides)))
    mapping = auto_map(hop, tree)
    arms = {c.name: c.robot_base for c in mapping.chains if c.role == "arm"}
    prefixes = [f"{s}_" if s else "" for s in sides]
    assert sorted(arms.values()) == sorted(f"{p}panda_link1" for p in prefixes), arms
    if len(sides) == 2:
        assert arms == {"left_arm": "left_panda_link1", "right_arm": "right_panda_link1"}
    hands = [c.robot_base for c in mapping.chains if c.role == "hand"]
    assert all(h.endswith(("panda_link5", "panda_link6", "panda_link7")) for h in hands), hands
    result = retarget(hop, tree, mapping)
    lift = tree.joint_names.index("torso_lift_joint")
    assert np.abs(result.q[:, lift]).max() < 1e-9  # the lift keeps its neutral height
    if len(sides) == 2:
        assert max(result.report["limb_direction_error_by_limb"].values()) < 25.0


def test_fixed_fingers_hanging_lowest_are_no_legs(hop):
    """Kinova's Jaco (example-robot-data, in tests/data) is folded in its zero pose, its gripper's
    two fixed fingers the lowest ends: they were taken for legs, then (named as fingers) for two
    arms without a joint, and the bake stopped ("no chain to map. In the robot: 0 leg(s), 2
    arm(s)") although the robot is one arm."""
    tree = KinematicTree(parse_urdf(ROOT / "tests" / "data" / "robots" / "kinova.urdf"))
    mapping = auto_map(hop, tree)
    assert [c.role for c in mapping.chains if c.role in ("arm", "leg")] == ["arm"]
    assert next(c for c in mapping.chains if c.role == "arm").robot_base == "j2s6s200_link_1"
    result = retarget(hop, tree, mapping)
    assert result.report["limit_violations"] == 0
    assert np.ptp(result.q, axis=0).max() > 0.5  # the arm moves with the actor's


def test_a_robot_copied_without_its_meshes_says_so(hop, tmp_path):
    """G1's URDF copied without its meshes folder baked on capsules along the bones and reported
    self_collision_pct 0 on the hop (89 with its meshes) with no warning at all."""
    import shutil
    g1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
    alone = Path(shutil.copy(g1, tmp_path / g1.name))
    def measured(tree):  # overlaps as baked, not avoided (avoidance, on by default, would leave 0 % on both)
        mapping = auto_map(hop, tree)
        return retarget(hop, tree, mapping, dataclasses.replace(mapping.settings, avoid_self_collision=False))

    whole = measured(KinematicTree(parse_urdf(g1)))
    assert not [w for w in whole.report["warnings"] if "mesh files not found" in w]
    report = measured(KinematicTree(parse_urdf(alone))).report
    said = [w for w in report["warnings"] if "mesh files not found" in w]
    assert len(said) == 1 and "link 'pelvis'" in said[0] and "pelvis.STL" in said[0] and str(alone) in said[0], said
    assert report["self_collision_pct"] < whole.report["self_collision_pct"]  # why the warning matters


def test_a_foot_pitched_by_bent_knees_in_the_zero_pose_keeps_its_toe(hop, tmp_path):
    """Talos (example-robot-data) with its knees zeroed 0.6 rad bent baked another motion (ankles
    39 degrees off, links 19 cm): the toe was the forward-most geometry of the pitched foot, its
    top edge. Here G1's feet are boxes (as Talos's meshes): the toe is measured on the level foot."""
    import dataclasses as dc

    from core.model.urdf import Geometry, Robot
    from core.retarget.automap import foot_tip_offset
    from tests import robot_variants as RV

    g1 = parse_urdf(ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf")
    origin = np.eye(4)
    origin[:3, 3] = [0.015, 0.0, -0.01]
    box = Geometry("box", origin=origin, size=np.array([0.24, 0.08, 0.06]))
    links = {n: (dc.replace(link, collisions=[box], visuals=[]) if "ankle_roll" in n else link)
             for n, link in g1.links.items()}
    robot = Robot(g1.name, links, g1.joints, g1.root_link, g1.source_path)
    knees = {"left_knee_joint": 0.6, "right_knee_joint": 0.6}
    trees = [KinematicTree(parse_urdf(RV.write_urdf(r, tmp_path / f"{k}.urdf")))
             for k, r in (("level", robot), ("bent", RV.zero_shifted(robot, knees)))]
    toes = [foot_tip_offset(t, t.link_index("left_ankle_pitch_link")) for t in trees]
    assert toes[0][0] == toes[1][0] and np.allclose(toes[0][1], toes[1][1], atol=1e-6), toes
    results = [retarget(hop, t, auto_map(hop, t)) for t in trees]
    shift = np.array([knees.get(n, 0.0) for n in trees[1].joint_names])
    ankles = [i for i, n in enumerate(trees[0].joint_names) if "ankle" in n]
    off = np.degrees(np.sqrt(np.mean((results[1].q + shift - results[0].q)[:, ankles] ** 2)))
    assert off < 0.01, off  # 0.37 deg while the bent zero was the neutral (core.retarget.neutral: now 1e-5)


def test_an_arm_that_cannot_take_the_actors_posture_says_so(hop):
    """A table-mounted Panda driven by a hopping actor's arm: its tip points far from the actor's,
    and the warnings say which chain and how far; the G1's limbs, which follow, raise none."""
    motion = hop
    panda = KinematicTree(parse_urdf(ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"))
    report = retarget(motion, panda, auto_map(motion, panda)).report
    arm = next(c for c in report["chains"] if c["name"] == "arm")
    assert arm["tip_direction_error_deg"] > 25.0
    assert any(w.startswith("chain 'arm': its tip points") for w in report["warnings"])
    g1 = KinematicTree(parse_urdf(ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"))
    report = retarget(motion, g1, auto_map(motion, g1)).report
    assert not [w for w in report["warnings"] if "its tip points" in w]


# ------------------------------------------------------------------ third sweep ---
# G1 described otherwise (tests/robot_variants.py), baked from the hop's first 240 frames.

G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


@pytest.fixture(scope="module")
def hop240(hop):
    return dataclasses.replace(hop, heads=hop.heads[:240], tails=hop.tails[:240], root_rotation=hop.root_rotation[:240])


@pytest.fixture(scope="module")
def g1_bake(hop240):
    tree = KinematicTree(parse_urdf(G1))
    mapping = auto_map(hop240, tree)
    return tree, mapping, retarget(hop240, tree, mapping, contacts="auto")


def _variant_bake(robot, motion, tmp_path, **settings):
    """settings: RetargetSettings fields over auto-map's (the defaults)."""
    from tests import robot_variants as RV

    tree = KinematicTree(parse_urdf(RV.write_urdf(robot, tmp_path / "variant.urdf")))
    mapping = auto_map(motion, tree).with_settings(**settings)
    return tree, mapping, retarget(motion, tree, mapping, contacts="auto")  # as the command line bakes


def _robot_side(mapping):
    return [(c.name, c.robot_base, c.robot_tips) for c in mapping.chains]


def _joint_gap(tree, result, g1_bake, skip="") -> float:
    """Largest difference (rad) between the variant's and G1's angles of the joints they share."""
    g1, _, base = g1_bake
    shared = [n for n in tree.joint_names if n in g1.joint_names and not (skip and skip in n)]
    a = result.q[:, [tree.joint_names.index(n) for n in shared]]
    b = base.q[:, [g1.joint_names.index(n) for n in shared]]
    return float(np.abs(a - b).max())


@pytest.mark.parametrize("root", ["left_ankle_roll_link", "left_knee_link"])
def test_a_g1_rooted_in_a_leg_is_mapped_from_its_pelvis(root, hop240, g1_bake, tmp_path):
    """A URDF rooted at the left foot or knee (every joint up the leg reversed): its legs only show
    from the middle of the body. The foot was taken for the base of one arm and the bake drove a
    'manipulator' from the actor's right arm, legs still; from the knee, a leg ran from the ankle
    and the other through the body to a wrist (limbs 75 degrees off)."""
    from tests import robot_variants as RV

    g1, mapping0, base = g1_bake
    tree, mapping, result = _variant_bake(RV.rooted_at(g1.robot, root), hop240, tmp_path)
    assert tree.robot.root_link == root and mapping.robot_root == "pelvis"
    assert _robot_side(mapping) == _robot_side(mapping0)
    assert any(f"rooted at {root}, in a leg" in w for w in result.report["warnings"])
    # the re-hung pelvis frame sits on the hip joint (URDF puts a link's frame on its joint): the
    # body differs by hundredths of a radian
    assert _joint_gap(tree, result, g1_bake, skip="wrist") < 0.05
    assert abs(result.report["limb_direction_error_deg"] - base.report["limb_direction_error_deg"]) < 0.05
    assert result.report["contact_preserved_pct"] == base.report["contact_preserved_pct"]


def test_fixed_frames_added_to_g1_change_nothing(hop240, g1_bake, tmp_path):
    """An IMU, a camera and a sole frame as leaves, and a frame fixed inside the left leg (the knee
    joint hung from it, turned and 2 cm off): that frame was a corner of the leg's reference
    polyline and the ankles baked up to 0.09 rad apart."""
    from tests import robot_variants as RV

    g1, mapping0, _ = g1_bake
    turned = np.array([[0, -1, 0, 0.01], [1, 0, 0, 0], [0, 0, 1, -0.02], [0, 0, 0, 1.0]])
    shift = np.eye(4)
    shift[:3, 3] = [0.03, 0.0, -0.03]
    robot = RV.with_frames(g1.robot, {"imu_link": ("pelvis", np.eye(4)), "camera_mount": ("torso_link", shift),
                                      "left_foot_sole": ("left_ankle_roll_link", shift)},
                           {"left_knee_joint": turned})
    tree, mapping, result = _variant_bake(robot, hop240, tmp_path)
    assert _robot_side(mapping) == _robot_side(mapping0)
    assert _joint_gap(tree, result, g1_bake) < 1e-6


@pytest.mark.parametrize("variant", ["fixed links merged", "continuous joints", "prismatic shins", "mimic joints"])
def test_g1_described_otherwise_bakes_with_sane_figures(variant, hop240, g1_bake, tmp_path):
    """Fixed links merged into their parents (the hands then end at the wrist's last joint, whose
    angle nothing decides), continuous joints, a telescopic joint in each shin, mimic joints:
    no error, the limbs where G1's are."""
    from tests import robot_variants as RV

    g1, _, base = g1_bake
    make = {"fixed links merged": RV.fixed_merged,
            "continuous joints": lambda r: RV.retyped(r, {"waist_yaw_joint": "continuous",
                                                          "left_wrist_roll_joint": "continuous"}),
            "prismatic shins": lambda r: RV.slide_inserted(RV.slide_inserted(r, "left_knee_joint", 0.03),
                                                           "right_knee_joint", 0.03),
            "mimic joints": lambda r: RV.mimicking(r, "right_wrist_yaw_joint", "right_wrist_roll_joint", 0.5)}
    tree, mapping, result = _variant_bake(make[variant](g1.robot), hop240, tmp_path)
    report = result.report
    if variant == "fixed links merged":  # its hands end at the wrist's last joint: they turn elsewhere (0.5-0.66
        # rad), and with avoidance the arms make room for those hands (0.24 rad): the arms compared without it
        off = {"avoid_self_collision": False}
        plain = retarget(hop240, g1, g1_bake[1].with_settings(**off), contacts="auto")
        _, _, unavoided = _variant_bake(make[variant](g1.robot), hop240, tmp_path, **off)
    assert report["limit_violations"] == 0 and report["automap_confidence"] == 1.0
    # 0.15: the prismatic shins' avoiding bake 0.100 deg off the G1's (their legs make room with one more joint)
    assert abs(report["limb_direction_error_deg"] - base.report["limb_direction_error_deg"]) < 0.15
    assert report["contact_preserved_pct"] > 95.0
    if variant == "fixed links merged":
        assert all(j.type != "fixed" for j in tree.robot.joints)
        assert _joint_gap(tree, unavoided, (g1, None, plain), skip="wrist") < 0.05
    elif variant == "continuous joints":
        assert np.isinf(tree.upper[tree.joint_names.index("waist_yaw_joint")])
        assert _joint_gap(tree, result, g1_bake, skip="wrist") < 0.05
    elif variant == "prismatic shins":
        slide = tree.joint_names.index("left_knee_link_slide_joint")
        assert np.abs(result.q[:, slide]).max() <= 0.03 + 1e-9
    else:
        assert "right_wrist_yaw_joint" not in tree.joint_names  # driven by its leader, not solved


def test_g1_meshes_are_found_by_package_uri_in_a_workspace_and_by_file_uri(tmp_path):
    """The URDF moved into a ROS-like tree (src/g1_description/urdf/, meshes beside urdf/) and
    written with package://g1_description/...; and a copy elsewhere naming its meshes by file://."""
    from core.model.mesh_paths import missing_meshes

    text = G1.read_text()
    assert "package://example-robot-data/robots/g1_description/meshes/" in text
    package = tmp_path / "ws" / "src" / "g1_description"
    (package / "urdf").mkdir(parents=True)
    (package / "meshes").symlink_to(G1.parent / "meshes")
    moved = package / "urdf" / "g1.urdf"
    moved.write_text(text.replace("package://example-robot-data/robots/g1_description/meshes/",
                                  "package://g1_description/meshes/"))
    by_file = tmp_path / "elsewhere" / "g1.urdf"
    by_file.parent.mkdir()
    by_file.write_text(text.replace("package://example-robot-data/robots/g1_description/meshes/",
                                    f"file://{G1.parent / 'meshes'}/"))
    for path in (moved, by_file):
        robot = parse_urdf(path)
        assert sum(g.kind == "mesh" for link in robot.links.values() for g in link.collisions + link.visuals) > 30
        assert missing_meshes(robot) == [], path


@pytest.mark.parametrize("degrees, naming", [(90, ""), (180, ""), (45, "numbered")])
def test_a_g1_whose_root_frame_faces_elsewhere_bakes_the_same(degrees, naming, hop240, g1_bake, tmp_path):
    """The G1's pelvis frame turned about the vertical (the URDF faces +y, -x or 45 degrees, not
    REP 103's +x; at 45 degrees with no name saying what a part is): auto-map took the toe from the
    side of the foot (legs 11 % short), planting split the feet's turns about other axes and the
    joints landed up to 1.3 rad apart. The robot is now solved facing where its body does
    (core.retarget.facing): the G1's joints, its feet where the G1's stand, and the root pose given
    back in the URDF's own pelvis frame (measured 2026-12-02: within 1e-10 rad)."""
    from scipy.spatial.transform import Rotation

    from core.model.transforms import pose_matrices
    from core.retarget.facing import solved_robot
    from tests import robot_variants as RV

    g1, mapping0, base = g1_bake
    turn = Rotation.from_rotvec([0.0, 0.0, np.radians(degrees)]).as_matrix()
    robot = RV.frames_turned(g1.robot, {g1.robot.root_link: turn})
    names = {n: n for n in list(robot.links) + [j.name for j in robot.joints]}
    if naming:
        robot = RV.numbered(robot)
        names = {n: f"link{k}" for k, n in enumerate(g1.robot.links)}
        names.update({j.name: f"joint{k}" for k, j in enumerate(g1.robot.joints)})
    tree, mapping, result = _variant_bake(robot, hop240, tmp_path)
    assert solved_robot(g1, "pelvis") == (g1, None)  # the G1 faces +x: its own frame, the same bits
    seen = solved_robot(tree, mapping.robot_root)[0]  # seen facing +x, it is the G1
    assert np.abs(seen.zero_pose()[[seen.link_index(names[n]) for n in g1.link_names]] - g1.zero_pose()).max() < 1e-6
    assert _robot_side(mapping) == [(c, names[b], [names[t] for t in tips]) for c, b, tips in _robot_side(mapping0)]
    columns = [tree.joint_names.index(names[n]) for n in g1.joint_names]
    assert np.abs(result.q[:, columns] - base.q).max() < 1e-6
    root, base_root = (pose_matrices(r.root_rotation, r.root_position) for r in (result, base))
    assert np.abs(root[:, :3, 3] - base_root[:, :3, 3]).max() < 1e-6  # the pelvis stands where the G1's does
    assert np.abs(root[:, :3, :3] @ turn.T - base_root[:, :3, :3]).max() < 1e-6  # its frame turned as the URDF's
    for foot in ("left_ankle_roll_link", "right_ankle_roll_link"):
        here = tree.link_transform(result.q, tree.link_index(names[foot]), root)
        there = g1.link_transform(base.q, g1.link_index(foot), base_root)
        assert np.abs(here - there).max() < 1e-6, foot
    for key in ("contact_preserved_pct", "limit_violations", "root_scale"):
        assert result.report[key] == pytest.approx(base.report[key], abs=1e-9), key


def _based(robot, rotation: np.ndarray):
    """The robot hung by a fixed joint from a new root link `base` whose frame is `rotation`'s
    inverse away from the robot's root (a world or base frame a URDF adds above the pelvis)."""
    from core.model.urdf import Joint, Link

    origin = np.eye(4)
    origin[:3, :3] = rotation
    links = dict(robot.links)
    links["base"] = Link("base", [], [], None)
    joint = Joint("base_joint", "fixed", "base", robot.root_link, origin, np.array([1.0, 0.0, 0.0]))
    return dataclasses.replace(robot, links=links, joints=[joint] + list(robot.joints), root_link="base")


H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
Y_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # a frame @ Y_UP has its +y where z was


@pytest.mark.parametrize("robot, where", [("g1", "root"), ("g1", "base"), ("h1", "root")])
def test_a_humanoid_written_y_up_is_read_standing(robot, where, hop240, g1_bake, tmp_path):
    """A URDF written Y-up (example-robot-data's human.urdf: its legs hang along -y) was read lying
    on its back: the G1 mapped a leg from the waist to a wrist (joints 2.9 rad apart, limbs 15 deg
    off; the H1 3.7 rad, 36 deg). The robot's up is now found from its body (the legs hang from the
    hips, the shoulders rise above them) and the robot stood up that way, said in the warnings:
    the same joints as the robot written Z-up, the root pose given back in the URDF's own frame."""
    from core.model.transforms import pose_matrices
    from tests import robot_variants as RV

    if robot == "g1":
        tree0, mapping0, base = g1_bake
    else:
        tree0 = KinematicTree(parse_urdf(H1))
        mapping0 = auto_map(hop240, tree0)
        base = retarget(hop240, tree0, mapping0, contacts="auto")
    urdf = tree0.robot
    variant = RV.frames_turned(urdf, {urdf.root_link: Y_UP}) if where == "root" else _based(urdf, Y_UP.T)
    tree, mapping, result = _variant_bake(variant, hop240, tmp_path)
    assert _robot_side(mapping) == _robot_side(mapping0)
    frame = urdf.root_link if where == "root" else "base"
    assert any(f"stands along +y of {frame}'s frame" in w for w in result.report["warnings"])
    columns = [tree.joint_names.index(n) for n in tree0.joint_names]
    assert np.abs(result.q[:, columns] - base.q).max() < 1e-6
    assert abs(result.report["limb_direction_error_deg"] - base.report["limb_direction_error_deg"]) < 1e-6
    root, base_root = (pose_matrices(r.root_rotation, r.root_position) for r in (result, base))
    if where == "root":
        assert np.abs(root[:, :3, 3] - base_root[:, :3, 3]).max() < 1e-6
        assert np.abs(root[:, :3, :3] @ Y_UP.T - base_root[:, :3, :3]).max() < 1e-6  # the URDF's frame, Y-up
    for foot in ("left_ankle_roll_link", "right_ankle_roll_link") if robot == "g1" else ("left_ankle_link",):
        here = tree.link_transform(result.q, tree.link_index(foot), root)
        there = tree0.link_transform(base.q, tree0.link_index(foot), base_root)
        assert np.abs(here[:, :3, 3] - there[:, :3, 3]).max() < 1e-6, foot


def test_arms_and_a_humanoid_lying_otherwise_keep_their_frames(hop, tmp_path):
    """Only a body that reads as a standing humanoid along one of its root frame's axes is stood up:
    the G1, the H1 and simple_humanoid written lying on either side, on their faces or upside down are
    stood up along their own up; arms and manipulators written so keep their frames (measured too on
    example-robot-data 6.0.0's 69 URDFs turned so, 2026-12-03: every humanoid stood up, nothing else
    turned); the simple humanoid written with +y up (human.urdf's way) gets the same chains as written
    Z-up."""
    from scipy.spatial.transform import Rotation

    from core.retarget.body_parts import upright_turn
    from tests import robot_variants as RV

    data = ROOT / "tests" / "data" / "robots"
    turns = [Rotation.from_rotvec(v).as_matrix() for v in ([np.pi / 2, 0, 0], [0, -np.pi / 2, 0], [np.pi, 0, 0])]
    for path in (G1, H1, SIMPLE, data / "ur5_robot.urdf", data / "franka_panda.urdf", data / "kinova.urdf",
                 data / "baxter.urdf"):
        urdf = parse_urdf(path)
        assert upright_turn(KinematicTree(urdf)) is None, path.name
        humanoid = path in (G1, H1, SIMPLE)
        for turn in turns:
            up = upright_turn(KinematicTree(RV.frames_turned(urdf, {urdf.root_link: turn})))
            if humanoid:
                assert np.allclose(up[:, 2], turn.T[:, 2], atol=1e-9), path.name  # the body's up, in its frame
            else:
                assert up is None, path.name
    simple = parse_urdf(SIMPLE)
    turned = KinematicTree(parse_urdf(RV.write_urdf(RV.frames_turned(simple, {simple.root_link: Y_UP}),
                                                    tmp_path / "simple_y_up.urdf")))
    assert np.allclose(upright_turn(turned)[:, 2], [0.0, 1.0, 0.0])
    assert _robot_side(auto_map(hop, turned)) == _robot_side(auto_map(hop, KinematicTree(simple)))


def test_a_body_reaching_far_under_its_link_is_kept_above_the_ground(hop240, g1_bake, tmp_path):
    """A box hung 0.85 m under the G1's pelvis (a stand, a tail, a long collision shape): bodies
    were only checked against the ground when their link's origin came within 0.6 m of it, so the
    box sank up to 21 cm into the floor in the hop with nothing said. The check now follows each body's own reach
    (core.feet.geometry.Bodies.reach): the robot is held up on the box, its feet as high as it."""
    from core.feet.geometry import body_points
    from core.model.transforms import pose_matrices
    from core.model.urdf import Geometry

    g1, _, base = g1_bake
    hung = np.eye(4)
    hung[2, 3] = -0.85
    pelvis = g1.robot.links["pelvis"]
    box = Geometry("box", hung, size=np.array([0.1, 0.1, 0.1]))
    robot = dataclasses.replace(g1.robot, links={**g1.robot.links, "pelvis": dataclasses.replace(
        pelvis, collisions=list(pelvis.collisions) + [box])})
    tree, _, result = _variant_bake(robot, hop240, tmp_path)
    root = pose_matrices(result.root_rotation, result.root_position)
    link = tree.link_index("pelvis")
    lowest = body_points(tree, link).lowest(tree.link_transform(result.q, link, root))
    assert lowest.min() > -0.01  # the planted feet may press the box a few millimetres in
    base_root = pose_matrices(base.root_rotation, base.root_position)
    below = body_points(g1, link).lowest(g1.link_transform(base.q, link, base_root)) - 0.85 - 0.05
    assert below.min() < -0.1  # the G1's own pelvis, carrying that box, would have had it 10+ cm under


def test_arms_jointed_at_one_point_start_at_their_shoulders(hop240, g1_bake, tmp_path):
    """Clavicles jointed at the sternum, both at one point (example-robot-data's human.urdf): both arms,
    and the spine's two tips, started there, leaving no shoulder line to turn the torso by (human.urdf's
    walk: torso 90 degrees off, limbs 5.2 deg). The arms now start where their joints stand apart, and the
    spine reaches them through the clavicles: the G1 given such clavicles maps as the G1 and bakes its
    limbs and torso as the G1's (measured 2026-12-03: limbs 0.757 / 0.760 deg, torso 0.45 / 0.35 deg). Both
    without avoidance: the clavicles are joints the G1 lacks, which a room made turns (up to 0.07 rad)."""
    from core.model.urdf import Joint, Link
    from core.model.transforms import invert_transform

    g1, mapping0, _ = g1_bake
    base = retarget(hop240, g1, mapping0.with_settings(avoid_self_collision=False), contacts="auto")
    sternum = np.eye(4)
    sternum[:3, 3] = [0.0, 0.0, 0.25]
    links, joints = dict(g1.robot.links), []
    for joint in g1.robot.joints:
        if joint.name.endswith("shoulder_pitch_joint"):
            side = joint.name.split("_")[0]
            links[f"{side}_clavicle"] = Link(f"{side}_clavicle", [], [], None)
            joints.append(Joint(f"{side}_clavicle_joint", "revolute", "torso_link", f"{side}_clavicle", sternum.copy(),
                                np.array([1.0, 0.0, 0.0]), -0.5, 0.5, 10.0, 10.0))
            joint = dataclasses.replace(joint, parent=f"{side}_clavicle", origin=invert_transform(sternum) @ joint.origin)
        joints.append(joint)
    tree, mapping, result = _variant_bake(dataclasses.replace(g1.robot, links=links, joints=joints), hop240, tmp_path,
                                          avoid_self_collision=False)
    assert _robot_side(mapping) == _robot_side(mapping0)
    assert any("left_clavicle, right_clavicle" in w for w in result.report["warnings"])
    for key, within in (("limb_direction_error_deg", 0.05), ("torso_orientation_error_deg", 0.5)):
        assert abs(result.report[key] - base.report[key]) < within, key
