#!/usr/bin/env python3
"""The G1's wrists baked from the walk at 120 fps and resampled to 60 fps (contacts off, whole clip), and
from its two halves baked apart: the largest wrist difference (rad) on shared frames, the frames > 0.1 rad,
and the default bake's limb_direction_error_deg (walk and hop, G1 and H1, auto contacts).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/wrist_rate.py [--fidelity]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402
from core.retarget.automap import automap_frames  # noqa: E402
from tests import variants  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
ROBOTS = {"g1": ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf",
          "h1": ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"}


def _mapped(motion, tree):
    return auto_map(motion.at_frames(automap_frames(0, motion.frames - 1).astype(int)), tree)


def wrists(tree: KinematicTree, a: np.ndarray, b: np.ndarray) -> str:
    cols = [k for k, n in enumerate(tree.joint_names) if "wrist" in n]
    d = np.abs(a[:, cols] - b[:, cols])
    worst = d.max(axis=0)
    k = int(worst.argmax())
    return (f"wrists max {worst.max():.3f} rad ({tree.joint_names[cols[k]]}), "
            f"{int((d > 0.1).any(axis=1).sum())} of {len(d)} frames > 0.1 rad")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fidelity", action="store_true")
    args = parser.parse_args()
    g1 = KinematicTree(parse_urdf(ROBOTS["g1"]))
    clip = load_bvh(WALK)
    motion = clip.to_source_motion()
    mapping = _mapped(motion, g1)
    t0 = time.process_time()
    whole = retarget(motion, g1, mapping, contacts="off", figures=False)
    with tempfile.TemporaryDirectory() as tmp:
        half_rate = load_bvh(variants.write_bvh(variants.resampled(clip, 60.0), Path(tmp) / "w60.bvh"))
    slow = retarget(half_rate.to_source_motion(), g1, mapping, contacts="off", figures=False)
    shared = min(len(slow.q), (len(whole.q) + 1) // 2)
    print("60 fps vs 120 fps:", wrists(g1, slow.q[:shared], whole.q[0:2 * shared:2]))
    half = len(whole.q) // 2
    edge = int(0.3 * motion.fps)
    for name, index in (("first half", np.arange(half)), ("second half", np.arange(half, len(whole.q)))):
        part = retarget(motion.at_frames(index), g1, mapping, contacts="off", figures=False)
        keep = slice(edge if index[0] else 0, len(index) - (edge if index[-1] < len(whole.q) - 1 else 0))
        print(f"{name} vs whole:", wrists(g1, part.q[keep], whole.q[index][keep]))
    print(f"cpu {time.process_time() - t0:.1f} s")
    if args.fidelity:
        for robot, path in ROBOTS.items():
            tree = KinematicTree(parse_urdf(path))
            for name, clip_path in (("walk", WALK), ("hop", HOP)):
                m = load_bvh(clip_path).to_source_motion()
                report = retarget(m, tree, auto_map(m, tree), contacts="auto").report
                print(f"{robot} {name}: limb_direction_error_deg {report['limb_direction_error_deg']:.4f}")


if __name__ == "__main__":
    main()
