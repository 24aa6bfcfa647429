#!/usr/bin/env python3
"""What a viewer sees, with the default settings (auto-map, planted feet): limbs and torso.

For the bundled walk and hop onto the G1 and the H1, prints the report's
limb_direction_error_deg (mean of the two legs and two arms, each hip-to-ankle or
shoulder-to-wrist direction compared in its body's heading frame),
limb_direction_error_by_limb, torso_orientation_error_deg and max_speed_ratio (1.0:
some joint at its URDF velocity limit; above it would be a flip). Then the same walk
re-rigged (tests/variants.py: other rest poses, Z-up, centimetres, six naming
conventions, extra bones) and onto re-described G1s (re-rooted at the torso, T-pose
shoulders): the RMS of the joint angles against the original's bake.

    .venv/bin/python bench/bench_fidelity.py [--skip-variants]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402
from tests import robot_variants, variants  # noqa: E402

ARMS = {"left": ["LeftShoulder", "LeftElbow", "LeftWrist"], "right": ["RightShoulder", "RightElbow", "RightWrist"]}
SIDEWAYS = {"left_shoulder_roll_joint": np.pi / 2, "right_shoulder_roll_joint": -np.pi / 2}


def viewer_line(name: str, report: dict) -> str:
    limbs = ", ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in report["limb_direction_error_by_limb"].items())
    return (f"{name:<16} limbs {report['limb_direction_error_deg']:.2f} deg ({limbs}); torso "
            f"{report['torso_orientation_error_deg']:.2f} deg; max speed ratio {report['max_speed_ratio']:.2f}; "
            f"confidence {report['automap_confidence']:.2f}")


def rms_deg(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.degrees(np.sqrt(np.mean((a - b) ** 2))))


def variants_table(folder: Path) -> None:
    clip = load_bvh(clips.WALK)
    g1 = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))

    def bake(c, tree=g1, **read):
        motion = load_bvh(variants.write_bvh(c, folder / "variant.bvh")).to_source_motion(**read)
        return retarget(motion, tree, auto_map(motion, tree), contacts="auto")

    base = bake(clip)
    rigs = {"bones along X": variants.along_x(clip), "T-pose": variants.arms_posed(clip, ARMS, 0.0),
            "A-pose": variants.arms_posed(clip, ARMS, 45.0), "arms forward": variants.arms_posed(clip, ARMS, 0.0, 90.0),
            "extra bones": variants.cmu_extra_bones(clip), "root on the floor": variants.ground_root(clip)}
    rigs.update({f"{name} names": variants.renamed(clip, variants.convention_names(name)) for name in variants.CONVENTIONS})
    for name, rig in rigs.items():
        print(f"  {name:<18} {rms_deg(bake(rig).q, base.q):.4f} deg RMS")
    print(f"  {'Z-up':<18} {rms_deg(bake(variants.z_up(clip), up='Z').q, base.q):.4f} deg RMS")
    print(f"  {'centimetres':<18} {rms_deg(bake(variants.scaled(clip, 100.0), scale=0.01).q, base.q):.4f} deg RMS")
    shift = np.array([SIDEWAYS.get(n, 0.0) for n in g1.joint_names])
    robots = {"G1 rooted at torso": (robot_variants.rooted_at(g1.robot, "torso_link"), 0.0),
              "G1 T-pose arms": (robot_variants.zero_shifted(g1.robot, SIDEWAYS), shift)}
    for name, (robot, offset) in robots.items():
        tree = KinematicTree(parse_urdf(robot_variants.write_urdf(robot, folder / "variant.urdf")))
        print(f"  {name:<18} {rms_deg(bake(clip, tree).q + offset, base.q):.4f} deg RMS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-variants", action="store_true")
    args = parser.parse_args()
    for robot in ("g1", "h1"):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
            motion = clips.load(path)
            report = retarget(motion, tree, auto_map(motion, tree), contacts="auto").report
            print(viewer_line(f"{name} onto {robot}", report))
    if not args.skip_variants:
        print("the walk re-rigged, baked onto the G1 (joint angles against the original file's bake):")
        with tempfile.TemporaryDirectory() as folder:
            variants_table(Path(folder))


if __name__ == "__main__":
    main()
