"""Issue 15 in core: a keyed tip path on the Panda as a joint trajectory, checked by FK of the
output against the keys and the curve, the URDF limits and velocities, and the report."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.model.kinematics import KinematicTree
from core.model.transforms import matrix_to_quat, quat_to_matrix
from core.model.urdf import parse_urdf
from core.waypoints import mechanism as mech
from core.waypoints.curves import key_curve
from core.waypoints.path_optimum import turn_angles
from core.waypoints.trajectory import FollowSettings, PathError, PathKeys, follow_path, path_keys, read_path

PANDA = Path(__file__).resolve().parents[1] / "data" / "robots" / "franka_panda.urdf"
DOWN = np.array([0.0, 1.0, 0.0, 0.0])
RATE = 100.0
KEY_GAP = 0.5  # s between keys
REPORT_KEYS = {"keys", "max_position_error_m", "max_orientation_error_deg", "max_joint_speed_ratio",
               "limit_violations", "unreachable", "warnings"}
KEY_FIELDS = {"time_s", "quaternion", "tangent_angle_deg", "manipulability", "torque_cost", "position_error_m",
              "orientation_error_deg"}


def arc_keys(gap: float = KEY_GAP, far: int | None = None) -> PathKeys:
    """The seven-via Panda arc keyed every `gap` seconds (key `far` moved out of reach)."""
    angles = np.radians(np.linspace(-60, 60, 9))
    points = np.column_stack([0.5 * np.cos(angles), 0.5 * np.sin(angles),
                              0.35 + 0.1 * np.sin(np.linspace(0, np.pi, 9))])
    if far is not None:
        points[far] = [1.5, 0.0, 0.5]
    quats = np.full((9, 4), np.nan)
    quats[[0, -1]] = DOWN
    return PathKeys(np.arange(9) * gap, points, quats)


@pytest.fixture(scope="module")
def tree():
    return KinematicTree(parse_urdf(PANDA))


@pytest.fixture(scope="module")
def panda(tree):
    return mech.make_chain(tree, "panda_hand_tcp")


def _tip(tree, q):
    frames = tree.forward(q)[:, tree.link_index("panda_hand_tcp")]
    return frames[:, :3, 3], matrix_to_quat(frames[:, :3, :3])


@pytest.mark.parametrize("mode,objective", [("tangent", "manipulability"), ("tangent_mechanism", "manipulability"),
                                            ("tangent_mechanism", "torque"), ("mechanism", "manipulability")])
def test_the_arm_follows_the_path(tree, panda, mode, objective):
    keys = arc_keys()
    result = follow_path(panda, keys, FollowSettings(rate_hz=RATE, mode=mode, objective=objective))
    n = len(result.time_s)
    assert np.allclose(result.time_s, np.arange(n) / RATE) and n == 401
    position, quat = _tip(tree, result.q)
    at_keys = np.round(keys.time_s * RATE).astype(int)
    assert np.linalg.norm(position[at_keys] - keys.position, axis=1).max() < 1e-3
    assert np.degrees(turn_angles(quat[at_keys], result.key_quaternion)).max() < 0.5
    assert np.degrees(turn_angles(result.key_quaternion[[0, -1]], DOWN)).max() < 1e-9  # keyed ends as given
    curve = key_curve(keys.position, keys.time_s, "spline").position(result.time_s)
    assert np.linalg.norm(position - curve, axis=1).max() < 5e-3
    assert np.all(result.q >= tree.lower - 1e-12) and np.all(result.q <= tree.upper + 1e-12)
    speed = np.abs(np.diff(result.q, axis=0)) * RATE
    assert np.all(speed <= tree.velocity)
    report = result.report
    assert REPORT_KEYS <= set(report) and all(set(k) == KEY_FIELDS for k in report["keys"])
    assert report["limit_violations"] == 0 and report["unreachable"] == [] and report["too_fast"] == []
    assert report["max_joint_speed_ratio"] == pytest.approx(np.max(speed[:, :7] / tree.velocity[:7]))
    assert report["max_position_error_m"] < 1e-3 and report["max_orientation_error_deg"] < 0.5
    assert json.loads(json.dumps(report)) == report  # plain JSON
    manip = np.array([k["manipulability"] for k in report["keys"]])
    jac = mech.jacobian(panda, mech.chain_frames(panda, result.q[at_keys][:, :7]))
    assert np.allclose(manip, mech.manipulability(jac), rtol=0.02)  # the key's own IK: close to the sample's


def test_tangent_mechanism_in_the_trajectory_keeps_the_tangent(panda):
    full = lambda r: np.where((r > 0) & (r < 1), 1.0, 0.0)  # noqa: E731  u = 1 at every via
    report = follow_path(panda, arc_keys(), FollowSettings(mode="tangent_mechanism", blend=full)).report
    vias = report["keys"][1:-1]
    assert max(k["tangent_angle_deg"] for k in vias) < 0.5
    plain = follow_path(panda, arc_keys(), FollowSettings(mode="tangent", blend=full)).report["keys"][1:-1]
    assert sum(k["manipulability"] for k in vias) > sum(k["manipulability"] for k in plain)


def test_a_key_too_fast_is_named(panda, tree):
    keys = arc_keys(gap=0.05)  # 12 degrees of arc in 50 ms
    result = follow_path(panda, keys, FollowSettings(rate_hz=200.0))
    report = result.report
    assert report["max_joint_speed_ratio"] > 1.0 and report["too_fast"]
    worst = max(report["too_fast"], key=lambda s: s["speed"] / s["limit"])
    assert worst["speed"] / worst["limit"] == pytest.approx(report["max_joint_speed_ratio"])
    assert worst["to_key"] == worst["from_key"] + 1
    assert keys.time_s[worst["from_key"]] <= worst["time_s"] <= keys.time_s[worst["to_key"]] + 1e-9
    assert any(f"key {worst['to_key']} is too fast" in w and worst["joint"] in w for w in report["warnings"])


def test_unreachable_keys_are_listed_with_their_time(panda):
    keys = arc_keys(far=4)
    report = follow_path(panda, keys, FollowSettings(mode="tangent")).report
    assert report["unreachable"] and min(abs(t - keys.time_s[4]) for t in report["unreachable"]) < 1e-9
    assert any("key 4 (time 2 s)" in w and "cannot hold" in w for w in report["warnings"])
    assert 0.9 < report["reach_m"] < 1.0  # the Panda: 0.855 m to the flange, 0.1 m more to the tool centre
    shoulder = np.array([0.0, 0.0, 0.333])  # the first joint's origin, where the reach is measured from
    assert report["farthest_key_m"] == pytest.approx(np.linalg.norm(keys.position[4] - shoulder))
    assert any(f"the arm reaches {report['reach_m']:.2f} m" in w for w in report["warnings"])
    assert report["keys"][4]["position_error_m"] > 0.3
    assert report["limit_violations"] == 0  # out of reach, still inside the limits


def test_a_base_link_other_than_the_root(tree):
    keys = arc_keys()
    chain = mech.make_chain(tree, "panda_hand_tcp", "panda_link1")
    base = mech.base_pose(chain)
    inverse = np.linalg.inv(base)
    local = PathKeys(keys.time_s, keys.position @ inverse[:3, :3].T + inverse[:3, 3],
                     np.where(np.isnan(keys.quaternion), np.nan,
                              np.nan_to_num(keys.quaternion) @ np.diag([1, 1, 1, 1.0])), "local")
    local.quaternion[[0, -1]] = matrix_to_quat(inverse[:3, :3] @ quat_to_matrix(DOWN))
    result = follow_path(chain, local, FollowSettings())
    assert chain.columns.tolist() == [1, 2, 3, 4, 5, 6]  # joint 1 is above the base: held at rest
    assert np.allclose(result.q[:, 0], chain.rest_q[0])
    assert np.allclose(result.base_position, base[:3, 3]) and base[2, 3] == pytest.approx(0.333)
    position, _ = _tip(tree, result.q)  # in the root frame
    at_keys = np.round(keys.time_s * RATE).astype(int)
    assert np.linalg.norm(position[at_keys] - keys.position, axis=1).max() < 1e-3
    assert np.allclose(result.target_position[at_keys], local.position)


def test_path_files_and_their_errors(tmp_path):
    keys = arc_keys()
    data = {"format": "robot_retarget.path", "version": 1,
            "keys": [{"time_s": float(t), "position": p.tolist(), **({"quaternion": q.tolist()} if np.all(np.isfinite(q)) else {})}
                     for t, p, q in zip(keys.time_s, keys.position, keys.quaternion)]}
    path = tmp_path / "arc.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    read = read_path(path)
    assert np.array_equal(read.time_s, keys.time_s) and np.allclose(read.position, keys.position)
    assert np.isnan(read.quaternion[3]).all() and np.allclose(read.quaternion[0], DOWN)
    cases = [
        (dict(data, format="other"), "robot_retarget.path"),
        (dict(data, version=2), "version 2"),
        (dict(data, keys=data["keys"][:1]), "2 or more keys"),
        (dict(data, keys=[*data["keys"][:3], {"time_s": 2.0, "position": [0, 1]}]), "key 3: position"),
        (dict(data, keys=[*data["keys"][:2], dict(data["keys"][2], time_s=0.2)]), "key 2: time_s 0.2"),
        (dict(data, keys=[{k: v for k, v in data["keys"][0].items() if k != "quaternion"}, *data["keys"][1:]]),
         "key 0: the first key needs a quaternion"),
        (dict(data, keys=[*data["keys"][:2], dict(data["keys"][2], quaternion=[0, 0, 0, 0])]), "key 2: quaternion"),
        # a via's typo'd quaternion was dropped (the via took the mode's orientation), a typo'd "keys" was none
        (dict(data, keys=[*data["keys"][:3], dict(data["keys"][3], quaternoin=DOWN.tolist()), *data["keys"][4:]]),
         r"key 3: unknown field\(s\) \['quaternoin'\] \(known: time_s, position, quaternion\)"),
        ({**{k: v for k, v in data.items() if k != "keys"}, "kyes": data["keys"]}, r"unknown field\(s\) \['kyes'\]"),
    ]
    for bad, words in cases:
        with pytest.raises(PathError, match=words):
            path_keys(bad, "arc.json")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(PathError, match="broken.json: not a JSON file"):
        read_path(tmp_path / "broken.json")
    with pytest.raises(PathError, match="missing.json: path file not found"):
        read_path(tmp_path / "missing.json")
    with pytest.raises(PathError, match="rate"):
        follow_path(mech.make_chain(KinematicTree(parse_urdf(PANDA)), "panda_hand_tcp"), keys,
                    FollowSettings(rate_hz=0.0))


def test_keys_between_samples_are_named(panda):
    keys = arc_keys()
    shifted = PathKeys(keys.time_s + np.r_[0.0, 0.003, np.zeros(7)], keys.position, keys.quaternion)
    report = follow_path(panda, shifted, FollowSettings(rate_hz=RATE)).report
    between = [w for w in report["warnings"] if "falls between two samples" in w]
    assert len(between) == 1 and "key 1 (time 0.503 s)" in between[0]
    assert report["keys"][1]["position_error_m"] < 1e-3  # solved at its own time


def test_a_keyed_via_orientation_is_held_as_keyed(tree, panda):
    keys = arc_keys()
    quats = keys.quaternion.copy()
    quats[4] = [0.0, 2.0, 0.3, 0.0]  # not unit: read as its direction
    result = follow_path(panda, PathKeys(keys.time_s, keys.position, quats), FollowSettings(mode="mechanism"))
    unit = quats[4] / np.linalg.norm(quats[4])
    assert np.degrees(turn_angles(result.key_quaternion[4], unit)) < 1e-9
    _, held = _tip(tree, result.q[[int(round(keys.time_s[4] * RATE))]])
    assert np.degrees(turn_angles(held[0], unit)) < 0.5
    with pytest.raises(PathError, match="key 4: quaternion must not be all zero"):
        PathKeys(keys.time_s, keys.position, np.where(np.arange(9)[:, None] == 4, 0.0, keys.quaternion))


def test_the_order_a_urdf_lists_its_joints_in_does_not_move_the_arm(tmp_path):
    """The Panda's URDF with its joints and links listed shuffled (tests/robot_variants.reordered):
    the mechanism modes drew their random IK starts per q column, which follow the file's order, so
    the shuffled arm got other starts and held the arc's vias otherwise, its joints 0.22 rad from the
    Panda's (first via's manipulability 0.092 against 0.100). Drawn joint by joint from the base they
    are the same starts, and the trajectory is the Panda's to rounding."""
    from tests.robot_variants import reordered, write_urdf

    shuffled = KinematicTree(parse_urdf(write_urdf(reordered(parse_urdf(PANDA)), tmp_path / "panda_shuffled.urdf")))
    panda = KinematicTree(parse_urdf(PANDA))
    assert shuffled.joint_names != panda.joint_names and sorted(shuffled.joint_names) == sorted(panda.joint_names)
    settings = FollowSettings(rate_hz=50.0, mode="tangent_mechanism")
    results = [follow_path(mech.make_chain(tree, "panda_hand_tcp"), arc_keys(), settings) for tree in (panda, shuffled)]
    columns = [results[1].joint_names.index(name) for name in results[0].joint_names]
    np.testing.assert_allclose(results[1].q[:, columns], results[0].q, atol=1e-9)
    for a, b in zip(results[0].report["keys"], results[1].report["keys"]):
        assert a["manipulability"] == pytest.approx(b["manipulability"], rel=1e-9)
