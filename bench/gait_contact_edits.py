#!/usr/bin/env python3
"""The G1 walk's gait with its contacts edited in memory (issue 12): a contact's first frames
taken out (a later touch-down, as another detector or clip gives), or its last frames (an earlier
lift-off). The gait must not hinge on one contact's first frames.

    .venv/bin/python bench/gait_contact_edits.py [--robot g1]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core.balance.gait import generate_gait  # noqa: E402
from core.feet.contacts import Contacts, detect_contacts, flags_to_intervals  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget.automap import auto_map  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
ROBOTS = {"g1": ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf",
          "h1": ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"}
EDITS = {"as detected": [], "left 262-281 up": [("left", 262, 282)],
         "left 262-281 and 369-371 up": [("left", 262, 282), ("left", 369, 372)]}


def edited(contacts: Contacts, edits: list[tuple[str, int, int]]) -> Contacts:
    """The contacts with frames [a, b) of a foot taken out (the foot up there)."""
    feet = {side: down.copy() for side, down in contacts.feet.items()}
    for side, a, b in edits:
        feet[side][a:b] = False
    return Contacts(feet, contacts.fps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--robot", default="g1", choices=sorted(ROBOTS))
    parser.add_argument("--edit", action="append", default=[], help="side:start:end (frames taken out)")
    args = parser.parse_args()
    walk = load_bvh(WALK).to_source_motion()
    tree = KinematicTree(parse_urdf(ROBOTS[args.robot]))
    mapping = auto_map(walk, tree)
    contacts = detect_contacts(walk, mapping)
    for side, down in contacts.feet.items():
        print(side, flags_to_intervals(down))
    edits = dict(EDITS)
    if args.edit:
        edits = {" ".join(args.edit): [(s, int(a), int(b)) for s, a, b in (e.split(":") for e in args.edit)]}
    for name, edit in edits.items():
        report = generate_gait(walk, tree, mapping, contacts=edited(contacts, edit)).report
        print(f"{name}: steps {report['steps']}, ZMP RMS {1000 * report['multibody_zmp_rms_error_m']:.1f} mm, "
              f"margin {1000 * report['min_support_margin_m']:+.1f} mm, outside {report['zmp_outside_support_pct']} %, "
              f"slide {1000 * report['stance_slide_m']:.2f} mm, tilt {report.get('stance_tilt_deg', float('nan')):.2f} deg")
        for w in report["warnings"]:
            print("   ", w[:200])


if __name__ == "__main__":
    main()
