#!/usr/bin/env python3
"""Does the bake of a frame depend on where or how its clip starts? The walk and hop onto the H1 and G1.

Each variant of a clip (started 1..9 frames later, ended 1..9 earlier, its halves, every 2nd frame at 60 Hz,
played backwards, played twice with the travel carried on) is baked and compared with the whole clip's bake
on the frames they share, further than 0.3 s from any end or seam: the largest |dq| on the limbs and on the
hands (wrist joints), the limbs' RMS, the root's largest distance (raw, and off a rigid shift of the path:
the ground and planting move a whole path rigidly) and the contact frames that differ.

Contacts: off (the solve and the filter), sliced (the whole clip's contacts detected once and cut to the
variant's frames: what `bake --frames` plants) or auto (detected on the variant: a file cut elsewhere).

    .venv/bin/python bench/start_sweep.py [off|sliced|auto] [h1|g1] [walk|hop]
"""
from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.feet.contacts import Contacts, detect_contacts  # noqa: E402
from core.feet.report import resolve_contacts  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.retarget.automap import auto_map, automap_frames  # noqa: E402
from core.retarget.pipeline import retarget  # noqa: E402

EDGE_S = 0.3


def variants(frames: int):
    """(name, frame index into the clip, frame-rate divisor, frames where the variant has a cut or seam)."""
    for k in range(1, 10):
        yield f"from {k}", np.arange(k, frames), 1, [0]
    for k in (1, 3, 5, 9):
        yield f"end -{k}", np.arange(frames - k), 1, [frames - k]
    half = frames // 2
    yield "1st half", np.arange(half), 1, [half]
    yield "2nd half", np.arange(half, frames), 1, [0]
    yield "60 Hz", np.arange(0, frames, 2), 2, []
    yield "reversed", np.arange(frames)[::-1], 1, []
    yield "twice", np.r_[np.arange(frames), np.arange(frames)], 1, [frames]


def inner(frames: int, fps: float, cuts: list[int]) -> np.ndarray:
    edge, keep = int(EDGE_S * fps), np.zeros(frames, bool)
    keep[edge:frames - edge] = True
    for cut in cuts:
        keep[max(0, cut - edge):cut + edge] = False
    return keep


def _rigid(offset: np.ndarray) -> float:
    """Largest distance (m) of root offsets (F, 3) from their median: off a rigid shift of the path (a
    copy played twice is carried on by its travel, so each copy is shifted on its own)."""
    return float(np.linalg.norm(offset - np.median(offset, axis=0), axis=1).max())


def clip_variant(motion, name: str, index: np.ndarray, divisor: int):
    """The variant's clip: 'twice' carries the travel on (bench/clips.back_to_back), not a jump back."""
    if name == "twice":
        return clips.back_to_back([motion], 2 * motion.frames, motion.name)
    out = motion.at_frames(index)
    return replace(out, fps=motion.fps / divisor) if divisor > 1 else out


def sweep(mode: str, robot: str, clip: str) -> None:
    motion = clips.load(clips.WALK if clip == "walk" else clips.HOP)
    tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
    mapping = auto_map(motion.at_frames(automap_frames(0, motion.frames - 1).astype(int)), tree)
    own = detect_contacts(motion, mapping)
    hands = [k for k, name in enumerate(tree.joint_names) if "wrist" in name]
    limbs = [k for k in range(tree.dof) if k not in hands]

    def bake(m, index):
        contacts = mode if mode != "sliced" else Contacts({s: f[index] for s, f in own.feet.items()}, m.fps)
        flags = resolve_contacts(contacts, m, mapping, []) if mode != "off" else None
        return retarget(m, tree, mapping, contacts=contacts, figures=False), flags

    whole, whole_flags = bake(motion, np.arange(motion.frames))
    print(f"\n{robot} {clip}, contacts {mode}: max |dq| rad limbs (joint, s) / hands, limbs RMS, root mm raw / "
          "rigid, contact frames off")
    for name, index, divisor, cuts in variants(motion.frames):
        m = clip_variant(motion, name, index, divisor)
        result, flags = bake(m, index)
        keep = inner(len(index), m.fps, cuts)
        dq = np.abs(result.q - whole.q[index])[keep]
        worst = int(dq[:, limbs].max(axis=0).argmax())
        at = np.flatnonzero(keep)[dq[:, limbs[worst]].argmax()] / m.fps
        root = result.root_position - whole.root_position[index]
        parts = np.split(np.arange(len(index)), cuts)
        rigid = max(_rigid(root[part][keep[part]]) for part in parts if keep[part].any())
        root = root[keep]
        off = -1 if flags is None else sum(int((flags.feet[s] != whole_flags.feet[s][index])[keep].sum())
                                           for s in flags.feet)
        print(f"  {name:9s} {dq[:, limbs].max():6.3f} ({tree.joint_names[limbs[worst]][:22]:22s} {at:5.2f}) / "
              f"{dq[:, hands].max() if hands else 0.0:6.3f}  {np.sqrt((dq[:, limbs] ** 2).mean()):6.4f}  "
              f"{1000 * np.linalg.norm(root, axis=1).max():7.1f} / {1000 * rigid:6.1f}  {off:4d}", flush=True)


def main(argv: list[str]) -> None:
    modes = [a for a in argv if a in ("off", "sliced", "auto")] or ["off", "sliced", "auto"]
    robots = [a for a in argv if a in clips.ROBOTS] or list(clips.ROBOTS)
    names = [a for a in argv if a in ("walk", "hop")] or ["walk", "hop"]
    for mode in modes:
        for robot in robots:
            for clip in names:
                sweep(mode, robot, clip)


if __name__ == "__main__":
    main(sys.argv[1:])
