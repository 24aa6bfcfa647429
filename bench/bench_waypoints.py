#!/usr/bin/env python3
"""Following a keyed tip path with the Panda, one core: what Follow Path with Robot and
`robot-retarget waypoints` cost, and what the mechanism modes buy.

The seven-via arc of the tests (9 keys, 0.5 s apart, 4 s at 100 Hz = 401 samples) per via
mode: median wall seconds of three follow_path calls (via orientations, branch choice,
tracking IK, report), samples per second, and from the report the largest turn between
consecutive via keys, the mean manipulability and torque cost (N^2 m^2) at the via keys and the
fastest joint over its limit. Also the via orientations alone (waypoint_orientations) for the mechanism modes.

    .venv/bin/python bench/bench_waypoints.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.waypoints import mechanism as mech  # noqa: E402
from core.waypoints.optimum import waypoint_orientations  # noqa: E402
from core.waypoints.path_optimum import turn_angles  # noqa: E402
from core.waypoints.trajectory import FollowSettings, PathKeys, follow_path  # noqa: E402

PANDA = ROOT / "tests" / "data" / "robots" / "franka_panda.urdf"
REPEATS = 3


def arc() -> PathKeys:
    angles = np.radians(np.linspace(-60, 60, 9))
    points = np.column_stack([0.5 * np.cos(angles), 0.5 * np.sin(angles), 0.35 + 0.1 * np.sin(np.linspace(0, np.pi, 9))])
    quats = np.full((9, 4), np.nan)
    quats[[0, -1]] = [0.0, 1.0, 0.0, 0.0]
    return PathKeys(np.arange(9) * 0.5, points, quats)


def timed(call):
    times, result = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    chain = mech.make_chain(KinematicTree(parse_urdf(PANDA)), "panda_hand_tcp")
    keys = arc()
    print(f"{'mode':<34} {'seconds':>8} {'samples/s':>10} {'max turn':>9} {'manip':>7} {'torque':>7} {'speed':>6}")
    for mode, objective in (("tangent", "manipulability"), ("bisector", "manipulability"),
                            ("mechanism", "manipulability"), ("tangent_mechanism", "manipulability"),
                            ("tangent_mechanism", "torque")):
        seconds, result = timed(lambda: follow_path(chain, keys, FollowSettings(mode=mode, objective=objective)))
        report = result.report
        vias = np.array([k["quaternion"] for k in report["keys"][1:-1]])
        turn = np.degrees(turn_angles(vias[1:], vias[:-1])).max()
        manip = np.mean([k["manipulability"] for k in report["keys"][1:-1]])
        torque = np.mean([k["torque_cost"] for k in report["keys"][1:-1]])
        print(f"{mode + ' (' + objective + ')':<34} {seconds:8.2f} {report['samples'] / seconds:10.0f} "
              f"{turn:8.1f}° {manip:7.3f} {torque:7.0f} {report['max_joint_speed_ratio']:6.0%}")
    for mode in ("mechanism", "tangent_mechanism"):
        seconds, _ = timed(lambda: waypoint_orientations(keys.position[0], keys.quaternion[0], keys.position[-1],
                                                         keys.quaternion[-1], keys.position[1:-1], mode=mode,
                                                         chain=chain, curve="spline"))
        print(f"via orientations alone, {mode:<18} {seconds:8.2f} s for 7 via points")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help says what it measures
    main()
