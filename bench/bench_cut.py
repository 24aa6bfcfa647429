#!/usr/bin/env python3
"""A cut clip against the whole clip: the walk onto the G1 baked whole and cut (as `bake --frames A:B`).

For each cut it prints, on the frames further than 0.5, 1, 1.5 and 2 s from a cut end, the legs'
largest joint difference (rad) and how far the root is from a rigid horizontal shift of the whole
bake's (mm, horizontal / vertical). The cut is planted with the whole clip's contacts cut to its
frames ("sliced": what planting does with the same contacts) and with contacts detected on the
cut clip ("auto": what `bake --frames` does).

    .venv/bin/python bench/bench_cut.py
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.feet.contacts import detect_contacts  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget import auto_map, retarget  # noqa: E402

CUTS = [(400, 995), (0, 500), (200, 800), (100, 700)]
BEYOND_S = (0.5, 1.0, 1.5, 2.0)


def _far(start: int, end: int, frames: int, edge: int) -> np.ndarray:
    """Frames (of the cut) further than `edge` frames from an end that is a cut, not the clip's."""
    keep = np.ones(end - start, bool)
    if start > 0:
        keep[:edge] = False
    if end < frames:
        keep[len(keep) - edge:] = False
    return keep


def main() -> None:
    walk = clips.load(clips.WALK)
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    mapping = auto_map(walk, tree)
    contacts = detect_contacts(walk, mapping)
    whole = retarget(walk, tree, mapping, contacts=contacts)
    legs = [i for i, name in enumerate(whole.joint_names) if any(k in name for k in ("hip", "knee", "ankle"))]
    for start, end in CUTS:
        clip = walk.at_frames(np.arange(start, end))
        for how, given in (("sliced", contacts.sliced(start, end)), ("auto", "auto")):
            cut = retarget(clip, tree, mapping, contacts=given)
            cells = []
            for seconds in BEYOND_S:
                far = _far(start, end, walk.frames, int(round(seconds * walk.fps)))
                legs_rad = np.abs(whole.q[start:end][far][:, legs] - cut.q[far][:, legs]).max()
                moved = whole.root_position[start:end][far] - cut.root_position[far]
                shift = np.abs(moved[:, :2] - moved[:, :2].mean(axis=0)).max() * 1000
                cells.append(f">{seconds:g} s {legs_rad:.3f} rad {shift:.1f}/{np.abs(moved[:, 2]).max() * 1000:.1f} mm")
            print(f"{start}:{end} {how:6s} " + "; ".join(cells))


if __name__ == "__main__":
    main()
