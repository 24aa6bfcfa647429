#!/usr/bin/env python3
"""The contacts' ground level on cut clips: what a cut moves, and how near the whole clips' contacts sit to an edge.

For the CMU walk and hop (the G1's auto-map), prints the heel and toe ground levels (leg lengths) that
core.feet.contacts detects on the whole clip and on cuts of it, and how many frames of each cut's contacts
differ from the whole clip's beyond 0.3 s of a cut (what tests/core/test_contacts.py
test_contacts_do_not_depend_on_where_the_clip_was_cut checks on the walk). Then, per clip, the whole
clip's contacts with the toe's or the heel's level moved by a few millimetres: the frames that change,
and where (a ground-level estimate must land inside the window where none do, on the whole clip and on
every cut, for cuts to agree without changing the whole clip's contacts).

    .venv/bin/python bench/contacts_ground.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.feet import contacts as detection  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map  # noqa: E402

CUTS = {"walk": [(0, 500), (200, 800), (100, 700), (400, 995)], "hop": [(0, 500), (300, 900), (600, 1102)]}
SHIFTS_LEG = [-0.005, -0.003, -0.002, -0.001, 0.001, 0.002, 0.003, 0.005]
EDGE_S = 0.3


def _detect(motion, mapping, shift: dict | None = None):
    """Contacts and the levels they used (leg lengths), the levels moved by `shift` {point: leg lengths}."""
    seen = {}
    original = detection._ground_levels

    def spy(tracks, *args):
        levels = original(tracks, *args)
        leg = float(np.mean([t.leg_length for t in tracks.values()]))
        levels = {p: v + (shift or {}).get(p, 0.0) * leg for p, v in levels.items()}
        seen.update({p: v / leg for p, v in levels.items()})
        return levels

    detection._ground_levels = spy
    try:
        return detection.detect_contacts(motion, mapping), seen
    finally:
        detection._ground_levels = original


def _off(a, b) -> int:
    return sum(int((a.feet[s] != b.feet[s]).sum()) for s in a.feet)


def main() -> None:
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    for name, path in (("walk", clips.WALK), ("hop", clips.HOP)):
        motion = clips.load(path)
        mapping = auto_map(motion, tree)
        whole, levels = _detect(motion, mapping)
        print(f"{name} ({motion.frames} frames): heel {levels['heel']:.4f}, toe {levels['toe']:.4f} leg lengths")
        edge = int(round(EDGE_S * motion.fps))
        for start, end in CUTS[name]:
            end = min(end, motion.frames)
            cut, at = _detect(motion.at_frames(np.arange(start, end)), mapping)
            far = slice(edge if start > 0 else 0, (end - start) - (edge if end < motion.frames else 0))
            off = sum(int((cut.feet[s][far] != whole.feet[s][start:end][far]).sum()) for s in whole.feet)
            print(f"  {f'{start}:{end}':<9} heel {at['heel']:.4f}, toe {at['toe']:.4f}: {off} frames off the whole clip")
        for point in ("toe", "heel"):
            row = []
            for shift in SHIFTS_LEG:
                moved, _ = _detect(motion, mapping, {point: shift})
                spans = {s: detection.flags_to_intervals(moved.feet[s] != whole.feet[s]) for s in whole.feet}
                where = " ".join(f"{s[0]}{a}-{b}" for s, v in spans.items() for a, b in v)
                row.append(f"{shift * 1000:+.0f}: {_off(moved, whole)}" + (f" ({where})" if where else ""))
            print(f"  {point} moved by (1e-3 leg lengths): " + "; ".join(row))


if __name__ == "__main__":
    main()
