#!/usr/bin/env python3
"""The README demo: retarget the bundled CMU walk onto the bundled Unitree G1.

Runs the same command a pipeline would (tools/robot-retarget bake), then draws
out/demo.png: the captured actor and the robot side by side at a few moments,
and joint curves against their limits.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.motion.bake_csv import read_bake_csv  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.transforms import quat_to_matrix  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402

CLIP = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
ROBOT = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
OUT = ROOT / "out"
CURVES = ["left_hip_pitch_joint", "left_knee_joint", "left_ankle_pitch_joint",
          "right_shoulder_pitch_joint", "right_elbow_joint", "waist_yaw_joint"]


def bake() -> dict:
    OUT.mkdir(exist_ok=True)
    cmd = [str(ROOT / "tools" / "robot-retarget"), "bake", "--source", str(CLIP), "--robot", str(ROBOT),
           "--out", str(OUT / "demo.csv"), "--report", str(OUT / "demo_report.json"), "--overwrite"]
    print("$ " + " ".join(cmd[:1] + [Path(c).name if "/" in c else c for c in cmd[1:]]))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(proc.stderr.strip() or "robot-retarget bake failed")
    print(proc.stdout.strip().splitlines()[-2])
    return json.loads((OUT / "demo_report.json").read_text())


def robot_links(tree: KinematicTree, table, frames) -> np.ndarray:
    root = np.tile(np.eye(4), (len(frames), 1, 1))
    root[:, :3, :3] = quat_to_matrix(table.root_quaternion[frames])
    root[:, :3, 3] = table.root_position[frames]
    return tree.forward(table.q[frames], root)[:, :, :3, 3]


def draw_figures(ax, tree, links, motion, frames, forward) -> None:
    """Side view: actor (grey) beside the robot (blue), shifted sideways for clarity."""
    side = np.cross([0.0, 0.0, 1.0], forward)
    for k, f in enumerate(frames):
        offset = np.array([k * 1.6, 0.0])
        for i, p in enumerate(motion.parents):
            if p >= 0:
                seg = np.stack([motion.heads[f, p], motion.heads[f, i]])
                ax.plot(seg @ forward + offset[0] - 0.45, seg[:, 2], color="0.55", lw=2)
        for i, p in enumerate(tree.parent):
            if p >= 0:
                seg = links[k, [p, i]]
                ax.plot(seg @ forward + offset[0] + 0.45, seg[:, 2], color="tab:blue", lw=2)
        ax.text(offset[0], -0.12, f"{f / motion.fps:.2f} s", ha="center")
    del side
    ax.set_aspect("equal")
    ax.set_title("CMU walk (grey) and Unitree G1 (blue), side view")
    ax.axhline(0.0, color="0.8", lw=1)
    ax.axis("off")


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="Writes out/demo.csv, out/demo_report.json "
                            "and out/demo.png; takes no options.").parse_args()
    report = bake()
    table = read_bake_csv(OUT / "demo.csv")
    tree = KinematicTree(parse_urdf(ROBOT))
    motion = load_bvh(CLIP).to_source_motion()
    frames = np.linspace(150, len(table.q) - 150, 5).astype(int)
    links = robot_links(tree, table, frames)
    # Each figure is drawn around its own root so the poses sit side by side.
    travel = table.root_position[-1] - table.root_position[0]
    forward = np.array([travel[0], travel[1], 0.0]) / max(np.hypot(travel[0], travel[1]), 1e-9)
    motion.heads = motion.heads - (motion.heads[:, :1] * [1, 1, 0])
    links = links - (links[:, :1] * [1, 1, 0])
    fig = plt.figure(figsize=(13, 9))
    draw_figures(fig.add_subplot(2, 1, 1), tree, links, motion, frames, forward)
    for k, name in enumerate(CURVES):
        ax = fig.add_subplot(4, 3, 7 + k)
        j = tree.joint_names.index(name)
        ax.plot(table.time, table.q[:, j], color="tab:blue", lw=1.2)
        for limit in (tree.lower[j], tree.upper[j]):
            ax.axhline(limit, color="tab:red", ls="--", lw=0.8)
        ax.set_title(name.replace("_joint", ""), fontsize=9)
        ax.tick_params(labelsize=7)
        if k >= 3:
            ax.set_xlabel("time (s)", fontsize=8)
        if k % 3 == 0:
            ax.set_ylabel("angle (rad)", fontsize=8)
    limbs = ", ".join(f"{name.replace('_', ' ')} {v:.1f}°" for name, v in report["limb_direction_error_by_limb"].items())
    fig.suptitle(f"Robot Retarget demo: {report['frames']} frames, {report['limit_violations']} samples "
                 f"outside limits (red: joint limits)\nwhat a viewer sees: limbs {limbs} from the actor's; "
                 f"torso {report['torso_orientation_error_deg']:.1f}°", fontsize=9)
    fig.tight_layout()
    fig.savefig(OUT / "demo.png", dpi=110)
    print(f"wrote {OUT / 'demo.csv'}, {OUT / 'demo_report.json'} and {OUT / 'demo.png'}")


if __name__ == "__main__":
    main()
