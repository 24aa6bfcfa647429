"""Self-collision avoidance as the default (issue 17): does it hold on data other than the G1/H1 walk and hop?

Bakes each case with `avoid_self_collision` off and on (planted feet, as the command line), in one process, and prints per case: frames, whether
each bake ran (or its error), colliding % off/on, limbs (limb_direction_error_deg) off/on, CPU seconds off/on.
Cases: the bundled and test robots (H1, a URDF with few collision shapes, synthetic humanoids, arms), the G1
re-rooted at its torso, with other zero poses, scaled; short clips (1, 2, 5 frames), an upper-body clip,
NaN frames, a held (still) start, a clip at 120 Hz, another root mode.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/default_avoid_probe.py [--only NAME,...]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget.automap import auto_map  # noqa: E402
from core.retarget.pipeline import retarget  # noqa: E402
from tests import robot_variants as RV  # noqa: E402
from tests import variants as V  # noqa: E402

WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
ROBOTS = ROOT / "tests" / "data" / "robots"
SHORT = 240  # four seconds of the walk


def _frames(clip, stop, start=0):
    return dataclasses.replace(clip, motion=clip.motion[start:stop])


def _nan(clip):
    motion = clip.motion.copy()
    motion[50:53, 6:] = np.nan  # three frames of joint channels missing
    return dataclasses.replace(clip, motion=motion)


def _held(clip):
    """A second of the first frame held still, then the walk."""
    return dataclasses.replace(clip, motion=np.concatenate([np.repeat(clip.motion[:1], 120, axis=0), clip.motion]))


def cases(tmp: Path) -> dict:
    walk, hop = load_bvh(WALK), load_bvh(HOP)
    short = _frames(walk, SHORT)
    g1 = parse_urdf(G1)
    tree = lambda robot: KinematicTree(robot)  # noqa: E731
    g1_tree = tree(g1)
    return {
        "g1-walk240": (short, g1_tree, {}),
        "g1-walk-240-480": (_frames(walk, 2 * SHORT, SHORT), g1_tree, {}),
        "g1-hop240": (_frames(hop, SHORT), g1_tree, {}),
        "g1-walk-full": (walk, g1_tree, {}),
        "g1-hop-full": (hop, g1_tree, {}),
        "g1-hop-1f": (_frames(hop, 1), g1_tree, {}),
        "g1-hop-2f": (_frames(hop, 2), g1_tree, {}),
        "g1-hop-5f": (_frames(hop, 5), g1_tree, {}),
        "g1-upper-body": (V.without(short, {"LHipJoint", "RHipJoint"}), g1_tree, {}),
        "g1-nan-frames": (_nan(short), g1_tree, {}),
        "g1-held-start": (_frames(_held(walk), SHORT + 120), g1_tree, {}),
        "g1-120hz": (V.resampled(short, 120.0), g1_tree, {}),
        "g1-in-place": (short, g1_tree, {"root_mode": "in_place"}),
        "g1-fixed-root": (short, g1_tree, {"root_mode": "fixed"}),
        "g1-l1": (short, g1_tree, {"objective": "l1"}),
        "g1-torso-rooted": (short, tree(RV.rooted_at(g1, "torso_link")), {}),
        "g1-zero-shifted": (short, tree(RV.zero_shifted(g1, {"left_shoulder_roll_joint": 0.6,
                                                             "right_shoulder_roll_joint": -0.6,
                                                             "left_elbow_joint": 0.5})), {}),
        "g1-scaled-0.5": (short, tree(RV.scaled_robot(g1, 0.5)), {}),
        "g1-scaled-0.5-margin-5mm": (short, tree(RV.scaled_robot(g1, 0.5)), {"collision_margin": 0.005}),
        "g1-scaled-2": (short, tree(RV.scaled_robot(g1, 2.0)), {}),
        "g1-fixed-merged": (short, tree(RV.fixed_merged(g1)), {}),
        "h1-hop": (hop, tree(parse_urdf(ROBOTS / "unitree_h1_19dof.urdf")), {}),
        "simple-humanoid": (short, tree(parse_urdf(ROBOTS / "simple_humanoid.urdf")), {}),
        "synthetic-humanoid": (short, tree(RV.humanoid()), {}),
        "synthetic-torso-sideways": (short, tree(RV.humanoid(root="torso", arms="sideways", arm_end="elbow")), {}),
        "baxter": (short, tree(parse_urdf(ROBOTS / "baxter.urdf")), {}),
        "franka": (short, tree(parse_urdf(ROBOTS / "franka_panda.urdf")), {}),
        "ur5": (short, tree(parse_urdf(ROBOTS / "ur5_robot.urdf")), {}),
    }


def bake(clip, tree, options: dict, avoid: bool):
    motion = clip.to_source_motion()
    mapping = auto_map(motion, tree)
    mapping.settings = dataclasses.replace(mapping.settings, avoid_self_collision=avoid, **options)
    started = time.process_time()
    result = retarget(motion, tree, mapping, contacts="auto")  # as the command line bakes
    return result.report, time.process_time() - started


def _figure(report, key, fmt):
    value = report.get(key)
    return "-" if value is None else format(value, fmt)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated case names")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="avoid_probe_") as tmp:
        run(cases(Path(tmp)), args.only.split(",") if args.only else None)


def run(table: dict, wanted: list[str] | None) -> None:
    """Print one row per case; the variants' files live in the caller's temporary directory."""
    wanted = wanted or list(table)
    print(f"{'case':26s} {'frames':>6s} {'coll% off/on':>14s} {'limbs off/on':>13s} {'cpu s off/on':>13s}  notes")
    for name in wanted:
        clip, tree, options = table[name]
        row = {}
        for avoid in (False, True):
            try:
                row[avoid] = bake(clip, tree, options, avoid)
            except Exception as exc:  # a probe: report every failure and go on
                row[avoid] = exc
                traceback.print_exc(limit=4)
        if any(isinstance(r, Exception) for r in row.values()):
            print(f"{name:26s} " + "  ".join(f"{'on' if a else 'off'}: {type(r).__name__}: {r}" if isinstance(
                r, Exception) else f"{'on' if a else 'off'}: ok" for a, r in row.items()), flush=True)
            continue
        (off, t_off), (on, t_on) = row[False], row[True]
        notes = [w for w in on.get("warnings", []) if w not in off.get("warnings", [])]
        print(f"{name:26s} {len(clip.motion):6d} {_figure(off, 'self_collision_pct', '.1f'):>6s}/"
              f"{_figure(on, 'self_collision_pct', '.1f'):<7s} {_figure(off, 'limb_direction_error_deg', '.2f'):>6s}/"
              f"{_figure(on, 'limb_direction_error_deg', '.2f'):<6s} {t_off:6.2f}/{t_on:<6.2f} "
              f"avoided={on.get('self_collision_avoided')} {'; '.join(notes)[:200]}", flush=True)


if __name__ == "__main__":
    main()
